"""The leading monitor's cadence (``dashboard.monitor.cadence``), on a clock the test moves: the
order of a pass, ticks, the exact snapshot on its grid standing in for a tick, changes
published between ticks at most every 50 ms, the periodic jobs. The steps are the real
``Monitor``'s, with its reads of the monitored Redis recorded instead of made; no thread."""

from __future__ import annotations

import pytest

from dashboard.monitor.cadence import DIRTY_PUBLISH_INTERVAL, leader_schedule
from queues.cron import Job
from queues.keys import QueueRef

pytestmark = pytest.mark.django_db

Q = QueueRef("default", "bull", "orders")


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def recorded(live_setup, settings, monkeypatch):
    """A Monitor (tick 1 s, snapshot every 4 s) whose steps record what they would do: a
    discovery step, the refreshes (full or not, exact or not), the flushes, a periodic job."""
    from dashboard.monitor.loop import Monitor

    settings.QUEUEWATCH_RECONCILE_MS = 4000
    monitor = Monitor(tick=1.0, name="cadence-monitor")
    steps: list[str] = []

    def refresh(queues, *, full, exact, state=None):
        steps.append("snapshot" if exact else "tick" if full else f"changes {sorted(q.name for q in queues)}")

    monkeypatch.setattr(monitor, "discover", lambda cursors: steps.append("discovery"))
    monkeypatch.setattr(monitor, "refresh", refresh)
    monkeypatch.setattr(monitor, "start_flush", lambda: steps.append("flush"))
    monkeypatch.setattr(monitor, "periodic_jobs", lambda: [Job("alerts", lambda: steps.append("alerts"), every=5)])
    yield monitor, steps
    monitor.publisher.close()


def test_a_pass_runs_what_is_due_in_order_and_the_snapshot_is_that_moments_tick(recorded):
    monitor, steps = recorded
    clock = Clock()
    schedule = leader_schedule(monitor, {}, set(), clock=clock)
    assert monitor.snapshot_every == 4
    schedule.run_due()
    assert steps == ["discovery", "snapshot", "flush", "alerts"]
    seen = []
    for _ in range(9):
        clock.now += 1
        steps.clear()
        schedule.run_due()
        seen.append([s for s in steps if s in ("snapshot", "tick")])
    # t = 1..9: ticks, an exact snapshot instead every 4 s; never both in one pass
    assert seen == [["tick"], ["tick"], ["tick"], ["snapshot"], ["tick"], ["tick"], ["tick"], ["snapshot"], ["tick"]]
    assert monitor.ticks == 10
    assert steps == ["discovery", "tick", "flush"]  # at t = 9 (alerts ran at t = 5)


def test_between_two_steps_the_monitor_serves_its_watched_queues(recorded):
    """What ``Monitor._lead_loop`` passes as ``between``: run between two due steps, not before
    the first nor after the last, so a watched queue's events do not wait for every due step."""
    monitor, steps = recorded
    schedule = leader_schedule(monitor, {}, set(), clock=Clock())
    schedule.run_due(between=lambda: steps.append("serve"))
    # (the stall probe, not recorded here, runs between discovery and the snapshot)
    assert steps == ["discovery", "serve", "serve", "snapshot", "serve", "flush", "serve", "alerts"]


def test_a_snapshot_that_falls_behind_restarts_its_schedule(recorded):
    monitor, steps = recorded
    clock = Clock()
    schedule = leader_schedule(monitor, {}, set(), clock=clock)
    schedule.run_due()
    clock.now += 13.5  # snapshots were due at 4, 8 and 12 (a slow step held the loop)
    steps.clear()
    schedule.run_due()
    assert steps.count("snapshot") == 1 and "tick" not in steps
    for _ in range(3):
        clock.now += 1
        schedule.run_due()
    assert steps.count("snapshot") == 1 and steps.count("tick") == 3  # no catch-up at 14.5, 15.5, 16.5
    clock.now += 1
    schedule.run_due()
    assert steps.count("snapshot") == 2  # 4 s after the late one: its schedule restarted there


def test_changes_are_published_between_ticks_at_most_every_50_ms(recorded):
    monitor, steps = recorded
    clock = Clock()
    dirty: set[QueueRef] = set()
    schedule = leader_schedule(monitor, {}, dirty, clock=clock)
    dirty.add(Q)
    schedule.run_due()
    assert "changes ['orders']" not in steps and not dirty  # the snapshot published every queue
    dirty.add(Q)
    clock.now += 0.01
    steps.clear()
    schedule.run_due()
    assert steps == ["changes ['orders']"] and not dirty
    dirty.add(Q)
    clock.now += 0.01
    steps.clear()
    assert schedule.run_due() == [] and dirty  # coalesced: waits for the rest of the 50 ms
    assert schedule.seconds_until_next() == pytest.approx(DIRTY_PUBLISH_INTERVAL - 0.01)
    clock.now += DIRTY_PUBLISH_INTERVAL - 0.01
    schedule.run_due()
    assert steps == ["changes ['orders']"]
    assert schedule.seconds_until_next() == pytest.approx(1 - DIRTY_PUBLISH_INTERVAL - 0.01)  # nothing waits


def test_the_pass_stops_when_the_leader_lock_is_lost(recorded):
    monitor, steps = recorded
    schedule = leader_schedule(monitor, {}, set(), clock=Clock())
    monitor.lock.held = False
    assert schedule.run_due(keep_going=lambda: monitor.lock.held) == []
    assert steps == []
