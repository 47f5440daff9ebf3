"""The state document: every queue's latest figures as one JSON document in the dashboard Redis,
for the readers that must not read the monitored Redis themselves (/metrics, the health checks,
alert rules), and beside it the order document, what sorting the overview and the API list needs
of each queue (``dashboard.core.order_document``)."""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Collection

from dashboard.core import fast_json, order_document, state_store
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
    figures (a refresh builds new signals; events move its totals) and kept as JSON text, and a
    write sends only the entries changed since the last one (``state_store``: the document is a
    hash, a field per queue). At 10,000 queues ``json.dumps`` of every entry on every write was
    most of a full tick, and then writing the whole 13 MB document twice a tick was."""

    def __init__(self) -> None:
        # queue -> (the signals they were built from, what else they show that events move,
        # the state entry's JSON); its figures for ordering are the order table's row
        self.entries: dict[QueueRef, tuple[object, tuple, str]] = {}
        self.order = order_document.OrderTable()
        # queue -> (its timings' ``counted`` when serialised, their JSON): the histograms per job
        # name are most of an entry and change only with events, not with each refresh.
        self.timings: dict[QueueRef, tuple[int, str]] = {}
        # What the last write left in the dashboard Redis: each queue's entry text (the very
        # object ``entries`` holds, so "unchanged" is an identity check) and its generation.
        self.sent: dict[QueueRef, str] = {}
        self.generation: str | None = None

    def reset(self) -> None:
        self.entries = {}
        self.timings = {}
        self.order = order_document.OrderTable()
        self.sent, self.generation = {}, None

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
        text = fast_json.dumps(entry)[:-1] + ',"timings":' + self._timings_json(q, st) + "}"
        self.order.set(q, order_document.monitor_order_values(entry))
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
        only: Collection[QueueRef] | None = None,
    ) -> None:
        """Write the latest figures of every queue to the dashboard Redis, for readers that must
        not touch the monitored Redis themselves (Prometheus /metrics, health checks, alert
        rules), and what ordering needs of them (the overview's and the API list's order).
        Written once per tick (and between ticks while events flow), whatever the number of
        readers: only the entries changed since the last write, or the whole document when the
        stored one is not the last write's.

        ``only``: just these queues' entries (and the head), not the order document; what a
        refresh of a few queues publishes at once, at a cost that follows them, not the fleet
        (looking at every entry and writing the order document is ~35 ms at 10,000 queues)."""
        if only is not None and self.generation is not None:
            self._publish_some(
                dash, only, states=states, connection_names=connection_names, down=down, monitor_name=monitor_name
            )
            return
        for gone in self.entries.keys() - states.keys():
            del self.entries[gone]
            self.order.drop(gone)
        for gone in self.timings.keys() - states.keys():
            del self.timings[gone]
        written = {q: t for q, st in states.items() if (t := self.text_of(q, st, down)) is not None}
        head = self._head(connection_names, down, monitor_name)
        order_text = self.order.text(head, list(written))
        generation = secrets.token_hex(8)
        try:
            if self.generation is None or not state_store.publish_changes(
                dash,
                head=head,
                changed={state_store.queue_field(q): t for q, t in written.items() if self.sent.get(q) is not t},
                removed=[state_store.queue_field(q) for q in self.sent.keys() - written.keys()],
                order_text=order_text,
                after=self.generation,
                generation=generation,
            ):
                entries = {state_store.queue_field(q): t for q, t in written.items()}
                state_store.publish_whole(
                    dash, head=head, entries=entries, order_text=order_text, generation=generation
                )
        except DashboardRedisError:
            self.generation = None  # what is stored is unknown now: the next write is whole
            log.warning("%s: could not publish the state document", monitor_name)
            return
        self.sent, self.generation = written, generation

    def _publish_some(
        self,
        dash: DashboardRedis,
        queues: Collection[QueueRef],
        *,
        states: dict[QueueRef, QueueState],
        connection_names,
        down: dict[str, str],
        monitor_name: str,
    ) -> None:
        texts = {q: t for q in queues if q in states and (t := self.text_of(q, states[q], down)) is not None}
        changed = {q: t for q, t in texts.items() if self.sent.get(q) is not t}
        if not changed:
            return
        generation = secrets.token_hex(8)
        try:
            written = state_store.publish_changes(
                dash,
                head=self._head(connection_names, down, monitor_name),
                changed={state_store.queue_field(q): t for q, t in changed.items()},
                removed=[],
                order_text=None,
                after=self.generation,
                generation=generation,
            )
        except DashboardRedisError:
            self.generation = None
            log.warning("%s: could not publish the state document", monitor_name)
            return
        if not written:  # the hash is not what the last write left: replaced whole
            self.generation = None
            self.publish(dash, states=states, connection_names=connection_names, down=down, monitor_name=monitor_name)
            return
        self.sent.update(changed)
        self.generation = generation

    @staticmethod
    def _head(connection_names, down: dict[str, str], monitor_name: str) -> dict:
        connections = {name: {"ok": name not in down, "error": down.get(name)} for name in connection_names}
        return {"taken_at": now_ms(), "monitor": monitor_name, "connections": connections}


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
