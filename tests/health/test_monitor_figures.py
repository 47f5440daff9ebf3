"""One home for the queue figures: the leading monitor hands the health checks the figures it
keeps, and the checks read only what it does not hold (a full exact read of every
queue once a minute was ~11 commands/s at 50 queues). Without a monitor they read for
themselves (``check_queues``, the health page: tests/health/test_check_queues.py)."""

from __future__ import annotations

import time

import pytest

from queues.health import FAIL, PASS
from queues.redis.health_checks import run_checks
from queues.snapshot import COUNT_STATES, QueueSnapshot
from tests.support.health import make_queue


def _result(results, kind, queue):
    found = [r for r in results if r.kind == kind and r.queue == queue]
    assert len(found) == 1, [r.as_dict() for r in results]
    return found[0]


def _stored_result(kind, queue) -> dict:
    """A result of the report the monitor's run stored (the health page and /metrics read it)."""
    from dashboard.core import dash_redis
    from dashboard.health.checks import read_stored

    report = read_stored(dash_redis.dashboard_redis())
    found = [r for c in report["connections"] for r in c["results"] if r["kind"] == kind and r["queue"] == queue]
    assert len(found) == 1, report
    return found[0]


def _paused_with_backlog(q) -> QueueSnapshot:
    """Figures that differ from the queue's keys (which say: not paused, nothing waiting), so
    a result shows which of the two it judged."""
    counts = dict.fromkeys(COUNT_STATES, 0)
    counts["waiting"] = 3
    return QueueSnapshot(queue=q, counts=counts, paused=True, schedulers=0)


def test_checks_judge_the_figures_they_are_given_and_snapshot_only_the_other_queues(private_redis):
    given, other = make_queue(private_redis, "given"), make_queue(private_redis, "other")
    private_redis.config_resetstat()
    results = run_checks(
        private_redis, [given, other], None, int(time.time() * 1000), snapshots={given: _paused_with_backlog(given)}
    )
    assert _result(results, "queue.paused", "given").status == FAIL
    assert _result(results, "queue.paused", "given").details["backlog"] == 3
    assert _result(results, "queue.paused", "other").status == PASS
    stats = private_redis.info("commandstats")
    # One snapshot read (two LLENs: wait and active; the legacy paused list has no tail, so its
    # length is not read): the other queue's.
    assert stats["cmdstat_llen"]["calls"] == 2
    # Finished sets far below the retention check's count threshold: their oldest job is not
    # read. The only ZRANGEs are the snapshot's two ends of the other queue's prioritized set.
    assert stats["cmdstat_zrange"]["calls"] == 2


@pytest.mark.django_db
def test_the_monitor_hands_its_own_figures_to_the_checks(private_redis):
    from dashboard.monitor.loop import Monitor

    q = make_queue(private_redis, "orders")
    monitor = Monitor(tick=0.3, name="figures-monitor")
    monitor.tracker.add_queues([q])
    monitor.tracker.states[q].snapshot = _paused_with_backlog(q)  # as its last refresh left them
    monitor.run_health_checks()
    assert _stored_result("queue.paused", "orders")["status"] == FAIL
    # Between runs the monitor keeps only what the alert rules read: the server settings.
    assert monitor.health_report.results and all(r.check.alert_facts for r in monitor.health_report.results)


@pytest.mark.django_db
def test_the_scheduled_run_works_beside_the_loop_one_at_a_time(private_redis, monkeypatch):
    """At 10,000 queues a run took seconds and every tick behind it started that much late: the
    schedule starts the run on a thread of its own and returns; a run still working is not
    started again. Its figures are the moment's it was started at."""
    import threading

    from dashboard.health import checks as health_checks
    from dashboard.monitor.loop import Monitor

    q = make_queue(private_redis, "orders")
    monitor = Monitor(tick=0.3, name="figures-monitor")
    monitor.tracker.add_queues([q])
    monitor.tracker.states[q].snapshot = _paused_with_backlog(q)
    release, runs = threading.Event(), []
    real_run = health_checks.run_and_store

    def held_run(**kwargs):  # the real run, held until the test lets it finish
        runs.append(threading.current_thread().name)
        release.wait(10)
        return real_run(**kwargs)

    monkeypatch.setattr(health_checks, "run_and_store", held_run)
    assert monitor.periodic.start_health_checks() is True  # returned while the run is held
    monitor.tracker.states[q].snapshot = None  # what changes after the start does not reach it
    assert monitor.periodic.start_health_checks() is False  # one at a time
    release.set()
    monitor.periodic._health_run.result(10)
    assert len(runs) == 1 and runs[0] != threading.current_thread().name
    assert _stored_result("queue.paused", "orders")["status"] == FAIL
