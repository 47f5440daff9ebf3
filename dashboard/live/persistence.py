"""Persistence: the leader's minute points and stream cursors in the database.

Counters and cursors are written in one transaction, so a standby that takes over resumes
exactly after the last events whose counts were stored: nothing is counted twice or lost.
Roll-up into hours and pruning are in ``dashboard.live.history``.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.db import close_old_connections, transaction

from dashboard.live import timing_points
from dashboard.live.models import POINT_GAUGES, POINT_KEY, QueuePoint, StreamCursor
from dashboard.live.rates import stored_series
from dashboard.live.tracking import RECONCILE_MINUTES, QueueState, now_ms
from queues.keys import QueueRef
from queues.rates import COUNTERS, Minute, minute_of

log = logging.getLogger("queuewatch.monitor")


def ms_to_dt(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)


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


def flush(states: dict[QueueRef, QueueState], cursors: dict[QueueRef, str], *, monitor_name: str) -> bool:
    """Write dirty minutes (counters, gauges, per-job-name timings) and the applied stream
    cursors in one transaction. A minute is
    written with its gauges if it is the minute of the queue's latest snapshot, with its
    counters only otherwise. Returns whether it was written (on failure the minutes stay dirty
    and the next flush retries)."""
    with_gauges, counters_only = [], []
    for q, st in states.items():
        snap = st.snapshot
        for m in sorted(st.dirty_minutes):
            b = st.series.minutes.get(m, Minute())
            row = QueuePoint(connection=q.connection, prefix=q.prefix, queue=q.name, resolution=QueuePoint.MINUTE,
                             start=ms_to_dt(m), **{c: getattr(b, c) for c in COUNTERS})
            if snap is not None and minute_of(snap.taken_at) == m:
                c = snap.counts
                row.waiting, row.active, row.delayed = c["waiting"], c["active"], c["delayed"]
                row.prioritized, row.failed_depth = c["prioritized"], c["failed"]
                row.stalled_now, row.oldest_age_ms = len(st.stalled_now), snap.oldest_waiting_age_ms
                with_gauges.append(row)
            elif any(getattr(b, c) for c in COUNTERS):
                # A past minute re-counted (late events, reconciliation): keep its gauges.
                # (All-zero minutes are not written: counters never go down.)
                counters_only.append(row)
    timing_rows = [row for q, st in states.items() for row in timing_points.dirty_rows(q, st.timings)]
    cursor_rows = [StreamCursor(connection=q.connection, prefix=q.prefix, queue=q.name, last_id=cid)
                   for q, cid in cursors.items()]
    try:
        with transaction.atomic():
            for rows, fields_ in ((counters_only, list(COUNTERS)), (with_gauges, list(COUNTERS) + POINT_GAUGES)):
                if rows:
                    QueuePoint.objects.bulk_create(rows, update_conflicts=True, unique_fields=POINT_KEY, update_fields=fields_)
            timing_points.save(timing_rows)
            if cursor_rows:
                StreamCursor.objects.bulk_create(cursor_rows, update_conflicts=True,
                                                 unique_fields=["connection", "prefix", "queue"], update_fields=["last_id"])
    except Exception:
        log.exception("%s: flushing history failed; will retry", monitor_name)
        return False
    for st in states.values():
        st.dirty_minutes.clear()
        st.timings.dirty.clear()
    return True
