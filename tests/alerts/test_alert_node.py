"""Alert rules on Redis state written by real Node BullMQ 6.7 (time passed as ``now``):

* a missed-schedule alert on a job scheduler whose worker stopped: while the worker ran, the
  scheduler kept moving on (no alert); once it stopped, the run that was due is never taken
  and the rule fires, with runs counted from the interval; a worker back resolves it;
* a missed-schedule alert on schedulers nobody worked on resolves once a worker has taken
  their last iterations and BullMQ has finished them (limit reached, end date passed), though
  their entries stay with a score in the past;
* a backlog rule that counts delayed jobs already due (nobody promoted them: no worker).
"""

from __future__ import annotations

import datetime as dt

import pytest

from dashboard.alerts import monitoring
from dashboard.alerts.models import Alert, Notification
from dashboard.connections.registry import get_registry
from dashboard.live.rates import build_signals
from queues.keys import QueueRef
from queues.rates import QueueSeries
from tests.support.alerting import make_channel, make_rule
from tests.support.redis_db import app_on, point_at
from tests.support.servers import node_available, run_node

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="needs node and npm"),
]


@pytest.fixture
def node_db(settings, redis_url):
    with app_on(settings, redis_url) as url:
        yield url


def evaluate_queue(queue: QueueRef, now: dt.datetime):
    """What the monitor does each evaluation, for one queue: snapshot, signals, rules."""
    registry = get_registry()
    (snap,) = registry.source(queue.connection).snapshots([queue])
    sig = build_signals(snap, QueueSeries(), now_ms=int(now.timestamp() * 1000))
    return monitoring.evaluate(signals=[sig], registry=registry, down={}, report=None, now=now)


def test_missed_run_of_a_real_bullmq_scheduler_fires_and_resolves_when_a_worker_is_back(node_db):
    url = node_db
    queue = QueueRef("default", "bull", "reports")
    make_rule("missed runs", kind="scheduler_missed", threshold=30, channels=[make_channel()])

    result = run_node("scheduler.mjs", url, "reports", "3")
    assert result["processed"] >= 2, result  # the worker did take runs while it was up
    stopped_at = dt.datetime.now(dt.UTC)

    def evaluate(now):
        return evaluate_queue(queue, now)

    evaluate(stopped_at)  # right after the worker stopped: within the grace period
    assert not Alert.objects.exists()

    later = stopped_at + dt.timedelta(minutes=2)
    evaluate(later)
    alert = Alert.objects.get(state=Alert.FIRING)
    assert (alert.queue, alert.item) == ("reports", "every-second")
    assert "runs not taken by a worker (every 1000 ms)" in alert.summary
    assert 90 <= alert.value_last <= 125  # seconds since the first run nobody took
    # The cron scheduler's next run is in the future (scheduler.mjs: 1 January): not missed.
    # (An hourly pattern made this test fail whenever its two minutes crossed the hour.)
    assert not Alert.objects.filter(item="new-year").exists()
    (n,) = Notification.objects.all()
    assert n.payload["alerts"][0]["target"]["item"] == "every-second"

    # A worker comes back: BullMQ moves the scheduler on, and the alert resolves.
    run_node("scheduler.mjs", url, "reports", "2")
    evaluate(dt.datetime.now(dt.UTC))
    alert.refresh_from_db()
    assert alert.state == Alert.RESOLVED
    assert list(Notification.objects.order_by("id").values_list("kind", flat=True)) == ["firing", "resolved"]


def test_missed_run_alert_resolves_when_bullmq_finishes_the_scheduler(settings, redis_prefix):
    point_at(settings, redis_prefix.spec())
    queue = redis_prefix.queue("ticker")
    make_rule("missed runs", kind="scheduler_missed", threshold=30, channels=[make_channel()])

    # Scheduled, nobody works: their first runs are missed.
    run_node("finished_schedulers.mjs", redis_prefix.url, "ticker", "schedule", prefix=redis_prefix.prefix)
    evaluate_queue(queue, dt.datetime.now(dt.UTC) + dt.timedelta(minutes=2))
    firing = {a.item: a for a in Alert.objects.filter(state=Alert.FIRING)}
    assert set(firing) == {"limited", "ending"}  # new-year's one run is months away

    # A worker takes every iteration until BullMQ stops: limit 2 reached, end date passed.
    result = run_node("finished_schedulers.mjs", redis_prefix.url, "ticker", "work", prefix=redis_prefix.prefix)
    assert result["processed"]["limited"] == 2, result
    later = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=2)  # their last runs long past
    evaluate_queue(queue, later)
    for alert in firing.values():
        alert.refresh_from_db()
        assert alert.state == Alert.RESOLVED, (alert.item, alert.summary)
    evaluate_queue(queue, later + dt.timedelta(minutes=5))
    assert not Alert.objects.exclude(state=Alert.RESOLVED).exists()


def test_backlog_can_count_delayed_jobs_already_due(node_db):
    queue = QueueRef("default", "bull", "mailer")
    result = run_node("delayed.mjs", node_db, "mailer", "4", "60000")
    assert result["counts"]["delayed"] == 4 and result["counts"]["waiting"] == 0
    make_rule("plain backlog", queue_glob="mailer", threshold=2)
    make_rule("backlog incl. due", queue_glob="mailer", threshold=2, include_due_delayed=True)
    now = dt.datetime.now(dt.UTC)
    evaluate_queue(queue, now)  # not due yet
    assert not Alert.objects.exists()
    evaluate_queue(queue, now + dt.timedelta(minutes=2))  # due, and no worker promoted them
    (alert,) = Alert.objects.all()
    assert alert.rule.name == "backlog incl. due" and alert.state == Alert.FIRING
    assert alert.summary == "4 jobs waiting (incl. 4 delayed jobs already due)"
