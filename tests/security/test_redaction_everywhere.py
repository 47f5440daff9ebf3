"""A failure reason is free text a worker wrote, and workers quote what they were given: a
connection string, a header, the payload. One poisoned failed job, written by hand in BullMQ's
layout, walked through every page and API that shows a failure reason: no secret in any response
(job lists were shown raw, and so were bulk previews and error groups)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse

from dashboard.browse import selectors
from dashboard.live import fragments

pytestmark = pytest.mark.django_db

FIRST_LINE = (
    "Error: login refused password=pw-in-reason token: tok-in-reason"
    " {'user': 'ann', 'passphrase': 'py-in-reason'} postgres://app:url-in-reason@db:5432/main"
    " redis://:redis-in-reason@cache:6379 amqp://u:amqp-in-reason@mq"
    ' [{"name": "Authorization", "value": "hdr-in-reason"}]'
    " dsn=dsn-in-reason client_secret=cs-in-reason jwt=jwt-in-reason"
    " then Bearer eyJhbGciOiJIUzI1NiJ9.bearer-in-reason"
)
REASON = FIRST_LINE + "\nwhile calling with secret=second-line-secret"
STACK = [FIRST_LINE + "\n    at connect (db.js:1:1)\n    at apiKey=stack-api-key"]
DATA = {
    "password": "pw-in-data",
    "note": "auth=auth-in-data",
    "visible": "data-visible",
    "printed": "{'password': 'py-in-data'}",
    "url": "redis://:url-in-data@cache:6379",
    "headers": [{"name": "Authorization", "value": "hdr-in-data"}],
    "passphrase": "pp-in-data",
    "dsn": "dsn-in-data",
    "client_secret": "cs-in-data",
    "jwt": "jwt-in-data",
    "log": "sent Bearer abc.bearer-in-data",
}
SECRETS = [
    *(
        f"{kind}-in-{where}"
        for kind in ("pw", "py", "url", "hdr", "dsn", "cs", "jwt", "bearer")
        for where in ("reason", "data")
    ),
    "tok-in-reason",
    "redis-in-reason",
    "amqp-in-reason",
    "second-line-secret",
    "stack-api-key",
    "auth-in-data",
    "pp-in-data",
]


def seed(r, prefix: str) -> None:
    base = f"{prefix}:poisoned:"
    r.hset(base + "meta", "opts.maxLenEvents", 10000)
    r.hset(
        base + "1",
        mapping={
            "name": "charge",
            "data": json.dumps(DATA),
            "opts": json.dumps({"attempts": 1}),
            "timestamp": 1700000000000,
            "processedOn": 1700000000500,
            "finishedOn": 1700000001000,
            "atm": 1,
            "failedReason": REASON,
            "stacktrace": json.dumps(STACK),
            "defa": "deferred with password=pw-in-reason",
        },
    )
    r.zadd(base + "failed", {"1": 1700000001000})


@pytest.fixture
def operator(client):
    user = User.objects.create_user("op", password="pw")
    user.groups.add(Group.objects.get_or_create(name="operator")[0])
    client.force_login(user)
    return client


def responses(client, Q: list[str]):
    """(where, body) of every page and API that shows the poisoned job's failure reason."""
    yield "job list", client.get(reverse("queue", args=Q) + "?state=failed")
    yield "api list", client.get(reverse("api_jobs", args=Q) + "?state=failed")
    yield "job page", client.get(reverse("job", args=[*Q, "1"]))
    yield "api job", client.get(reverse("api_job", args=[*Q, "1"]))
    yield "error groups", client.get(reverse("queue_errors", args=Q))
    picked = {"action": "discard", "state": "failed", "scope": "selected", "ids": ["1"]}
    yield "bulk preview (ids)", client.post(reverse("bulk_preview", args=Q), picked)
    matching = {"action": "discard", "state": "failed", "scope": "matching", "reason_contains": "login refused"}
    yield "bulk preview (filter)", client.post(reverse("bulk_preview", args=Q), matching)


def test_no_secret_of_a_poisoned_job_reaches_any_page(operator, prefixed_queues):
    Q = prefixed_queues.args("poisoned")
    seed(prefixed_queues.client, prefixed_queues.prefix)
    for where, response in responses(operator, Q):
        body = response.content.decode()
        assert response.status_code == 200, (where, body[:500])
        assert "login refused" in body, where  # the reason is shown, only its secrets are not
        for secret in SECRETS:
            assert secret not in body, (where, secret)
    page = selectors.job_page(prefixed_queues.queue("poisoned"), "failed", page=1, page_size=25, name_filter="")
    live_list = "".join(fragments.job_table(prefixed_queues.queue("poisoned"), page, []))
    assert "login refused" in live_list and not [s for s in SECRETS if s in live_list]


def test_filters_still_match_the_stored_reason(operator, prefixed_queues):
    """Redaction is for display: a bulk filter on text that is redacted when shown still
    finds the job, as the bulk task (which reads the stored reason) would."""
    Q = prefixed_queues.args("poisoned")
    seed(prefixed_queues.client, prefixed_queues.prefix)
    matching = {"action": "discard", "state": "failed", "scope": "matching", "reason_contains": "pw-in-reason"}
    html = operator.post(reverse("bulk_preview", args=Q), matching).content.decode()
    assert 'data-count="1"' in html
