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
