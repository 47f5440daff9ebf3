"""Malformed, huge and hostile job hashes: every page renders (200 or a deliberate 404),
nothing executes (everything is escaped), and reading writes nothing to Redis."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db

XSS = ["<script>alert(1)</script>", "<img src=x onerror=alert(2)>", '"><svg onload=alert(3)>']
WRITE_COMMANDS = {
    "set",
    "hset",
    "hdel",
    "del",
    "lpush",
    "rpush",
    "rpop",
    "lpop",
    "zadd",
    "zrem",
    "sadd",
    "srem",
    "incr",
    "hincrby",
    "xadd",
    "expire",
    "pexpire",
    "rename",
    "evalsha",
    "eval",
    "fcall",
    "zpopmin",
    "bzpopmin",
}


def seed(r, prefix: str = "bull"):
    """A queue 'evil<script>' can't exist (names are validated by BullMQ? no: only ':' is
    forbidden), so the hostile queue name is real too."""
    q = f"{prefix}:hostile:"
    r.hset(q + "meta", mapping={"opts.maxLenEvents": 10000})
    jobs = {
        "xss": {
            "name": XSS[0],
            "data": json.dumps({"html": XSS[1], "k": XSS[2]}),
            "opts": '{"attempts":3}',
            "timestamp": 1700000000000,
            "failedReason": XSS[1] + "\nsecond line",
            "finishedOn": 1700000001000,
            "stacktrace": json.dumps([f"Error: {XSS[0]}\n    at {XSS[1]}"]),
            "atm": 3,
        },
        "notjson": {
            "name": "bad",
            "data": "{not json",
            "opts": "also not json",
            "timestamp": "yesterday",
            "stacktrace": "not a list",
            "atm": "many",
            "finishedOn": 1700000002000,
        },
        "missing": {"name": "only-a-name"},
        "binary": {
            "name": b"\xff\xfe\x00bin",
            "data": b"\x80\x81\x82\xff",
            "timestamp": 1700000003000,
            "finishedOn": 1700000003000,
        },
        "a:b:c": {"name": "colon id", "data": "{}", "timestamp": 1700000004000, "finishedOn": 1700000004000},
        "ünï-ジョブ": {
            "name": "日本語 <b>",
            "data": json.dumps({"text": "naïve ✓"}),
            "timestamp": 1700000005000,
            "finishedOn": 1700000005000,
        },
        "huge": {
            "name": "huge",
            "data": json.dumps({"blob": "x" * (20 * 1024 * 1024), "token": "SECRET-TOKEN-VALUE"}),
            "timestamp": 1700000006000,
            "finishedOn": 1700000006000,
        },
        "secrets": {
            "name": "secrets",
            "timestamp": 1700000007000,
            "finishedOn": 1700000007000,
            "data": json.dumps(
                {
                    "user": {"password": "hunter2", "Api-Key": "sk_live_123", "nested": [{"authToken": "abc"}]},
                    "ok": "visible",
                }
            ),
        },
    }
    for job_id, fields in jobs.items():
        r.hset(q + job_id, mapping=fields)
        r.zadd(
            q + "failed",
            {
                job_id: int(fields.get("finishedOn", 1700000000000))
                if str(fields.get("finishedOn", "")).isdigit()
                else 1
            },
        )
    r.zadd(q + "failed", {"vanished": 1700000009000})  # listed but its hash is gone
    r.rpush(q + "logs-owner", "x")  # unrelated key must not confuse discovery
    r.rpush(q + "xss:logs", XSS[0], XSS[1])
    return jobs


def write_count(r) -> int:
    stats = r.info("commandstats")
    return sum(v["calls"] for k, v in stats.items() if k.removeprefix("cmdstat_") in WRITE_COMMANDS)


@pytest.fixture
def hostile(prefixed_queues):
    """The hostile queue under this test's own key prefix; yields its URL arguments."""
    seed(prefixed_queues.client, prefixed_queues.prefix)
    return prefixed_queues.args("hostile")


@pytest.fixture
def hostile_whole_db(scratch_queues):
    """The hostile queue on a whole database of its own (prefix 'bull'), so that a check over
    every key sees any write, wherever it lands; yields its client."""
    seed(scratch_queues)
    return scratch_queues


def urls(args):
    yield reverse("overview")
    yield reverse("queue", args=args) + "?state=failed&size=100"
    yield reverse("queue", args=args) + "?state=failed&name=%3Cscript"
    for job_id in ("xss", "notjson", "missing", "binary", "a:b:c", "ünï-ジョブ", "huge", "secrets"):
        yield reverse("job", args=[*args, job_id])
    yield reverse("api_queues")
    yield reverse("api_jobs", args=args) + "?state=failed"
    yield reverse("api_job", args=[*args, "xss"])


def test_every_page_renders_escaped_and_reading_writes_nothing(logged_in, hostile_whole_db):
    hostile = hostile_whole_db
    before = write_count(hostile)
    keys_before = sorted(hostile.keys("*"))
    for url in urls(["default", "bull", "hostile"]):
        response = logged_in.get(url)
        assert response.status_code == 200, url
        body = response.content.decode()
        for raw in XSS:
            assert raw not in body, (url, raw)
    # INFO itself is not a write; the count of write commands must not have moved.
    assert write_count(hostile) == before
    assert sorted(hostile.keys("*")) == keys_before


def test_escaped_text_is_still_shown(logged_in, hostile):
    body = logged_in.get(reverse("job", args=[*hostile, "xss"])).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "&lt;img src=x onerror=alert(2)&gt;" in body


def test_huge_payload_is_truncated_with_a_download_link_and_redacted(logged_in, hostile):
    url = reverse("job", args=[*hostile, "huge"])
    response = logged_in.get(url)
    body = response.content.decode()
    assert len(response.content) < 1024 * 1024
    assert "larger than the display limit" in body and "Download raw JSON" in body
    raw_url = reverse("job_raw", args=[*hostile, "data", "huge"])
    assert raw_url in body
    raw = logged_in.get(raw_url)
    assert raw.status_code == 200 and raw["Content-Disposition"].startswith("attachment;")
    exported = json.loads(raw.content)
    assert exported["token"] == "[redacted]" and len(exported["blob"]) == 20 * 1024 * 1024
    assert b"SECRET-TOKEN-VALUE" not in raw.content


def test_secret_keys_are_redacted_in_page_and_api(logged_in, hostile):
    page = logged_in.get(reverse("job", args=[*hostile, "secrets"])).content.decode()
    api = logged_in.get(reverse("api_job", args=[*hostile, "secrets"])).content.decode()
    for body in (page, api):
        assert "hunter2" not in body and "sk_live_123" not in body and "abc" not in body.replace("abcd", "")
        assert "visible" in body and "[redacted]" in body


def test_missing_and_vanished_jobs(logged_in, hostile):
    body = logged_in.get(reverse("queue", args=hostile) + "?state=failed&size=100").content.decode()
    assert "job hash missing" in body
    response = logged_in.get(reverse("job", args=[*hostile, "vanished"]))
    assert response.status_code == 404


def test_unreachable_redis_on_queue_page_and_api_is_a_clear_503(logged_in, settings, redis_server):
    from queues.connections import ConnectionSpec
    from tests.support.redis_db import point_at
    from tests.support.servers import refused_port

    point_at(settings, ConnectionSpec("default", f"redis://:pw-secret@127.0.0.1:{refused_port()}/0", ("bull",)))
    response = logged_in.get(reverse("queue", args=["default", "bull", "anything"]))
    assert response.status_code == 503
    assert "unavailable" in response.content.decode() and "pw-secret" not in response.content.decode()
    response = logged_in.get(reverse("api_queues"))
    assert response.status_code == 200
    body = response.json()
    assert body["connections"][0]["ok"] is False and "pw-secret" not in response.content.decode()
