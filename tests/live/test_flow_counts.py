"""A `flows` queue's completed set, growing below its cap under continuous load, is counted
exactly from events. Real Node BullMQ 6.7: a flow (a parent and two children in the
same queue) and a plain job every 100 ms, all ``removeOnComplete: {count: 1000}``; the queue
never goes quiet (no quiet read) and the periodic snapshot is out of reach, so every figure
after the monitor's first read comes from events alone.

``bench/count_accuracy.py`` once showed such a queue 3 under the truth for seconds (a flow is 3
jobs). The monitor's figures are compared here at the same stream position as the truth, not at
the same instant: the test reads the completed set and the newest events-stream entry in one
MULTI, and the monitor records, as it publishes, the stream id it has applied up to; where the
two ids are equal, the counts must be equal."""
# Literal `bull:` keys kept: a monitor discovers every queue of its (whole, leased) database.

from __future__ import annotations

import json
import time

import pytest

from dashboard.core import dash_redis, state_store
from tests.support.live import monitor_thread, steady_flows
from tests.support.servers import node_available, run_node
from tests.support.waiting import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="needs Node.js and npm"),
]

NAME = "truth-flowsteady"
LOAD_S = 4


def published_completed() -> int | None:
    state = state_store.read_state(dash_redis.dashboard_redis()) or {"queues": []}
    entry = next((q for q in state["queues"] if q["name"] == NAME), None)
    return None if entry is None else entry["counts"]["completed"]


def test_a_flows_queue_below_its_cap_is_counted_exactly_from_events(live_setup, redis_url, settings, monkeypatch):
    from dashboard.monitor import tracking
    from queues.quiet import QuietReads
    from queues.sources.redis_node import RedisNodeSource

    monkeypatch.setattr(tracking, "QuietReads", lambda: QuietReads(quiet_s=600))  # never quiet
    settings.QUEUEWATCH_RECONCILE_MS = 600_000  # the periodic snapshot out of reach
    reads: list[int] = []
    real_snapshots = RedisNodeSource.snapshots
    monkeypatch.setattr(
        RedisNodeSource, "snapshots", lambda self, qs: reads.append(len(qs)) or real_snapshots(self, qs)
    )
    # What the monitor publishes, with the stream id it has applied up to (on its loop thread,
    # the only one that applies events, so the pair is consistent).
    seen: list[tuple[str | None, int]] = []
    real_signals = tracking.CountTracker.current_signals

    def signals(self, q, now):
        sig = real_signals(self, q, now)
        if sig is not None and q.name == NAME:
            seen.append((self.applied_cursors.get(q), sig.snapshot.counts["completed"]))
        return sig

    monkeypatch.setattr(tracking.CountTracker, "current_signals", signals)
    run_node("truth.mjs", "counts", redis_url, NAME)  # the Queue constructor writes its meta
    with monitor_thread(tick=0.2, name="flow-monitor") as monitor:
        wait_for(lambda: NAME in {q.name for q in monitor.applied_cursors} and published_completed() is not None)
        reads_before = len(reads)
        with steady_flows(redis_url, NAME, LOAD_S) as load:
            truth: dict[str, int] = {}  # newest stream id -> size of the completed set right after it
            while load.poll() is None:
                pipe = live_setup.pipeline(transaction=True)
                pipe.zcard(f"bull:{NAME}:completed").xrevrange(f"bull:{NAME}:events", count=1)
                size, newest = pipe.execute()
                if newest:
                    truth[newest[0][0].decode()] = size
                time.sleep(0.01)
            final = json.loads(load.stdout.read().strip().splitlines()[-1])["counts"]
        assert 3 * 10 <= final["completed"] < 1000, "a growing set, below its cap"
        during = [
            (cursor, counted, truth[cursor]) for cursor, counted in list(seen) if cursor in truth and truth[cursor] > 0
        ]
        assert len(during) >= 5, (
            f"too few figures published at a stream position the test also read ({len(seen)} published)"
        )
        wrong = [d for d in during if d[1] != d[2]]
        assert not wrong, f"published (stream id, completed, truth) differ: {wrong[:5]} of {len(during)}"
        try:
            wait_for(lambda: published_completed() == final["completed"], timeout=15)
        except AssertionError:
            raise AssertionError(
                f"published {published_completed()} completed, BullMQ says {final['completed']}"
            ) from None
        assert len(reads) == reads_before, "no exact read of the queue: the figures come from events alone"
