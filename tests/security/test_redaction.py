"""Redaction gaps. Job logs were never redacted (page, API, websocket); export did not
redact stack traces; JSON held in a string field, ``password=…`` in free text and keys ``pwd``,
``auth``, ``credentials``, ``privateKey`` were missed."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from dashboard.live import fragments
from queues.keys import QueueRef
from queues.redact import Redactor
from queues.redis.jobs import read_job_live

pytestmark = pytest.mark.django_db

SECRETS = [
    "hunter2",
    "sk_live_inner",
    "pwd-value",
    "auth-value",
    "cred-value",
    "-----PRIVATE",
    "stack-token",
    "log-secret",
    "bearer-xyz",
]


def seed(r, prefix: str) -> None:
    base = f"{prefix}:leaky:"
    r.hset(base + "meta", "opts.maxLenEvents", 10000)
    data = {
        "inner": json.dumps({"apiKey": "sk_live_inner", "ok": "inner-visible"}),
        "pwd": "pwd-value",
        "auth": "auth-value",
        "credentials": {"user": "cred-value"},
        "privateKey": "-----PRIVATE",
        "note": "login with password=hunter2 please",
        "author": "author-visible",
    }
    r.hset(
        base + "1",
        mapping={
            "name": "leaky",
            "data": json.dumps(data),
            "opts": "{}",
            "timestamp": 1700000000000,
            "finishedOn": 1700000001000,
            "failedReason": "boom",
            "stacktrace": json.dumps(["Error: boom with token=stack-token\n    at x"]),
        },
    )
    r.zadd(base + "failed", {"1": 1700000001000})
    r.rpush(base + "1:logs", "connecting with password=log-secret", "Authorization: Bearer bearer-xyz")


def assert_clean(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, (where, secret)


def test_page_api_websocket_and_export_redact_everything(logged_in, prefixed_queues):
    Q = prefixed_queues.args("leaky")
    seed(prefixed_queues.client, prefixed_queues.prefix)
    page = logged_in.get(reverse("job", args=[*Q, "1"])).content.decode()
    assert_clean(page, "job page")
    assert "author-visible" in page and "inner-visible" in page  # not over-redacted
    assert_clean(logged_in.get(reverse("api_job", args=[*Q, "1"])).content.decode(), "api")
    live = read_job_live(prefixed_queues.client, QueueRef(*Q), "1", redactor=Redactor())
    assert_clean(fragments.job_live(live)[1], "websocket fragment")
    for fmt in ("jsonl", "csv"):
        response = logged_in.get(reverse("queue_export", args=Q) + f"?state=failed&format={fmt}")
        assert response.status_code == 200
        body = b"".join(response.streaming_content).decode()
        assert "leaky" in body
        assert_clean(body, fmt)
