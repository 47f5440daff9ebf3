"""Rule kinds (pure evaluation) and the state machine on real database rows, time passed as
``now``: every kind fires and resolves; pending periods, hysteresis, keep-firing, repeats,
grouping, silences, maintenance windows (across a DST change), and the CAS that keeps two
monitors from writing one state change twice."""

from __future__ import annotations

import datetime as dt

import pytest

from dashboard.alerts.engine import apply_observations, evaluate_rules, load_open_alerts
from dashboard.alerts.models import Alert, MaintenanceWindow, Notification, Silence
from queues import alert_rules
from queues.alert_rules import ConnectionFacts, RuleSpec, rule_evaluate
from queues.keys import QueueRef
from queues.schedulers import Scheduler
from tests.support.alerting import T0, facts, make_channel, make_rule, ms, signals

S = dt.timedelta(seconds=1)
MIN = dt.timedelta(minutes=1)

# kind, rule fields, facts that break it, facts that are fine
CASES = {
    "dlq_depth": (
        {"threshold": 5},
        lambda: facts(signals(counts={"failed": 9})),
        lambda: facts(signals(counts={"failed": 2})),
    ),
    "dlq_growth": (
        {"threshold": 2, "window_minutes": 1},
        lambda: facts(signals(events=[("failed", 10)] * 5)),
        lambda: facts(signals(events=[("failed", 10)])),
    ),
    "attempt_failures": (
        {"threshold": 3, "window_minutes": 1},
        lambda: facts(signals(attempt_failures=[10] * 5)),
        lambda: facts(signals(attempt_failures=[10])),
    ),
    "failure_ratio": (
        {"threshold": 20, "window_minutes": 5, "min_volume": 10},
        lambda: facts(signals(events=[("failed", 10)] * 5 + [("completed", 10)] * 5)),
        lambda: facts(signals(events=[("failed", 10)] * 5 + [("completed", 10)] * 50)),
    ),
    "stalled_window": (
        {"threshold": 2, "window_minutes": 15},
        lambda: facts(signals(events=[("stalled", 600)] * 3)),
        lambda: facts(signals(events=[("stalled", 600)])),
    ),
    "stalled_now": ({"threshold": 0}, lambda: facts(signals(stalled=["7"])), lambda: facts(signals())),
    "backlog": (
        {"threshold": 100},
        lambda: facts(signals(counts={"waiting": 90, "prioritized": 20})),
        lambda: facts(signals(counts={"waiting": 90})),
    ),
    "oldest_waiting": (
        {"threshold": 300},
        lambda: facts(signals(counts={"waiting": 1}, oldest_age_s=301)),
        lambda: facts(signals(counts={"waiting": 1}, oldest_age_s=10)),
    ),
    "no_completions": (
        {"threshold": 60},
        lambda: facts(signals(counts={"waiting": 3}, events=[("completed", 120)])),
        lambda: facts(signals(counts={"waiting": 3}, events=[("completed", 5)])),
    ),
    "no_workers": (
        {"threshold": 0},
        lambda: facts(signals(counts={"waiting": 3}, workers=0)),
        lambda: facts(signals(counts={"waiting": 3}, workers=2)),
    ),
    "wait_p95": (
        {"threshold": 2, "window_minutes": 5},
        lambda: facts(signals(timings=[("resize", "wait", 100, 30)] * 10 + [("resize", "wait", 3000, 30)] * 10)),
        lambda: facts(signals(timings=[("resize", "wait", 100, 30)] * 99 + [("resize", "wait", 3000, 30)])),
    ),
    "processing_p95": (
        {"threshold": 1, "window_minutes": 1, "job_name": "resize"},
        lambda: facts(signals(timings=[("resize", "processing", 1500, 5)] * 5 + [("mail", "processing", 10, 5)])),
        lambda: facts(signals(timings=[("resize", "processing", 200, 5)] * 5 + [("mail", "processing", 9000, 5)])),
    ),
    "paused": ({"threshold": 0}, lambda: facts(signals(paused=True)), lambda: facts(signals())),
    "redis_unreachable": (
        {},
        lambda: facts(connections={"default": ConnectionFacts(reachable=False, error="refused")}),
        lambda: facts(),
    ),
    "eviction_policy": (
        {},
        lambda: facts(connections={"default": ConnectionFacts(eviction_policy="allkeys-lru")}),
        lambda: facts(connections={"default": ConnectionFacts(eviction_policy="noeviction")}),
    ),
    "memory": (
        {"threshold": 90},
        lambda: facts(connections={"default": ConnectionFacts(used_memory=95, maxmemory=100)}),
        lambda: facts(connections={"default": ConnectionFacts(used_memory=50, maxmemory=100)}),
    ),
    "scheduler_missed": (
        {"threshold": 60},
        lambda: facts(schedulers={QueueRef("default", "bull", "orders"): [_sched(T0 - 5 * MIN)]}),
        lambda: facts(schedulers={QueueRef("default", "bull", "orders"): [_sched(T0 + MIN)]}),
    ),
}


def _sched(next_run: dt.datetime) -> Scheduler:
    return Scheduler(
        id="nightly",
        name="report",
        pattern="* * * * *",
        every=None,
        tz="Europe/Paris",
        next_run=ms(next_run),
        iterations=3,
        limit=None,
        start_date=None,
        end_date=None,
    )


def test_every_kind_has_a_case():
    assert set(CASES) == set(alert_rules.KINDS)


@pytest.mark.django_db
@pytest.mark.parametrize("kind", sorted(CASES))
def test_every_rule_kind_fires_and_resolves(kind):
    fields, bad, good = CASES[kind]
    channel = make_channel()
    rule = make_rule(kind=kind, channels=[channel], **{"threshold": 0, **fields})
    evaluate_rules(facts=good(), now=T0)
    assert not Alert.objects.exists(), "fine facts must not open an alert"
    wait = alert_rules.extra_pending_seconds(rule)
    evaluate_rules(facts=bad(), now=T0)
    alert = Alert.objects.get()
    evaluate_rules(facts=bad(), now=T0 + dt.timedelta(seconds=wait))
    alert.refresh_from_db()
    assert alert.state == Alert.FIRING and alert.value_start is not None and alert.summary
    evaluate_rules(facts=good(), now=T0 + dt.timedelta(seconds=wait + 10))
    alert.refresh_from_db()
    assert alert.state == Alert.RESOLVED and alert.resolved_at == T0 + dt.timedelta(seconds=wait + 10)
    assert list(Notification.objects.order_by("id").values_list("kind", flat=True)) == ["firing", "resolved"]
    assert list(alert.events.values_list("state", flat=True)) == ["pending", "firing", "resolved"]


def test_scheduler_missed_counts_runs_from_the_cron_pattern_in_its_zone():
    rule = RuleSpec(id=1, kind="scheduler_missed", threshold=30)
    q = QueueRef("default", "bull", "reports")
    hourly = Scheduler(
        id="h",
        name="h",
        pattern="0 * * * *",
        every=None,
        tz="America/New_York",
        next_run=ms(T0 - 3 * dt.timedelta(hours=1)),
        iterations=1,
        limit=None,
        start_date=None,
        end_date=None,
    )
    (obs,) = rule_evaluate(rule=rule, facts=facts(schedulers={q: [hourly]}), now=T0 + MIN)
    assert obs.above and obs.target.item == "h"
    assert obs.summary.startswith("4 runs not taken") and "America/New_York" in obs.summary


@pytest.mark.django_db
def test_pending_period_then_firing_and_a_blip_during_pending_starts_over():
    make_rule(for_seconds=60, channels=[make_channel()])  # saved: evaluate_rules reads it back
    bad, good = facts(signals(counts={"waiting": 50})), facts(signals(counts={"waiting": 1}))
    evaluate_rules(facts=bad, now=T0)
    evaluate_rules(facts=bad, now=T0 + 59 * S)
    assert Alert.objects.get().state == Alert.PENDING
    evaluate_rules(facts=good, now=T0 + 61 * S)  # cleared before firing: forgotten, nobody told
    assert not Alert.objects.exists()
    evaluate_rules(facts=bad, now=T0 + 70 * S)
    evaluate_rules(facts=bad, now=T0 + 129 * S)
    assert Alert.objects.get().state == Alert.PENDING
    evaluate_rules(facts=bad, now=T0 + 130 * S)
    alert = Alert.objects.get()
    assert alert.state == Alert.FIRING and alert.pending_since == T0 + 70 * S and alert.started_at == T0 + 130 * S
    assert Notification.objects.filter(kind="firing").count() == 1


@pytest.mark.django_db
def test_resolve_threshold_gives_hysteresis():
    make_rule(threshold=100, resolve_threshold=20, channels=[make_channel()])  # saved: evaluate_rules reads it back
    at = lambda n: facts(signals(counts={"waiting": n}))  # noqa: E731
    evaluate_rules(facts=at(150), now=T0)
    for i, n in enumerate((90, 101, 50, 21)):  # between the thresholds: still firing
        evaluate_rules(facts=at(n), now=T0 + (i + 1) * MIN)
        assert Alert.objects.get().state == Alert.FIRING
    evaluate_rules(facts=at(20), now=T0 + 10 * MIN)
    assert Alert.objects.get().state == Alert.RESOLVED
    assert Notification.objects.count() == 2


@pytest.mark.django_db
def test_keep_firing_for_rides_out_a_flap():
    make_rule(keep_firing_seconds=120, channels=[make_channel()])
    bad, good = facts(signals(counts={"waiting": 50})), facts(signals())
    evaluate_rules(facts=bad, now=T0)
    evaluate_rules(facts=good, now=T0 + 10 * S)
    evaluate_rules(facts=good, now=T0 + 100 * S)
    assert Alert.objects.get().state == Alert.FIRING
    evaluate_rules(facts=bad, now=T0 + 110 * S)  # back: the keep-firing clock starts over
    evaluate_rules(facts=good, now=T0 + 120 * S)
    evaluate_rules(facts=good, now=T0 + 200 * S)
    assert Alert.objects.get().state == Alert.FIRING
    evaluate_rules(facts=good, now=T0 + 240 * S)
    alert = Alert.objects.get()
    assert alert.state == Alert.RESOLVED and alert.resolved_at == T0 + 240 * S
    assert list(Notification.objects.order_by("id").values_list("kind", flat=True)) == ["firing", "resolved"]


@pytest.mark.django_db
def test_repeat_notifications_while_firing_and_resolved_can_be_turned_off():
    make_rule(repeat_minutes=30, notify_resolved=False, channels=[make_channel()])
    bad = facts(signals(counts={"waiting": 50}))
    for minutes in (0, 29, 30, 45, 61):
        evaluate_rules(facts=bad, now=T0 + minutes * MIN)
    evaluate_rules(facts=facts(signals()), now=T0 + 70 * MIN)
    rows = list(Notification.objects.order_by("id").values_list("kind", "created_at"))
    assert rows == [("firing", T0), ("repeat", T0 + 30 * MIN), ("repeat", T0 + 61 * MIN)]
    assert len({n.idempotency_key for n in Notification.objects.all()}) == 3


@pytest.mark.django_db
def test_targets_firing_together_are_grouped_into_one_notification_per_channel():
    ops, mail = make_channel("ops"), make_channel("mail")
    make_rule(queue_glob="orders-*", channels=[ops, mail])
    many = facts(
        *(signals(f"orders-{i}", counts={"waiting": 50}) for i in range(3)), signals("other", counts={"waiting": 50})
    )
    runs = evaluate_rules(facts=many, now=T0)
    assert Alert.objects.filter(state=Alert.FIRING).count() == 3  # "other" is out of scope
    assert runs[0].notifications == 2
    for channel in (ops, mail):
        (n,) = Notification.objects.filter(channel=channel)
        assert n.subject.startswith("[FIRING:3]")
        assert sorted(a["target"]["queue"] for a in n.payload["alerts"]) == ["orders-0", "orders-1", "orders-2"]
        assert n.payload["status"] == "firing" and n.payload["rule"]["kind"] == "backlog"


@pytest.mark.django_db
def test_two_monitors_after_a_failover_never_write_one_state_change_twice():
    """Both monitors read the rule's open alerts, then both apply the same observations: the
    compare-and-swap lets exactly one take each step."""
    rule = make_rule(channels=[make_channel()], repeat_minutes=5)
    bad = alert_rules.rule_evaluate(rule=rule, facts=facts(signals(counts={"waiting": 50})), now=T0)
    good = alert_rules.rule_evaluate(rule=rule, facts=facts(signals()), now=T0)
    for obs, now in ((bad, T0), (bad, T0 + 6 * MIN), (good, T0 + 7 * MIN)):
        view_a, view_b = load_open_alerts(rule), load_open_alerts(rule)
        a = apply_observations(rule=rule, observations=obs, open_alerts=view_a, silences=[], now=now)
        b = apply_observations(rule=rule, observations=obs, open_alerts=view_b, silences=[], now=now)
        assert len(a.steps) == 1 and b.steps == []
    assert list(Notification.objects.order_by("id").values_list("kind", flat=True)) == ["firing", "repeat", "resolved"]
    assert Alert.objects.count() == 1


@pytest.mark.django_db
def test_a_silence_records_the_alert_but_holds_notifications_until_it_ends():
    rule = make_rule(channels=[make_channel()])
    Silence.objects.create(
        connection="default",
        queue_glob="ord*",
        starts_at=T0 - MIN,
        ends_at=T0 + 10 * MIN,
        author="sam",
        comment="deploying <b>v2</b>",
    )
    bad = facts(signals(counts={"waiting": 50}), signals("billing", counts={"waiting": 50}))
    evaluate_rules(facts=bad, now=T0)
    orders, billing = Alert.objects.get(queue="orders"), Alert.objects.get(queue="billing")
    assert orders.state == billing.state == Alert.FIRING
    assert orders.silenced_by.startswith("silence by sam") and not billing.silenced_by
    assert [a["target"]["queue"] for n in Notification.objects.all() for a in n.payload["alerts"]] == ["billing"]
    evaluate_rules(facts=bad, now=T0 + 10 * MIN)  # the silence is over, still firing: tell now
    orders.refresh_from_db()
    assert orders.notified and not orders.silenced_by
    assert Notification.objects.filter(kind="firing").count() == 2
    assert rule.pk


@pytest.mark.django_db
def test_maintenance_window_across_a_daylight_saving_change():
    """01:00–04:00 Europe/Paris every day. On 2026-10-25 the clocks go back at 03:00 CEST, so
    that night's window lasts four real hours: 23:00 to 03:00 UTC."""
    make_rule(channels=[make_channel()])
    MaintenanceWindow.objects.create(
        name="nightly",
        cron="0 1 * * *",
        time_zone="Europe/Paris",
        duration_minutes=180,
        author="sam",
        comment="backups",
    )
    bad = facts(signals(counts={"waiting": 50}))
    utc = dt.UTC
    inside = dt.datetime(2026, 10, 25, 2, 30, tzinfo=utc)  # 03:30 CET, after the change: still inside
    evaluate_rules(facts=bad, now=inside)
    alert = Alert.objects.get()
    assert alert.state == Alert.FIRING and "nightly" in alert.silenced_by and not Notification.objects.exists()
    evaluate_rules(facts=bad, now=dt.datetime(2026, 10, 25, 3, 0, tzinfo=utc))  # 04:00 CET: over
    assert Notification.objects.filter(kind="firing").count() == 1
    # The summer night before: 01:00–04:00 CEST is 23:00–02:00 UTC.
    Notification.objects.all().delete()
    Alert.objects.all().delete()
    evaluate_rules(facts=bad, now=dt.datetime(2026, 10, 24, 1, 59, tzinfo=utc))
    assert not Notification.objects.exists()
    Alert.objects.all().delete()
    evaluate_rules(facts=bad, now=dt.datetime(2026, 10, 24, 2, 0, tzinfo=utc))
    assert Notification.objects.count() == 1


@pytest.mark.django_db
def test_an_alert_whose_queue_is_gone_resolves_but_not_while_its_connection_is_down_or_unread():
    make_rule(channels=[make_channel()])
    evaluate_rules(facts=facts(signals(counts={"waiting": 50})), now=T0)
    down = facts(connections={"default": ConnectionFacts(reachable=False, error="refused")})
    evaluate_rules(facts=down, now=T0 + MIN)
    unread = facts()
    unread.complete = False  # a monitor that just took over and has not read every queue yet
    evaluate_rules(facts=unread, now=T0 + 2 * MIN)
    assert Alert.objects.get().state == Alert.FIRING
    evaluate_rules(facts=facts(), now=T0 + 3 * MIN)  # reachable, every queue read, no "orders"
    alert = Alert.objects.get()
    assert alert.state == Alert.RESOLVED and alert.summary.startswith("no longer present")
    assert list(Notification.objects.order_by("id").values_list("kind", flat=True)) == ["firing", "resolved"]


@pytest.mark.django_db
def test_a_firing_alerts_changing_value_is_stored_at_most_once_a_minute():
    make_rule(kind="oldest_waiting", threshold=60)
    for seconds in (0, 5, 10):
        evaluate_rules(facts=facts(signals(counts={"waiting": 1}, oldest_age_s=100 + seconds)), now=T0 + seconds * S)
    alert = Alert.objects.get()
    assert alert.value_last == 100 and alert.observed_at == T0
    evaluate_rules(facts=facts(signals(counts={"waiting": 1}, oldest_age_s=160)), now=T0 + 60 * S)
    alert.refresh_from_db()
    assert alert.value_last == 160 and alert.summary == "oldest waiting job is 2 min 40 s old"
