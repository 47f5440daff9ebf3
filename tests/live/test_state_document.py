"""The state document's entries are re-serialised only for what changed: a queue's per-job-name
timings (most of its entry) are kept as JSON until the monitor counts a new observation of them,
and what it publishes always equals the queue's current timings."""

from __future__ import annotations

import pytest

from dashboard.core import dash_redis
from dashboard.live.rates import build_signals
from dashboard.monitor.queue_state import QueueState
from dashboard.monitor.state_document import StateDocument, timings_totals
from queues.keys import QueueRef
from queues.rates import QueueSeries
from queues.snapshot import QueueSnapshot

Q = QueueRef("default", "bull", "timed")


def refreshed(st: QueueState, taken_at: int) -> None:  # what a refresh leaves: new signals
    snap = QueueSnapshot(queue=Q, counts={"waiting": 1}, paused=False, schedulers=0, taken_at=taken_at)
    st.signals = build_signals(snap, QueueSeries(), now_ms=taken_at)


@pytest.mark.django_db
def test_timings_are_published_as_counted_and_serialised_again_only_when_counted(private_redis):
    dash = dash_redis.dashboard_redis()
    st, doc = QueueState(), StateDocument()
    states = {Q: st}

    def published_timings() -> dict:
        doc.publish(dash, states=states, connection_names=["default"], down={}, monitor_name="m")
        (entry,) = dash_redis.read_state(dash)["queues"]
        return entry["timings"]

    refreshed(st, 1_000)
    st.timings.count(name="email", ts_ms=1_000, kind="wait", ms=40)
    assert published_timings() == timings_totals(st.timings) and published_timings()["email"]["wait"]["count"] == 1
    kept = doc.timings[Q][1]
    refreshed(st, 2_000)  # new figures, no new observation: the timings' JSON is reused
    assert published_timings()["email"]["wait"]["count"] == 1 and doc.timings[Q][1] is kept
    st.timings.count(name="email", ts_ms=2_000, kind="processing", ms=900)
    st.timings.count(name="sms", ts_ms=2_000, kind="wait", ms=5)
    refreshed(st, 3_000)
    assert published_timings() == timings_totals(st.timings)
    assert published_timings()["sms"]["wait"]["count"] == 1 and doc.timings[Q][1] is not kept
