"""A failure reason is free text a worker wrote, and workers quote what they were given: a
connection string, a header, the payload. One poisoned failed job, written by hand in BullMQ's
layout, walked through every page and API that shows a failure reason: no secret in any response
(job lists were shown raw, and so were bulk previews and error groups), in any download (CSV and
JSON lines, page and API), nor in any alert its queue raises (email through a real SMTP server,
webhooks of every shape to a real HTTP receiver)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse
from django.utils import timezone

from dashboard.alerts import sender
from dashboard.alerts.engine import evaluate_rules
from dashboard.alerts.models import Channel
from dashboard.browse import selectors
from dashboard.connections.registry import get_registry
from dashboard.live import fragments
from tests.support.alerting import facts, make_rule
from tests.support.receivers import WebhookReceiver

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


def downloads(client, Q: list[str]):
    """(where, body) of every download of the poisoned job, read to the end."""
    for fmt in ("csv", "jsonl"):
        for name in ("queue_export", "api_export"):
            response = client.get(reverse(name, args=Q) + f"?state=failed&format={fmt}")
            assert response.status_code == 200, (name, fmt)
            yield f"{name} ({fmt})", b"".join(response.streaming_content).decode()


def test_no_secret_of_a_poisoned_job_reaches_a_download(operator, prefixed_queues):
    Q = prefixed_queues.args("poisoned")
    seed(prefixed_queues.client, prefixed_queues.prefix)
    for where, body in downloads(operator, Q):
        # The job is exported, its reason, stack and harmless data too; only the secrets are not.
        assert "login refused" in body and "data-visible" in body and "db.js:1:1" in body, where
        assert [secret for secret in SECRETS if secret in body] == [], where


@pytest.fixture
def webhook():
    receiver = WebhookReceiver().start()
    yield receiver
    receiver.stop()


def test_no_secret_of_a_poisoned_job_reaches_an_alert(prefixed_queues, smtp, webhook):
    """The poisoned queue's failed set, read from Redis as the monitor reads it, fires a rule
    whose notifications go out by email and by webhook in every shape (a custom template with
    every placeholder too): the queue is named in each, no secret of its job is."""
    seed(prefixed_queues.client, prefixed_queues.prefix)
    queue = prefixed_queues.queue("poisoned")
    hook = {"url": webhook.url, "timeout_s": 5}
    template = " ".join(f"${name}" for name in ("SUBJECT", "SUMMARY", "RULE", "QUEUE", "VALUE", "URL", "CHANNEL"))
    channels = [
        Channel.objects.create(name="mail", kind=Channel.EMAIL, config={"to": ["oncall@example.test"]}),
        *(
            Channel.objects.create(name=shape, kind=Channel.WEBHOOK, config={**hook, "shape": shape})
            for shape in ("queuewatch", "alertmanager", "slack")
        ),
        Channel.objects.create(
            name="custom",
            kind=Channel.WEBHOOK,
            config={**hook, "shape": "custom", "template": template, "content_type": "text/plain"},
        ),
    ]
    make_rule("dead letters", kind="dlq_depth", threshold=0, channels=channels)
    snapshots = get_registry().source("default").snapshots([queue])
    evaluate_rules(facts=facts(*selectors.with_signals(snapshots)), now=timezone.now())
    assert sender.send_due() == len(channels)

    [(_, message)] = smtp.messages
    sent = {
        "email (text)": message.get_body(("plain",)).get_content(),
        "email (html)": message.get_body(("html",)).get_content(),
        "email subject": str(message["Subject"]),
        **{f"webhook {i}": received.body.decode() for i, received in enumerate(webhook.received)},
    }
    assert len(sent) == 3 + 4
    for where, body in sent.items():
        assert "poisoned" in body, where  # the notification is about the poisoned queue
        assert [secret for secret in SECRETS if secret in body] == [], where
