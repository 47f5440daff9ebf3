"""The state document: every queue's latest figures as one JSON document in the dashboard Redis,
for the readers that must not read the monitored Redis themselves (/metrics, the health checks,
alert rules), and beside it the order document, what sorting the overview and the API list needs
of each queue (``dashboard.core.order_document``)."""

from __future__ import annotations

import json
import logging

from dashboard.core import dash_redis, order_document
from dashboard.core.dash_redis import DashboardRedis, DashboardRedisError
from dashboard.monitor.queue_state import QueueState, now_ms
from queues.keys import QueueRef
from queues.timings import QueueTimings

log = logging.getLogger("queuewatch.monitor")


def timings_totals(timings: QueueTimings) -> dict:
    """Per job name, cumulative wait and processing histograms since this monitor started
    leading, at the Prometheus bounds (``queues.timings.PROMETHEUS_LE_SECONDS``), for /metrics."""

    def histogram(h):
        return {"le": h.cumulative(), "count": h.count, "sum_ms": h.sum_ms}

    return {
        name: {"wait": histogram(t.wait), "processing": histogram(t.processing)}
        for name, t in sorted(timings.totals.items())
    }


def state_entry(st: QueueState, down: dict[str, str]) -> dict | None:
    """One queue's entry of the state document (None before its first figures), but for its
    ``timings`` (``timings_totals``), which ``StateDocument`` adds as JSON it keeps."""
    sig = st.signals
    if sig is None:
        return None
    entry = {
        **sig.snapshot.as_dict(),
        "is_dlq": sig.is_dlq,
        "rates_per_min": {
            "completed": sig.completed_per_min,
            "failed": sig.failed_per_min,
            "dead_letter": sig.dlq_growth_per_min,
            "stalled": sig.stalled_per_min,
            "attempt_failed": sig.attempt_failed_per_min,
        },
        "stalled_now": len(sig.stalled_now),
        "stall_failed_15m": sig.stall_failed_15m,
        "events_total": dict(st.totals),
        "duplicated_by_cause": dict(st.duplicated_by_cause),  # queues.duplicates
        "stream_gaps": st.gaps,
        # As the monitor last read CLIENT LIST; null when unknown (refused, or connection down).
        "workers": None if sig.workers is None or sig.snapshot.queue.connection in down else sig.workers,
    }
    return entry


class StateDocument:
    """The state document and its order document (``dashboard.core.order_document``), built so that
    their cost follows what changed: each queue's entries are serialised once per change of its
    figures (a refresh builds new signals; events move its totals) and kept as JSON text, and the
    documents are those texts joined. At 10,000 queues ``json.dumps`` of every entry on every
    write was most of a full tick."""

    def __init__(self) -> None:
        # queue -> (the signals they were built from, what else they show that events move,
        # the state entry's JSON); its figures for ordering are the order table's row
        self.entries: dict[QueueRef, tuple[object, tuple, str]] = {}
        self.order = order_document.OrderTable()
        # queue -> (its timings' ``counted`` when serialised, their JSON): the histograms per job
        # name are most of an entry and change only with events, not with each refresh.
        self.timings: dict[QueueRef, tuple[int, str]] = {}

    def reset(self) -> None:
        self.entries = {}
        self.timings = {}
        self.order = order_document.OrderTable()

    def _timings_json(self, q: QueueRef, st: QueueState) -> str:
        cached = self.timings.get(q)
        if cached is not None and cached[0] == st.timings.counted:
            return cached[1]
        text = json.dumps(timings_totals(st.timings))
        self.timings[q] = (st.timings.counted, text)
        return text

    def text_of(self, q: QueueRef, st: QueueState, down: dict[str, str]) -> str | None:
        """The queue's state entry as JSON (its order row set beside it); None before its first
        signals."""
        sig = st.signals
        if sig is None:
            return None
        moved = (tuple(st.totals.values()), tuple(st.duplicated_by_cause.values()), st.gaps, q.connection in down)
        cached = self.entries.get(q)
        if cached is not None and cached[0] is sig and cached[1] == moved:
            return cached[2]
        entry = state_entry(st, down)
        assert entry is not None  # the signals exist
        text = json.dumps(entry)[:-1] + ', "timings": ' + self._timings_json(q, st) + "}"
        self.order.set(q, order_document.order_values(entry))
        self.entries[q] = (sig, moved, text)
        return text

    def publish(
        self,
        dash: DashboardRedis,
        *,
        states: dict[QueueRef, QueueState],
        connection_names,
        down: dict[str, str],
        monitor_name: str,
    ) -> None:
        """Write the latest figures of every queue as one JSON document in the dashboard Redis,
        for readers that must not touch the monitored Redis themselves (Prometheus /metrics,
        health checks, alert rules), and what ordering needs of them as another (the overview's
        and the API list's order). Written once per tick (and between ticks while events flow),
        whatever the number of readers."""
        for gone in self.entries.keys() - states.keys():
            del self.entries[gone]
            self.order.drop(gone)
        for gone in self.timings.keys() - states.keys():
            del self.timings[gone]
        written = [(q, t) for q, st in states.items() if (t := self.text_of(q, st, down)) is not None]
        connections = {name: {"ok": name not in down, "error": down.get(name)} for name in connection_names}
        taken_at = now_ms()
        head = {"taken_at": taken_at, "monitor": monitor_name, "connections": connections}
        text = json.dumps(head)[:-1] + ', "queues": [' + ", ".join(t for _, t in written) + "]}"
        order_text = self.order.text(head, [q for q, _ in written])
        try:
            dash_redis.publish_state_text(dash, text, order_text=order_text, taken_at=taken_at, monitor=monitor_name)
        except DashboardRedisError:
            log.warning("%s: could not publish the state document", monitor_name)


def publish_state(
    dash: DashboardRedis,
    *,
    states: dict[QueueRef, QueueState],
    connection_names,
    down: dict[str, str],
    monitor_name: str,
) -> None:
    """The state document written once, without a cache kept between writes (``StateDocument``)."""
    StateDocument().publish(
        dash, states=states, connection_names=connection_names, down=down, monitor_name=monitor_name
    )
