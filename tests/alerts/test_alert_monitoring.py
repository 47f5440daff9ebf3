"""The monitor-side glue: facts for the Redis rules from the monitor and its health report,
and the daily digest written once per day whatever the number of monitors."""

from __future__ import annotations

import datetime as dt

import pytest

from dashboard.alerts import monitoring
from dashboard.alerts.engine import evaluate_rules
from dashboard.alerts.models import Notification
from dashboard.health.checks import ConnectionHealth, HealthReport
from queues import health
from queues.alert_rules import Facts
from tests.support.alerting import T0, facts, make_channel, make_rule, signals

pytestmark = pytest.mark.django_db


def report(*results) -> HealthReport:
    return HealthReport(
        checked_at=0,
        connections=[ConnectionHealth("default", "redis://…", list(results))],
        state_taken_at=None,
        state_note="",
    )


def test_redis_facts_come_from_the_monitor_and_the_last_health_report():
    r = report(
        health.CheckResult("redis.eviction_policy", health.FAIL, "default", "…", details={"policy": "allkeys-lru"}),
        health.CheckResult("redis.memory", health.PASS, "default", "…", details={"used_memory": 80, "maxmemory": 100}),
    )
    got = monitoring.connection_facts(names=["default", "cache"], down={"cache": "Connection refused"}, report=r)
    assert (got["default"].reachable, got["default"].eviction_policy, got["default"].used_memory) == (
        True,
        "allkeys-lru",
        80,
    )
    assert (got["cache"].reachable, got["cache"].error) == (False, "Connection refused")
    unknown = report(
        health.CheckResult("redis.eviction_policy", health.UNKNOWN, "default", "…", details={"policy": None})
    )
    assert monitoring.connection_facts(names=["default"], down={}, report=unknown)["default"].eviction_policy is None


def test_eviction_rule_fires_from_a_health_report_and_queue_rules_skip_a_down_connection():
    channel = make_channel()
    make_rule("evict", kind="eviction_policy", channels=[channel])
    make_rule("backlog", threshold=1, channels=[channel])
    r = report(
        health.CheckResult("redis.eviction_policy", health.FAIL, "default", "…", details={"policy": "volatile-lru"})
    )
    conns = monitoring.connection_facts(names=["default"], down={"default": "timeout"}, report=r)
    evaluate_rules(facts=Facts(queues=[signals(counts={"waiting": 9})], connections=conns), now=T0)
    # Down: the eviction policy cannot be re-checked and queue figures are stale, so neither fires.
    assert not Notification.objects.exists()
    conns = monitoring.connection_facts(names=["default"], down={}, report=r)
    evaluate_rules(facts=Facts(queues=[signals(counts={"waiting": 9})], connections=conns), now=T0)
    subjects = sorted(Notification.objects.values_list("subject", flat=True))
    assert subjects == ["[FIRING:1] backlog — default/orders", "[FIRING:1] evict — connection “default”"]


def test_the_reachability_rule_watches_a_non_redis_kind_by_its_own_check():
    """A connection of the in-memory kind: the reachability rule judges it with the kind's own
    check (``memory.reachable``) and names no Redis; the Redis settings rules leave it alone,
    since its kind reports no such check."""
    from queues.alert_kinds import KINDS
    from tests.support.memory_backend import REACHABLE  # declares the kind's checks

    channel = make_channel()
    down_rule = make_rule("down", kind="redis_unreachable", channels=[channel])
    memory_rule = make_rule("mem", kind="memory", threshold=1, channels=[channel])
    sources = {"shop": "memory", "default": "redis"}
    names = ["default", "shop"]
    assert health.reachability_kind("memory") == REACHABLE
    assert health.check_connection_reachable("shop", "offline", source="memory").kind == REACHABLE

    down = {"shop": "the store is offline"}
    conns = monitoring.connection_facts(names=names, down=down, report=None, sources=sources)
    assert conns["shop"].source == "memory" and not conns["shop"].reachable
    observed = KINDS["memory"].observe(rule=memory_rule, facts=Facts(queues=[], connections=conns), now=T0)
    assert [o.target.connection for o in observed] == ["default"]  # a Redis connection without maxmemory
    evaluate_rules(facts=Facts(queues=[], connections=conns), now=T0)
    notes = list(Notification.objects.values_list("subject", "payload"))
    assert [subject for subject, _ in notes] == ["[FIRING:1] down — connection “shop”"]
    assert "Redis" not in str(notes) and "the store is offline" in str(notes)

    back = monitoring.connection_facts(names=names, down={}, report=None, sources=sources)
    evaluate_rules(facts=Facts(queues=[], connections=back), now=T0)
    assert sorted(Notification.objects.values_list("subject", flat=True)) == [
        "[FIRING:1] down — connection “shop”",
        "[RESOLVED:1] down — connection “shop”",
    ]
    assert down_rule.alerts.count() == 1


def test_digest_is_written_once_per_day_to_the_named_channels():
    daily, other = make_channel("daily"), make_channel("other")
    make_rule(channels=[other])
    evaluate_rules(facts=facts(signals(counts={"waiting": 50})), now=T0)
    Notification.objects.all().delete()
    at = T0 + dt.timedelta(hours=2)
    assert monitoring.write_digest(now=at, channel_names=["daily"]) == 1
    assert monitoring.write_digest(now=at + dt.timedelta(minutes=1), channel_names=["daily"]) == 1  # a second monitor
    (n,) = Notification.objects.all()
    assert n.channel == daily and n.kind == Notification.DIGEST
    assert n.subject == "Queuewatch digest: 1 alert in the last 24 h, 1 firing now"
    assert n.payload["alerts"][0]["target"]["queue"] == "orders"
    assert monitoring.write_digest(now=at, channel_names=[]) == 0
