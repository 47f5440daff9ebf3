"""The state document (/metrics, alert rules) is rewritten while events flow, not only on full
ticks (written per 2 s tick, a scraper saw figures up to 2 s old). Real Node BullMQ 6.7
adds a flow and a plain job every 100 ms; the monitor's full tick is put out of reach (10 s), so
every document written during the load comes from the refreshes that follow events."""

from __future__ import annotations

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

NAME = "state-fresh"
LOAD_S = 4


def published() -> tuple[int, int] | None:
    """(taken_at, completed) of the queue's entry in the state document."""
    state = state_store.read_state(dash_redis.dashboard_redis()) or {"queues": []}
    entry = next((q for q in state["queues"] if q["name"] == NAME), None)
    return None if entry is None else (entry["taken_at"], entry["counts"]["completed"])


def test_the_state_document_is_rewritten_between_ticks_while_events_flow(live_setup, redis_url, settings, monkeypatch):
    from dashboard.monitor import tracking
    from queues.quiet import QuietReads

    monkeypatch.setattr(tracking, "QuietReads", lambda: QuietReads(quiet_s=600))  # never quiet
    settings.QUEUEWATCH_RECONCILE_MS = 600_000  # the periodic snapshot out of reach
    run_node("truth.mjs", "counts", redis_url, NAME)  # the Queue constructor writes its meta
    with monitor_thread(tick=10.0, name="fresh-monitor") as monitor:
        wait_for(lambda: published() is not None)  # the first full tick
        ticks = monitor.ticks
        documents: list[tuple[int, int]] = []
        with steady_flows(redis_url, NAME, LOAD_S) as load:
            while load.poll() is None:
                doc = published()
                if doc is not None and (not documents or doc != documents[-1]):
                    documents.append(doc)
                time.sleep(0.05)
        assert monitor.ticks == ticks, "a full tick fell inside the load; the test proves nothing"
        written = sorted({taken_at for taken_at, _ in documents})
        assert len(written) >= 3, documents  # with documents per tick only, none would be new
        assert documents[-1][1] > documents[0][1]  # and they carry the completions as they happen
