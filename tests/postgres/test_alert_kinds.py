"""Every queue-level alert rule kind on a BullMQ-on-PostgreSQL queue, through a running monitor:
a queue real Node BullMQ 6.7 left with stalled, failed, waiting and due delayed jobs and no
worker (tests/node/pg_probes.mjs), and a queue whose worker fails jobs while the monitor watches
(tests/node/pg_work.mjs), and one whose jobs fail twice before completing. The monitor's
signals come from the PostgreSQL source (snapshots, events, probes, workers), and the rules fire
on them as on Redis queues; the Redis-server kinds (eviction policy, memory) do not apply to the
PostgreSQL connection and never fire on it."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from dashboard.alerts.models import Alert, AlertRule
from queues.connections import ConnectionSpec
from tests.support.alerting import make_rule
from tests.support.live import monitor_thread
from tests.support.redis_db import point_at
from tests.support.servers import run_node
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.node, pytest.mark.django_db(transaction=True)]

RULES = {
    "backlog": dict(kind="backlog", threshold=2),
    "failed": dict(kind="dlq_depth", threshold=0),
    "stalled": dict(kind="stalled_now", threshold=1),
    "dlq-growth": dict(kind="dlq_growth", threshold=0, window_minutes=1),
    "attempts": dict(kind="attempt_failures", threshold=0, window_minutes=1),
    "oldest-waiting": dict(kind="oldest_waiting", threshold=0.5),
    "no-workers": dict(kind="no_workers", threshold=0),
    "evicting": dict(kind="eviction_policy", threshold=0),
    "memory": dict(kind="memory", threshold=0),
}


def firing() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for alert in Alert.objects.filter(state=Alert.FIRING).select_related("rule"):
        out.setdefault(alert.rule.name, set()).add(alert.queue or f"<{alert.connection}>")
    return out


def test_queue_rule_kinds_fire_on_postgres_queues(live_setup, settings, redis_db, postgres_db):
    left = run_node("pg_probes.mjs", "stall", postgres_db.url, "left")
    assert left["counts"]["active"] == 2 and left["counts"]["failed"] == 1 and left["counts"]["waiting"] == 3
    run_node("pg_probes.mjs", "retries", postgres_db.url, "flaky", "1")  # there before the monitor: followed
    point_at(
        settings, ConnectionSpec("default", redis_db.url, ("bull",)), ConnectionSpec("pg", postgres_db.url, ("bullmq",))
    )
    settings.QUEUEWATCH_ALERT_INTERVAL_S = 0.5
    settings.QUEUEWATCH_WORKERS_INTERVAL_S = 0.5
    for name, fields in RULES.items():
        make_rule(name, connection="pg", **fields)
    with monitor_thread(tick=0.3, name="pg-alerts", lock_ttl_ms=2000):
        wait_for(lambda: {"backlog", "failed", "stalled", "oldest-waiting", "no-workers"} <= set(firing()), timeout=30)
        done = run_node("pg_work.mjs", postgres_db.url, "working", "8")  # every 4th job fails
        assert done["counts"]["failed"] == 2
        wait_for(lambda: "working" in firing().get("dlq-growth", set()), timeout=30)
        # Failed attempts that were retried: the probes read each job's attempt counters.
        flaky = run_node("pg_probes.mjs", "retries", postgres_db.url, "flaky", "4")
        assert flaky["counts"]["completed"] == 5
        wait_for(lambda: "flaky" in firing().get("attempts", set()), timeout=30)
        now = firing()
    # (the other queues' jobs wait a moment too, so they may fire backlog rules of their own meanwhile)
    for rule in ("backlog", "oldest-waiting", "no-workers"):
        assert "left" in now[rule], (rule, now[rule])
    assert now["stalled"] == {"left"}
    assert now["failed"] == {"left", "working"}
    assert now["attempts"] == {"flaky"}  # final failures (working's) are not retried attempts
    assert "evicting" not in now and "memory" not in now


def test_redis_server_rules_say_they_do_not_apply_to_a_postgres_connection(settings, redis_db, postgres_db):
    point_at(settings, ConnectionSpec("default", redis_db.url, ("bull",)), ConnectionSpec("pg", postgres_db.url))
    for kind in ("eviction_policy", "memory"):
        rule = AlertRule(name=kind, kind=kind, threshold=50, connection="pg")
        with pytest.raises(ValidationError) as raised:
            rule.clean()
        (message,) = raised.value.message_dict["connection"]
        assert "does not apply to connection “pg”" in message and "PostgreSQL connection" in message
        AlertRule(name=kind, kind=kind, threshold=50, connection="default").clean()  # a Redis one: fine
    AlertRule(name="backlog", kind="backlog", threshold=5, connection="pg").clean()  # queue kinds apply
