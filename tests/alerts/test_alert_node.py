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
    assert "runs not taken by a worker (every 1 s)" in alert.summary
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


def test_a_crowd_of_finished_schedulers_hides_no_missed_run_from_the_alert_the_page_or_the_api(
    settings, redis_prefix, client
):
    """1,100 finished schedulers (copies of one real BullMQ finished, each with its own last
    iteration) score older than a live scheduler whose run is missed: the alert still sees that
    one, and the schedulers page and the API reach it on a later page."""
    from django.contrib.auth.models import User
    from django.urls import reverse

    from tests.support.accounts import token_for

    point_at(settings, redis_prefix.spec())
    queue = redis_prefix.queue("crowd")
    r = redis_prefix.client
    done = run_node("finished_schedulers.mjs", redis_prefix.url, "crowd", prefix=redis_prefix.prefix)
    limited = next(s for s in done["schedulers"] if s["key"] == "limited")
    definition = r.hgetall(queue.key("repeat:limited"))
    last_run = r.hgetall(queue.job_key(f"repeat:limited:{limited['next']}"))
    assert definition and last_run
    now = dt.datetime.now(dt.UTC)
    base = int(now.timestamp() * 1000) - 2 * 86_400_000
    pipe = r.pipeline(transaction=False)
    for i in range(1100):
        sid, score = f"done-{i:04}", base + i
        pipe.hset(queue.key(f"repeat:{sid}"), mapping=definition)
        pipe.hset(queue.job_key(f"repeat:{sid}:{score}"), mapping=last_run)
        pipe.zadd(queue.key("repeat"), {sid: score})
    pipe.execute()
    run_node(
        "toolbox.mjs",
        "schedule",
        redis_prefix.url,
        "crowd",
        "late",
        '{"every": 60000}',
        '{"name": "late"}',
        prefix=redis_prefix.prefix,
    )
    r.zadd(queue.key("repeat"), {"late": int(now.timestamp() * 1000) - 86_400_000})  # a day of runs missed

    make_rule("missed runs", kind="scheduler_missed", threshold=30, channels=[make_channel()])
    evaluate_queue(queue, now)
    assert list(Alert.objects.filter(state=Alert.FIRING).values_list("item", flat=True)) == ["late"]

    total = r.zcard(queue.key("repeat"))
    assert total == 1104  # the copies, limited, ending, new-year, late
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token_for(User.objects.create_user('reader', password='pw'))}"}
    api = client.get(reverse("api_queue", args=redis_prefix.args("crowd")), {"schedulers_page": 12}, **auth).json()
    assert api["schedulers_page"] == {"page": 12, "per_page": 100, "total": total}
    late = [s for s in api["schedulers_list"] if s["id"] == "late"]
    assert late and late[0]["finished"] is False
    client.force_login(User.objects.get(username="reader"))
    first = client.get(reverse("queue_schedulers", args=redis_prefix.args("crowd"))).content.decode()
    assert "Schedulers 1–100 of 1104" in first and "<code>late</code>" not in first
    page = client.get(reverse("queue_schedulers", args=redis_prefix.args("crowd")), {"page": 12}).content.decode()
    assert "Schedulers 1101–1104 of 1104" in page and "<code>late</code>" in page
