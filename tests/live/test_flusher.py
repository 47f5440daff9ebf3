"""History written beside the monitor's loop (persistence.Flusher): one write at a time, built
on the loop thread, and nothing lost when the database refuses a write."""

from __future__ import annotations

import threading

import pytest

from dashboard.live.models import QueuePoint, StreamCursor
from dashboard.monitor import persistence
from dashboard.monitor.tracking import QueueState, now_ms
from queues.keys import QueueRef
from queues.rates import minute_of

pytestmark = pytest.mark.django_db(transaction=True)  # the write runs on another thread

Q = QueueRef("default", "bull", "flushed")


def test_a_write_runs_beside_the_loop_one_at_a_time_and_a_failed_one_is_retried(monkeypatch):
    minute = minute_of(now_ms())
    states = {Q: QueueState()}
    states[Q].series.bucket(minute).completed = 5
    states[Q].dirty_minutes.add(minute)
    flusher = persistence.Flusher("test")
    real_write, release = persistence.write, threading.Event()

    def refused(batch, *, monitor_name):
        release.wait(10)
        return False  # what write returns when the database refuses (it logs the error)

    monkeypatch.setattr(persistence, "write", refused)
    assert flusher.start(states, {Q: "1-0"})
    assert not states[Q].dirty_minutes  # in the batch now
    assert not flusher.start(states, {Q: "2-0"})  # the first write still runs: skipped
    release.set()
    flusher.settle(states)
    assert states[Q].dirty_minutes == {minute}  # refused: dirty again, nothing lost

    monkeypatch.setattr(persistence, "write", real_write)
    assert flusher.start(states, {Q: "2-0"})
    flusher.settle(states)
    assert not states[Q].dirty_minutes
    assert QueuePoint.objects.get(queue=Q.name, resolution=QueuePoint.MINUTE).completed == 5
    assert StreamCursor.objects.get(queue=Q.name).last_id == "2-0"


def test_a_busy_queues_current_minute_is_written_every_few_seconds_with_its_cursor(monkeypatch):
    """At 10,000 queues, writing every busy queue's current minute every second was thousands of
    rows a second: the background flush holds a queue whose only unwritten minute is the current
    one for a few seconds after its last write, and its cursor with it (stored counters and the
    cursor they count up to stay whole). A closed minute, or an explicit flush, is written at once."""
    clock = [minute_of(now_ms()) + 1_000]  # early in a minute
    monkeypatch.setattr(persistence, "now_ms", lambda: clock[0])
    minute = minute_of(clock[0])
    states = {Q: QueueState()}
    st = states[Q]
    st.series.bucket(minute).completed = 1
    st.dirty_minutes.add(minute)
    flusher = persistence.Flusher("test")

    def flush_in_background(cursor: str) -> None:
        assert flusher.start(states, {Q: cursor})
        flusher.settle(states)

    def stored() -> tuple[int, str]:
        point = QueuePoint.objects.get(queue=Q.name, resolution=QueuePoint.MINUTE, start=persistence.ms_to_dt(minute))
        return point.completed, StreamCursor.objects.get(queue=Q.name).last_id

    flush_in_background("1-0")
    assert stored() == (1, "1-0")
    clock[0] += 1_000
    st.series.bucket(minute).completed = 2
    st.dirty_minutes.add(minute)
    flush_in_background("2-0")  # a second later: held, counters and cursor alike
    assert stored() == (1, "1-0") and st.dirty_minutes == {minute}
    clock[0] += persistence.CURRENT_MINUTE_HOLD_MS
    flush_in_background("2-0")
    assert stored() == (2, "2-0") and not st.dirty_minutes

    clock[0] += 1_000
    st.series.bucket(minute).completed = 3
    st.dirty_minutes.add(minute)
    clock[0] = minute + 60_000 + 100  # the minute closed: written at once
    flush_in_background("3-0")
    assert stored() == (3, "3-0")

    st.series.bucket(clock[0]).completed = 4
    st.dirty_minutes.add(minute_of(clock[0]))
    assert persistence.flush(states, {Q: "4-0"}, monitor_name="test")  # explicit: never held
    assert StreamCursor.objects.get(queue=Q.name).last_id == "4-0"
