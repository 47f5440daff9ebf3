"""``QUEUEWATCH_TIMINGS``: on, the tracker times jobs from their
events; off, the job clock is not run at all (what bench/redis_load.py compares the monitor's CPU
against)."""

from __future__ import annotations

import pytest

from dashboard.connections.registry import get_registry
from dashboard.monitor.tracking import CountTracker
from queues.events import Event
from queues.keys import QueueRef

Q = QueueRef("default", "bull", "timed")


def events() -> list[Event]:
    return [
        Event(Q, "1000-0", "added", {"jobId": "1", "name": "send"}),
        Event(Q, "1200-0", "active", {"jobId": "1", "prev": "waiting"}),
        Event(Q, "1700-0", "completed", {"jobId": "1", "returnvalue": "null"}),
    ]


@pytest.mark.parametrize("on", [True, False])
def test_the_switch_runs_the_job_clock_or_not(settings, scratch_queues, on):
    settings.QUEUEWATCH_TIMINGS = on
    tracker = CountTracker(get_registry())
    tracker.add_queues([Q])
    tracker.apply_events(events())
    totals = tracker.states[Q].timings.totals
    if on:
        assert totals["send"].wait.count == 1 and totals["send"].processing.count == 1
        assert totals["send"].processing.percentile(0.5) == pytest.approx(500, rel=0.05)
    else:
        assert totals == {}
