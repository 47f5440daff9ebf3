"""The two "how to add" recipes of alerting, done for real: a dummy rule kind and a dummy
notifier (channel) kind, each added through its one home only — a class registered in its
registry (``queues.alert_kinds``, ``dashboard.alerts.notifiers``) — and nothing else touched.

End to end: the channel and the rule are created through their forms (the form choices, the
settings fields and the validation come from the registries), the monitor's evaluation gathers
the data the dummy kind needs (from a quota book kept in a real Redis of its own, the
way a kind reads data that is not the queues'), the rule fires and resolves in the engine, and
both notifications leave through the outbox and the dummy channel kind.
"""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from django import forms
from django.contrib.auth.models import Group, User
from django.test import Client

from dashboard.alerts import monitoring, notifiers, sender
from dashboard.alerts.models import Alert, AlertRule, Channel, Notification
from dashboard.alerts.notifiers import DeliveryError, Notifier
from dashboard.connections.registry import get_registry, reset_registry
from queues import alert_kinds
from queues.alert_kinds.base import Need, QueueKind
from queues.connections import ConnectionSpec
from tests.support.alerting import T0, signals
from tests.support.redis_db import point_at

pytestmark = pytest.mark.django_db

# --- the dummy rule kind: "waiting jobs over the queue's quota", quotas kept in a Redis hash ---

QUOTA_KEY = f"recipe-test:{uuid.uuid4().hex}:quotas"  # this module's own key (a prefix, not a database)
GATHERED: list[dt.datetime] = []  # when the quotas were read
QUOTA_BOOK: list = []  # the Redis client holding the quota book, set by the fixture


def read_quotas(*, signals, source_for, down, now) -> dict:
    """The quota of every queue that has one, on reachable connections."""
    GATHERED.append(now)
    out = {}
    for sig in signals:
        q = sig.snapshot.queue
        if q.connection not in down and (quota := QUOTA_BOOK[0].hget(QUOTA_KEY, q.name)) is not None:
            out[q] = int(quota)
    return out


QUOTAS = Need("recipe_quotas", read_quotas)


class OverQuota(QueueKind):
    id, title, unit = "recipe_over_quota", "Waiting jobs over the queue's quota by N", "jobs"
    help = "Waiting jobs minus the quota stored for the queue (queues without a quota are not measured)."

    def needs(self, rule):
        return (QUOTAS,)

    def validate(self, rule):
        errors = super().validate(rule)
        if rule.threshold is not None and rule.threshold != int(rule.threshold):
            errors["threshold"] = "Jobs are counted whole: give a whole number."
        return errors

    def measure(self, rule, sig, facts):
        quota = facts.of(QUOTAS).get(sig.snapshot.queue)
        if quota is None:
            return None, "no quota set"
        over = sig.snapshot.counts.get("waiting", 0) - quota
        return over, f"{over} jobs over the quota of {quota}"


# --- the dummy notifier kind: writes each notification into an in-memory memo book ---

MEMOS: list[tuple[str, str, str]] = []  # (book, notification kind, subject)


class MemoNotifier(Notifier):
    kind, label = "recipe-memo", "Memo book (test)"
    form_note = "Notifications are written into the named memo book."

    @classmethod
    def form_fields(cls):
        return {"memo_book": forms.CharField(label="Memo book", required=False, max_length=50)}

    @classmethod
    def clean_config(cls, *, data, stored, add_error):
        book = (data.get("memo_book") or "").strip()
        if not book:
            add_error("memo_book", "Name the memo book.")
        return {"book": book}

    @classmethod
    def initial(cls, config):
        return {"memo_book": config.get("book", "")}

    @classmethod
    def destination(cls, config):
        return f"memo book “{config.get('book', '')}”"

    def send(self, notification) -> str:
        book = self.config.get("book") or ""
        if book == "full":
            raise DeliveryError("The memo book is full.", retry=False)
        MEMOS.append((book, notification.kind, notification.subject))
        return f"written into memo book {book}"


@pytest.fixture
def recipes(settings, redis_server):
    """Both dummy kinds registered (and only for this test), the app on the test Redis."""
    alert_kinds.register(OverQuota)
    notifiers.register(MemoNotifier)
    point_at(settings, ConnectionSpec("default", redis_server.url(0), ("bull",)))
    client = redis_server.client(0)
    QUOTA_BOOK[:] = [client]
    MEMOS.clear()
    GATHERED.clear()
    try:
        yield client
    finally:
        client.delete(QUOTA_KEY)
        client.close()
        reset_registry()
        alert_kinds.unregister(OverQuota.id)
        notifiers.unregister(MemoNotifier.kind)


def admin_client() -> Client:
    user = User.objects.create_user("recipe-admin", password="x")
    user.groups.add(Group.objects.get_or_create(name="admin")[0])
    client = Client()
    client.force_login(user)
    return client


RULE_FORM = {
    "name": "over quota",
    "kind": OverQuota.id,
    "enabled": "on",
    "severity": "warning",
    "connection": "",
    "queue_glob": "orders",
    "threshold": "2",
    "resolve_threshold": "",
    "window_minutes": "5",
    "min_volume": "0",
    "for_seconds": "0",
    "keep_firing_seconds": "0",
    "repeat_minutes": "0",
    "notify_resolved": "on",
}


def evaluate(waiting: int, now: dt.datetime):
    """What the monitor does on its schedule: evaluate every rule on its last tick's signals."""
    return monitoring.evaluate(
        signals=[signals(counts={"waiting": waiting}, now=now)], registry=get_registry(), down={}, report=None, now=now
    )


def test_a_new_channel_kind_and_a_new_rule_kind_work_end_to_end(recipes):
    admin = admin_client()

    # The channel form offers the new kind, with its own settings, validated by the kind.
    page = admin.get("/alerts/channels/new/").content.decode()
    assert 'data-kind="recipe-memo"' in page and "Memo book (test)" in page and 'name="memo_book"' in page
    # Only the chosen kind's settings are shown: static/queuewatch.js matches each fieldset's
    # data-kind to the select's value (no inline <style>, for the CSP).
    assert '<option value="recipe-memo"' in page
    channel_form = {"name": "memo", "kind": MemoNotifier.kind, "enabled": "on", "memo_book": ""}
    assert "Name the memo book." in admin.post("/alerts/channels/new/", channel_form).content.decode()
    assert admin.post("/alerts/channels/new/", {**channel_form, "memo_book": "ops"}).status_code == 302
    channel = Channel.objects.get(name="memo")
    assert (channel.kind, channel.config) == (MemoNotifier.kind, {"book": "ops"})
    listing = admin.get("/alerts/channels/").content.decode()
    assert "Memo book (test)" in listing and "memo book “ops”" in listing

    # The rule form offers the new rule kind and applies its validation.
    page = admin.get("/alerts/rules/new").content.decode()
    assert "Waiting jobs over the queue&#x27;s quota by N" in page
    bad = admin.post("/alerts/rules/new", {**RULE_FORM, "threshold": "2.5", "channels": [channel.pk]})
    assert bad.status_code == 200 and "Jobs are counted whole: give a whole number." in bad.content.decode()
    assert admin.post("/alerts/rules/new", {**RULE_FORM, "channels": [channel.pk]}).status_code == 302
    rule = AlertRule.objects.get(name="over quota")
    assert rule.condition == "Waiting jobs over the queue's quota by N: 2 jobs"

    # The monitor's evaluation gathers what the kind needs from Redis, and the rule fires.
    recipes.hset(QUOTA_KEY, "orders", 10)
    evaluate(waiting=11, now=T0)  # 1 over: not above 2
    assert GATHERED == [T0] and not Alert.objects.exists()
    evaluate(waiting=15, now=T0 + dt.timedelta(minutes=1))
    alert = Alert.objects.get()
    assert alert.state == Alert.FIRING and alert.value_start == 5 and alert.summary == "5 jobs over the quota of 10"

    # The notification leaves through the outbox and the new channel kind.
    assert sender.send_due(now=T0 + dt.timedelta(minutes=1)) == 1
    assert MEMOS == [("ops", "firing", "[FIRING:1] over quota — default/orders")]

    evaluate(waiting=12, now=T0 + dt.timedelta(minutes=2))  # back to 2 over: resolved
    alert.refresh_from_db()
    assert alert.state == Alert.RESOLVED
    assert sender.send_due(now=T0 + dt.timedelta(minutes=2)) == 1
    assert MEMOS[-1] == ("ops", "resolved", "[RESOLVED:1] over quota — default/orders")
    assert set(Notification.objects.values_list("state", flat=True)) == {Notification.SENT}

    # "Send test" goes through the same notifier; its answer is the channel's delivery log.
    page = admin.post(f"/alerts/channels/{channel.pk}/test/", follow=True).content.decode()
    assert "written into memo book ops" in page and MEMOS[-1][1] == "test"


def test_data_a_kind_needs_is_read_only_while_a_rule_of_that_kind_is_enabled(recipes):
    AlertRule.objects.create(name="backlog", kind="backlog", threshold=100)
    evaluate(waiting=15, now=T0)
    rule = AlertRule.objects.create(name="over quota", kind=OverQuota.id, threshold=2, enabled=False)
    evaluate(waiting=15, now=T0)
    assert GATHERED == []
    rule.enabled = True
    rule.save()
    evaluate(waiting=15, now=T0)
    assert GATHERED == [T0]
    assert not Alert.objects.exists()  # no quota stored for "orders": not measured, no alert


def test_a_notifier_kinds_permanent_error_fails_the_row_and_is_shown_on_the_channel(recipes):
    channel = Channel.objects.create(name="full", kind=MemoNotifier.kind, config={"book": "full"})
    row = Notification.objects.create(
        channel=channel, idempotency_key="k1", kind="firing", subject="s", payload={}, created_at=T0, next_attempt_at=T0
    )
    assert sender.send_due(now=T0) == 0
    row.refresh_from_db()
    channel.refresh_from_db()
    assert row.state == Notification.FAILED and channel.last_error == "The memo book is full."


def test_registries_refuse_a_kind_twice_and_a_settings_field_another_kind_uses(recipes):
    with pytest.raises(ValueError, match="already registered"):
        alert_kinds.register(OverQuota)
    with pytest.raises(ValueError, match="already registered"):
        notifiers.register(MemoNotifier)

    class Clashing(MemoNotifier):
        kind = "recipe-clash"

    with pytest.raises(ValueError, match="memo_book"):
        notifiers.register(Clashing)
    assert "recipe-clash" not in notifiers.NOTIFIERS


def test_an_unregistered_kind_is_refused_by_the_models():
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError, match="kind"):
        AlertRule(name="x", kind=OverQuota.id).full_clean()
    with pytest.raises(ValidationError, match="kind"):
        Channel(name="x", kind=MemoNotifier.kind).full_clean()
