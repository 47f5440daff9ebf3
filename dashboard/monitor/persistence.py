"""Persistence: the leader's minute points and stream cursors in the database.

Counters and cursors are written in one transaction, so a standby that takes over resumes
exactly after the last events whose counts were stored: nothing is counted twice or lost.
Roll-up into hours and pruning are in ``dashboard.live.history``.
"""

from __future__ import annotations

import datetime as dt
import logging
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from django.db import close_old_connections, transaction

from dashboard.live import timing_points
from dashboard.live.models import COUNTER_POINTS, CURSORS, GAUGE_POINTS, POINT_KEY, QueuePoint, StreamCursor
from dashboard.live.rates import stored_series
from dashboard.monitor.tracking import RECONCILE_MINUTES, QueueState, now_ms
from queues.keys import QueueRef
from queues.rates import COUNTERS, Minute, minute_of
from queues.snapshot import waiting_jobs

log = logging.getLogger("queuewatch.monitor")


def ms_to_dt(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


def load_cursors() -> dict[QueueRef, str]:
    """Where the last leader's counting stopped, per queue."""
    close_old_connections()
    return {QueueRef(c.connection, c.prefix, c.queue): c.last_id for c in StreamCursor.objects.all()}


def restore_series(states: dict[QueueRef, QueueState], queues: list[QueueRef]) -> None:
    """Recent minute counters of these queues from the database, in one query."""
    if not queues:
        return
    # From the start of the minute RECONCILE_MINUTES + 1 back: every minute the rates can use.
    since = ms_to_dt(minute_of(now_ms()))
    for q, series in stored_series(queues, now=since, minutes=RECONCILE_MINUTES + 1).items():
        states[q].series.minutes.update(series.minutes)
    timing_points.restore({q: states[q].timings for q in queues}, now_ms=now_ms())


@dataclass
class Batch:
    """One flush's rows, built on the leader's loop thread (a consistent view of counters and
    cursors), written by ``write`` (possibly on another thread). ``dirty`` and ``timing_dirty``
    say which minutes it holds, to mark them dirty again if the write fails."""

    counters_only: list[tuple] = field(default_factory=list)  # rows of COUNTER_POINTS
    with_gauges: list[tuple] = field(default_factory=list)  # rows of GAUGE_POINTS
    timing_rows: list[tuple] = field(default_factory=list)  # rows of timing_points.UPSERT
    cursor_rows: list[tuple] = field(default_factory=list)  # rows of CURSORS
    cursors: dict[QueueRef, str] = field(default_factory=dict)  # the cursors its rows hold
    dirty: dict[QueueRef, set[int]] = field(default_factory=dict)
    timing_dirty: dict[QueueRef, set[int]] = field(default_factory=dict)

    def restore(self, states: dict[QueueRef, QueueState]) -> None:
        """The write failed: its minutes are dirty again, for the next flush to retry (not
        held back: nothing of them was stored)."""
        for q, minutes in self.dirty.items():
            if q in states:
                states[q].dirty_minutes |= minutes
                states[q].stored_at = 0
        for q, minutes in self.timing_dirty.items():
            if q in states:
                states[q].timings.dirty |= minutes
                states[q].stored_at = 0


def held_back(st: QueueState, *, now: int, hold_ms: int) -> bool:
    """Whether a queue whose only unwritten minute is the current one, written less than
    ``hold_ms`` ago, waits for a later flush. The current minute of a busy queue changes at
    every event; writing it every second was thousands of rows a second at 10,000 queues, for
    history that is kept by the minute."""
    current = minute_of(now)
    return (
        now - st.stored_at < hold_ms
        and all(m >= current for m in st.dirty_minutes)
        and all(m >= current for m in st.timings.dirty)
    )


def collect(
    states: dict[QueueRef, QueueState],
    cursors: dict[QueueRef, str],
    written: dict[QueueRef, str] | None = None,
    *,
    hold_current_ms: int = 0,
) -> Batch:
    """Rows for the dirty minutes (counters, gauges, per-job-name timings) and the applied
    stream cursors; the minutes are no longer dirty (``Batch.restore`` if the write fails). A
    minute carries gauges if it is the minute of the queue's latest snapshot, counters only
    otherwise. ``written``: the cursors already stored, left out (at 10,000 queues, writing
    every cursor every second was most of a flush, though only queues with events move theirs).
    ``hold_current_ms``: queues ``held_back`` keep everything for a later flush, their cursor
    too, so what is stored of a queue (counters and the cursor they count up to) stays whole."""
    batch = Batch()
    now = now_ms()
    held: set[QueueRef] = set()
    for q, st in states.items():
        if hold_current_ms and held_back(st, now=now, hold_ms=hold_current_ms):
            held.add(q)
            continue
        if st.dirty_minutes or st.timings.dirty:
            st.stored_at = now
        snap = st.snapshot
        for m in sorted(st.dirty_minutes):
            b = st.series.minutes.get(m, Minute())
            row = (q.connection, q.prefix, q.name, QueuePoint.MINUTE, ms_to_dt(m), *(getattr(b, c) for c in COUNTERS))
            if snap is not None and minute_of(snap.taken_at) == m:
                c = snap.counts
                gauges = (waiting_jobs(c), c["active"], c["delayed"], c["prioritized"], c["failed"])
                batch.with_gauges.append((*row, *gauges, len(st.stalled_now), snap.oldest_waiting_age_ms))
            elif any(row[len(POINT_KEY) :]):
                # A past minute re-counted (late events, reconciliation): keep its gauges.
                # (All-zero minutes are not written: counters never go down.)
                batch.counters_only.append(row)
        batch.timing_rows += timing_points.dirty_rows(q, st.timings)
        if st.dirty_minutes:
            batch.dirty[q] = set(st.dirty_minutes)
            st.dirty_minutes.clear()
        if st.timings.dirty:
            batch.timing_dirty[q] = set(st.timings.dirty)
            st.timings.dirty.clear()
    batch.cursors = {
        q: cid for q, cid in cursors.items() if q not in held and (written is None or written.get(q) != cid)
    }
    batch.cursor_rows = [(q.connection, q.prefix, q.name, cid) for q, cid in batch.cursors.items()]
    return batch


def write(batch: Batch, *, monitor_name: str) -> bool:
    """Write one batch in one transaction; whether it was written."""
    try:
        with transaction.atomic():
            COUNTER_POINTS.write(batch.counters_only)
            GAUGE_POINTS.write(batch.with_gauges)
            timing_points.save(batch.timing_rows)
            CURSORS.write(batch.cursor_rows)
    except Exception:
        log.exception("%s: flushing history failed; will retry", monitor_name)
        return False
    return True


def flush(states: dict[QueueRef, QueueState], cursors: dict[QueueRef, str], *, monitor_name: str) -> bool:
    """Write dirty minutes and the applied stream cursors in one transaction, now. Returns
    whether it was written (on failure the minutes stay dirty and the next flush retries)."""
    batch = collect(states, cursors)
    if write(batch, monitor_name=monitor_name):
        return True
    batch.restore(states)
    return False


# How often the background flush writes a queue's current minute (its closed minutes and
# explicit flushes are written at once): the minute's stored counters trail the live ones by
# at most this much, and the pages' initial rates come from them.
CURRENT_MINUTE_HOLD_MS = 5_000


class Flusher:
    """Writes batches on a thread of its own, one at a time, so the leader's loop never waits
    for the database: a write took 35 ms typically and up to 240 ms on a loaded machine, and
    every live update behind it waited as long (bench/live_latency.py). The batch is still
    built on the loop thread, so counters and cursors stay consistent with each other; while a
    write runs, the next flush is skipped and its minutes stay dirty for the one after."""

    def __init__(self, monitor_name: str):
        self.monitor_name = monitor_name
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flush")
        self._inflight: tuple[Batch, Future] | None = None
        self.written: dict[QueueRef, str] = {}  # the cursors this term's writes stored

    def reset(self) -> None:
        """A new term: what an earlier term stored may since have moved (another leader)."""
        self.written = {}

    def start(self, states: dict[QueueRef, QueueState], cursors: dict[QueueRef, str]) -> bool:
        """Start writing what is dirty now, unless the previous write still runs. Returns
        whether a write was started."""
        if self._inflight is not None and not self._inflight[1].done():
            return False
        self.settle(states)
        batch = collect(states, cursors, self.written, hold_current_ms=CURRENT_MINUTE_HOLD_MS)
        self._inflight = (batch, self._pool.submit(self._write, batch))
        return True

    def settle(self, states: dict[QueueRef, QueueState], timeout: float | None = None) -> None:
        """Wait for the write in flight, if any; if it failed, its minutes are dirty again."""
        if self._inflight is None:
            return
        batch, done = self._inflight
        self._inflight = None
        try:
            written = done.result(timeout)
        except Exception:  # timed out: keep the minutes dirty (a later write repeats them, harmlessly)
            written = False
        if written:
            self.written.update(batch.cursors)
        else:
            batch.restore(states)

    def _write(self, batch: Batch) -> bool:
        close_old_connections()
        return write(batch, monitor_name=self.monitor_name)
