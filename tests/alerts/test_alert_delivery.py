"""Delivering the alert outbox to real receivers: a local HTTP server for webhooks and a local
SMTP server (aiosmtpd) for email. Time is controlled by passing ``now`` to ``send_due``."""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from django.utils import timezone

from dashboard.alerts import sender
from dashboard.alerts.models import Channel, DeliveryAttempt, Notification
from dashboard.alerts.placeholders import fill_placeholders
from tests.support.receivers import WebhookReceiver

pytestmark = pytest.mark.django_db

SECRET = "s3cret-signing-key"


@pytest.fixture
def receiver():
    r = WebhookReceiver().start()
    yield r
    r.stop()


def webhook(url: str, **config) -> Channel:
    return Channel.objects.create(
        name=f"hook-{Channel.objects.count()}",
        kind=Channel.WEBHOOK,
        secret=SECRET,
        config={"url": url, "shape": "queuewatch", "timeout_s": 5, **config},
    )


def notify(channel: Channel, n: int = 1, *, summary: str = "dead-letter set grew by 120/min", at=None) -> Notification:
    created = at or timezone.now()
    return Notification.objects.create(
        channel=channel,
        idempotency_key=f"rule-7:fp-{n}:firing:{created.timestamp()}",
        kind=Notification.FIRING,
        subject=f"[FIRING] orders dead-letter growth #{n}",
        created_at=created,
        next_attempt_at=created,
        payload={
            "status": "firing",
            "kind": "firing",
            "group_key": "rule-7",
            "rule": {"id": 7, "name": "DLQ growth", "kind": "dlq_growth"},
            "alerts": [
                {
                    "fingerprint": f"fp-{n}",
                    "target": {"connection": "default", "prefix": "bull", "queue": "orders"},
                    "state": "firing",
                    "value": 120,
                    "threshold": 50,
                    "summary": summary,
                    "url": "/q/default/bull/orders/",
                    "started_at": "2026-11-30T01:00:00Z",
                    "ended_at": None,
                    "silenced": False,
                }
            ],
        },
    )


def verify(received, secret=SECRET) -> bool:
    expected = "sha256=" + hmac.new(secret.encode(), received.body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(received.headers["x-queuewatch-signature"], expected)


def test_webhook_is_delivered_signed_with_the_idempotency_key_and_custom_headers(receiver, settings):
    settings.QUEUEWATCH_BASE_URL = "https://qw.example.test"
    channel = webhook(receiver.url, headers={"X-Team": "payments"})
    row = notify(channel)

    assert sender.send_due() == 1

    [got] = receiver.received
    assert verify(got)
    assert not verify(got, secret="another-secret")
    assert got.headers["idempotency-key"] == row.idempotency_key
    assert got.headers["x-team"] == "payments" and got.headers["content-type"] == "application/json"
    body = json.loads(got.body)
    assert body["idempotency_key"] == row.idempotency_key and body["status"] == "firing"
    assert body["alerts"][0]["target"]["queue"] == "orders"
    assert body["url"] == "https://qw.example.test/q/default/bull/orders/"
    row.refresh_from_db()
    channel.refresh_from_db()
    assert row.state == Notification.SENT and row.attempts == 1 and row.sent_at is not None
    assert channel.last_sent_at is not None and not channel.failing
    [logged] = DeliveryAttempt.objects.filter(channel=channel)
    assert logged.ok and logged.number == 1 and "HTTP 200" in logged.detail
    assert sender.send_due() == 0 and len(receiver.received) == 1  # sent rows are never sent again


def test_receiver_down_for_ten_minutes_gets_every_notification_once_back():
    receiver = WebhookReceiver()  # its port is reserved but nothing listens yet: connection refused
    channel = webhook(receiver.url + "/T0KEN-in-path")
    t0 = timezone.now()
    rows = [notify(channel, n, at=t0) for n in range(5)]
    step = datetime.timedelta(seconds=15)

    t = t0
    while t < t0 + datetime.timedelta(minutes=10):
        assert sender.send_due(now=t) == 0
        t += step
    channel.refresh_from_db()
    assert channel.failing and "is unreachable" in channel.last_error and "http://127.0.0.1" in channel.last_error
    assert "T0KEN" not in channel.last_error  # tokens in webhook paths never reach logs or pages
    assert set(Notification.objects.values_list("state", flat=True)) == {Notification.PENDING}
    # While it is down, one attempt per backoff step for the whole channel, not one per row.
    failed_attempts = DeliveryAttempt.objects.filter(channel=channel, ok=False).count()
    assert 1 < failed_attempts < 40

    receiver.start()
    try:
        delivered = 0
        while delivered < len(rows) and t <= t0 + datetime.timedelta(minutes=10) + sender.RETRY_CAP + step:
            delivered += sender.send_due(now=t)
            t += step
        assert delivered == len(rows)
        assert receiver.keys() == [r.idempotency_key for r in rows]  # every one, once, oldest first
        assert all(verify(r) for r in receiver.received)
        assert set(Notification.objects.values_list("state", flat=True)) == {Notification.SENT}
        channel.refresh_from_db()
        assert not channel.failing
    finally:
        receiver.stop()


def test_a_lost_answer_is_resent_with_the_same_key_and_body(receiver):
    channel = webhook(receiver.url)
    first, second = notify(channel, 1), notify(channel, 2)
    receiver.answers = ["drop"]  # the receiver got the first one, then crashed before answering
    now = timezone.now()

    assert sender.send_due(now=now) == 0
    assert sender.send_due(now=now + sender.RETRY_CAP) == 2

    counts = Counter(receiver.keys())
    assert counts == {first.idempotency_key: 2, second.idempotency_key: 1}
    copies = [r for r in receiver.received if r.headers["idempotency-key"] == first.idempotency_key]
    assert (
        copies[0].body == copies[1].body
        and copies[0].headers["x-queuewatch-signature"] == copies[1].headers["x-queuewatch-signature"]
    )
    assert list(
        DeliveryAttempt.objects.filter(notification=first).order_by("number").values_list("ok", "will_retry")
    ) == [(False, True), (True, False)]


@pytest.mark.parametrize("status", [400, 401, 404, 410, 413])
def test_a_permanent_4xx_stops_retries_and_marks_the_channel(receiver, status):
    channel = webhook(receiver.url)
    row = notify(channel)
    receiver.answers = [status]
    now = timezone.now()

    assert sender.send_due(now=now) == 0
    for hours in (1, 2, 30):
        assert sender.send_due(now=now + datetime.timedelta(hours=hours)) == 0

    assert len(receiver.received) == 1
    row.refresh_from_db()
    channel.refresh_from_db()
    assert row.state == Notification.FAILED and row.attempts == 1
    assert channel.failing and channel.last_error.startswith(f"HTTP {status} from http://127.0.0.1:")
    [logged] = DeliveryAttempt.objects.filter(channel=channel)
    assert not logged.ok and not logged.will_retry


@pytest.mark.parametrize("status", [408, 429, 500, 503])
def test_timeouts_rate_limits_and_server_errors_are_retried(receiver, status):
    channel = webhook(receiver.url)
    row = notify(channel)
    receiver.answers = [(status, {"Retry-After": "120"})]
    now = timezone.now()

    assert sender.send_due(now=now) == 0
    row.refresh_from_db()
    assert row.state == Notification.PENDING
    assert row.next_attempt_at >= now + datetime.timedelta(seconds=120)  # the receiver's Retry-After
    assert sender.send_due(now=now + datetime.timedelta(seconds=60)) == 0  # not due yet
    assert sender.send_due(now=now + sender.RETRY_CAP) == 1
    assert receiver.keys() == [row.idempotency_key] * 2


def test_redirects_are_not_followed(receiver):
    channel = webhook(receiver.url)
    notify(channel)
    receiver.answers = [(307, {"Location": "http://127.0.0.1:1/elsewhere"})]
    assert sender.send_due() == 0
    channel.refresh_from_db()
    assert "redirects are not followed" in channel.last_error
    assert Notification.objects.get().state == Notification.FAILED


def test_two_senders_interleaved_never_deliver_a_row_twice(receiver):
    channel = webhook(receiver.url)
    rows = [notify(channel, n) for n in range(6)]
    now = timezone.now()

    # Both monitors read the same due rows, then race for each of them.
    seen_by_a = sender.due_candidates(now=now, limit=100)
    seen_by_b = sender.due_candidates(now=now, limit=100)
    assert [c.id for c in seen_by_a] == [c.id for c in seen_by_b] == [r.id for r in rows]
    outcomes = []
    for a, b in zip(seen_by_a, seen_by_b):
        first, second = (a, b) if a.id % 2 else (b, a)
        outcomes.append((sender.attempt(first, now=now), sender.attempt(second, now=now)))

    assert all(won is not None and won.ok and lost is None for won, lost in outcomes)
    assert receiver.keys() == [r.idempotency_key for r in rows]
    assert set(Notification.objects.values_list("attempts", flat=True)) == {1}


def test_a_sender_that_lost_its_lease_cannot_overwrite_the_outcome(receiver):
    channel = webhook(receiver.url)
    row = notify(channel)
    now = timezone.now()
    [candidate] = sender.due_candidates(now=now, limit=10)
    hung = sender._claim(candidate, now=now)  # monitor A claims, then hangs past its lease
    assert sender.send_due(now=now) == 0  # a live claim is respected

    later = now + sender.CLAIM_LEASE + datetime.timedelta(seconds=1)
    assert sender.send_due(now=later) == 1  # monitor B takes over the expired claim
    receiver.answers = [500]
    late = sender._deliver_claimed(hung, now=later)  # A wakes up: its result must not count

    row.refresh_from_db()
    channel.refresh_from_db()
    assert row.state == Notification.SENT and row.attempts == 2 and late.number == 1 and not late.ok
    assert channel.last_error == ""  # the stale failure is logged, but does not mark the channel
    assert receiver.keys() == [row.idempotency_key] * 2  # the only duplicate: same key


def test_backoff_grows_exponentially_with_jitter_up_to_the_cap():
    rng = random.Random(5)
    base, cap = sender.RETRY_BASE.total_seconds(), sender.RETRY_CAP.total_seconds()
    for attempts in range(1, 15):
        ceiling = min(base * 2 ** (attempts - 1), cap)
        delays = {sender.retry_delay(attempts=attempts, rng=rng).total_seconds() for _ in range(20)}
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(delays) > 1  # jittered
    assert sender.retry_delay(attempts=1, retry_after=90).total_seconds() >= 90
    assert sender.retry_delay(attempts=1, retry_after=86400).total_seconds() == cap
    assert cap / 2 <= sender.retry_delay(attempts=5000).total_seconds() <= cap  # a row sent again many times


def test_gives_up_after_a_day():
    channel = webhook(WebhookReceiver().url)  # nobody listens
    t0 = timezone.now()
    row = notify(channel, at=t0)
    assert sender.send_due(now=t0) == 0
    assert sender.send_due(now=t0 + sender.GIVE_UP_AFTER) == 0
    row.refresh_from_db()
    assert row.state == Notification.FAILED and "gave up after 2 attempts" in row.last_error


def test_disabled_channel_fails_its_rows_but_still_takes_a_test(receiver):
    channel = webhook(receiver.url)
    channel.enabled = False
    channel.save()
    row = notify(channel)
    assert sender.send_due() == 0
    row.refresh_from_db()
    assert row.state == Notification.FAILED and row.last_error == "The channel is disabled."
    result = sender.send_test(channel=channel, requested_by="alice")
    assert result.ok and len(receiver.received) == 1
    body = json.loads(receiver.received[0].body)
    assert body["kind"] == "test" and "alice" in body["alerts"][0]["summary"]


def test_alertmanager_and_slack_shapes(receiver):
    am = webhook(receiver.url, shape="alertmanager")
    slack = webhook(receiver.url, shape="slack")
    notify(am, 1)
    notify(slack, 2, summary="<!channel> & <script>x</script>")
    assert sender.send_due() == 2

    am_body, slack_body = (json.loads(r.body) for r in receiver.received)
    assert am_body["version"] == "4" and am_body["status"] == "firing" and am_body["receiver"] == am.name
    [alert] = am_body["alerts"]
    assert alert["labels"] == {
        "alertname": "DLQ growth",
        "rule_kind": "dlq_growth",
        "connection": "default",
        "prefix": "bull",
        "queue": "orders",
    }
    assert alert["endsAt"] == "0001-01-01T00:00:00Z" and alert["fingerprint"] == "fp-1"
    assert am_body["commonLabels"]["queue"] == "orders"
    text = slack_body["text"]
    assert "&lt;!channel&gt; &amp; &lt;script&gt;" in text and "<!channel>" not in text


def test_custom_template_is_filled_in_one_pass_and_stays_valid_json(receiver):
    template = '{"msg": "$SUBJECT", "why": "$SUMMARY", "queue": "$QUEUE", "alerts": $ALERTS_JSON}'
    channel = webhook(receiver.url, shape="custom", template=template)
    notify(channel, summary='reason mentions $QUEUE and $SUBJECT and "quotes"\nand a newline')
    assert sender.send_due() == 1

    body = json.loads(receiver.received[0].body)
    assert body["queue"] == "orders"
    assert body["why"].endswith(
        'reason mentions $QUEUE and $SUBJECT and "quotes"\nand a newline (value 120, threshold 50)'
    )
    assert body["alerts"][0]["fingerprint"] == "fp-1"


def test_placeholder_replace_is_single_pass_and_longest_name_first():
    values = {"NAME": "$OTHER", "OTHER": "expanded", "NAME_FULL": "full"}
    assert (
        fill_placeholders("$NAME $OTHER $NAME_FULL $UNKNOWN $NAMEX", values=values)
        == "$OTHER expanded full $UNKNOWN $OTHERX"
    )


# --- email through a real SMTP server ---------------------------------------------------------


def email_channel(*to: str) -> Channel:
    return Channel.objects.create(name="on-call mail", kind=Channel.EMAIL, config={"to": list(to)})


def test_email_has_text_and_html_bodies_with_the_link(smtp):
    channel = email_channel("oncall@example.test", "lead@example.test")
    row = notify(channel, summary="<script>alert(1)</script> & more")
    assert sender.send_due() == 1

    [(recipients, message)] = smtp.messages
    assert recipients == ["oncall@example.test", "lead@example.test"]
    assert message["Subject"] == row.subject and message["From"] == "queuewatch@example.test"
    assert message["X-Queuewatch-Idempotency-Key"] == row.idempotency_key
    text = message.get_body(("plain",)).get_content()
    html = message.get_body(("html",)).get_content()
    link = "https://qw.example.test/q/default/bull/orders/"
    assert link in text and f'href="{link}"' in html
    assert "<script>alert(1)</script> & more" in text  # plain text is not HTML-escaped
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in html and "<script>" not in html
    assert "orders" in text and "value 120, threshold 50" in text


def test_a_refused_address_is_permanent(smtp):
    channel = email_channel("nobody@refused.test")
    row = notify(channel)
    now = timezone.now()
    assert sender.send_due(now=now) == 0
    assert sender.send_due(now=now + datetime.timedelta(hours=1)) == 0
    row.refresh_from_db()
    channel.refresh_from_db()
    assert row.state == Notification.FAILED and row.attempts == 1
    assert "nobody@refused.test (550" in channel.last_error and not smtp.messages


def test_unreachable_or_unconfigured_mail_server_is_retried(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = ""
    channel = email_channel("oncall@example.test")
    row = notify(channel)
    assert sender.send_due() == 0
    row.refresh_from_db()
    assert row.state == Notification.PENDING and "set QUEUEWATCH_SMTP_HOST" in row.last_error

    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", WebhookReceiver().port  # nothing listens
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    assert sender.send_due(now=timezone.now() + sender.RETRY_CAP) == 0
    row.refresh_from_db()
    assert row.state == Notification.PENDING and "Cannot reach the mail server 127.0.0.1" in row.last_error


def test_prune_outbox_drops_old_finished_rows_and_their_log_but_never_waiting_ones(receiver):
    channel = webhook(receiver.url)
    old = timezone.now() - sender.KEEP_FINISHED - datetime.timedelta(days=1)
    sent, waiting, recent = notify(channel, 1, at=old), notify(channel, 2, at=old), notify(channel, 3)
    sender.attempt(sender.Candidate(sent.id, channel.id, Notification.PENDING, 0), now=timezone.now())
    Notification.objects.filter(id=recent.id).update(state=Notification.SENT)
    assert DeliveryAttempt.objects.filter(notification=sent).exists()

    assert sender.prune_outbox() == 1
    assert set(Notification.objects.values_list("id", flat=True)) == {waiting.id, recent.id}
    assert not DeliveryAttempt.objects.filter(notification_id=sent.id).exists()


def _settings_in_a_fresh_process(tmp_path, **env) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("QUEUEWATCH_", "DJANGO_"))}
    code = (
        "import django, json; django.setup(); from django.conf import settings as s; print(json.dumps("
        "[s.EMAIL_HOST, s.EMAIL_PORT, s.EMAIL_HOST_PASSWORD, s.EMAIL_USE_TLS, s.EMAIL_USE_SSL, s.QUEUEWATCH_BASE_URL]))"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        env={
            **clean,
            "DJANGO_SETTINGS_MODULE": "dashboard.settings",
            "QUEUEWATCH_INSECURE_DEV": "1",
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            **env,
        },
    )


def test_smtp_settings_come_from_the_environment_with_the_password_from_a_file(tmp_path):
    (tmp_path / "smtp-password").write_text("p4ss-from-file\n")
    result = _settings_in_a_fresh_process(
        tmp_path,
        QUEUEWATCH_SMTP_HOST="mail.example.test",
        QUEUEWATCH_SMTP_PORT="465",
        QUEUEWATCH_SMTP_PASSWORD_FILE=str(tmp_path / "smtp-password"),
        QUEUEWATCH_BASE_URL="https://qw.example.test/",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [
        "mail.example.test",
        465,
        "p4ss-from-file",
        False,
        True,
        "https://qw.example.test",
    ]

    bad = _settings_in_a_fresh_process(tmp_path, QUEUEWATCH_BASE_URL="qw.example.test")
    assert bad.returncode != 0 and "QUEUEWATCH_BASE_URL must start with http:// or https://" in bad.stderr


def test_a_channel_deleted_while_sending_does_not_break_the_sender(receiver):
    channel = webhook(receiver.url)
    notify(channel)
    now = timezone.now()
    [candidate] = sender.due_candidates(now=now, limit=10)
    claimed = sender._claim(candidate, now=now)
    Channel.objects.filter(id=channel.id).delete()  # an admin deletes it mid-send

    result = sender._deliver_claimed(claimed, now=now)
    assert result.ok and result.pk is None and not DeliveryAttempt.objects.exists()
    assert sender.attempt(candidate, now=now) is None  # nothing left to claim


def test_a_receiver_that_hangs_times_out_and_is_retried(receiver):
    channel = webhook(receiver.url, timeout_s=1)
    row = notify(channel)
    receiver.answers = ["hang"]
    assert sender.send_due() == 0
    row.refresh_from_db()
    assert (
        row.state == Notification.PENDING
        and row.last_error.startswith("http://127.0.0.1:")
        and "is unreachable" in row.last_error
    )
    assert "within 1 s" in row.last_error


def test_retry_after_in_both_forms():
    from email.utils import format_datetime

    from dashboard.alerts.notifiers.webhook import _retry_after

    assert _retry_after("120") == 120
    in_a_minute = format_datetime(datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=60), usegmt=True)
    assert 50 < _retry_after(in_a_minute) <= 60
    assert _retry_after("soon") is None and _retry_after(None) is None


def test_origin_shows_no_credentials_path_or_query():
    from dashboard.alerts.notifiers.webhook import origin

    assert origin("https://user:pw@hooks.example.test:8443/services/T0KEN?key=k") == "https://hooks.example.test:8443"
    assert origin("http://hooks.example.test:notaport/x") == "http://hooks.example.test"


def test_a_time_budget_stops_new_deliveries_but_always_tries_one(receiver):
    channel = webhook(receiver.url)
    rows = [notify(channel, n) for n in range(3)]
    assert sender.send_due(budget_s=0) == 1
    assert sender.send_due(budget_s=0) == 1
    assert sender.send_due() == 1
    assert receiver.keys() == [r.idempotency_key for r in rows]


@pytest.mark.django_db(transaction=True)
def test_the_leading_monitor_delivers_the_outbox_beside_its_loop(receiver, live_setup):
    """Rows written to the outbox reach the receiver while a monitor leads, without anyone
    calling send_due: the monitor runs the sender in a thread of its own."""
    from tests.support.live import run_monitor_until

    channel = webhook(receiver.url)
    notify(channel, 1)
    notify(channel, 2)
    run_monitor_until(lambda m: len(receiver.received) == 2)
    assert all(verify(r) for r in receiver.received)
    assert set(Notification.objects.values_list("state", flat=True)) == {Notification.SENT}
