"""Per-queue signals shown on pages and computed by the monitor: rates over 1/5/15 minute
windows, stall figures, dead-letter growth. One function builds them from a snapshot and a
series of minute counters, whether the series is the monitor's in-memory one or was loaded
from stored history by a page view, so both show the same numbers.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field

from dashboard.connections.dead_letters import is_dead_letter_queue
from dashboard.live.models import QueuePoint
from queues.keys import QueueRef
from queues.rates import COUNTERS, RATE_WINDOWS, Minute, QueueSeries
from queues.snapshot import QueueSnapshot
from queues.timings import NameMinute, QueueTimings


@dataclass
class QueueSignals:
    snapshot: QueueSnapshot
    completed_per_min: dict[int, float]
    failed_per_min: dict[int, float]
    dlq_growth_per_min: dict[int, float]  # jobs entering the dead-letter set per minute
    stalled_per_min: dict[int, float]
    # Failed attempts that will be retried (queues.attempts), beside final failures.
    attempt_failed_per_min: dict[int, float] = field(default_factory=lambda: dict.fromkeys(RATE_WINDOWS, 0.0))
    stalled_now: list[str] = field(default_factory=list)
    stall_failed_15m: int = 0
    is_dlq: bool = False
    spark: dict = field(default_factory=dict)  # last hour per minute, for the overview sparkline
    # Event counts per window, e.g. totals["failed"][5] (alert rules need counts, not rates)
    totals: dict[str, dict[int, int]] = field(default_factory=dict)
    # The monitor's per-job-name wait/processing minutes (queues.timings); None where signals are
    # built from stored counters (pages, the preview). Read in the monitor's own thread only.
    timings: QueueTimings | None = None
    now_ms: int = 0
    # Workers connected to this queue (queues.workers), as the monitor last read CLIENT LIST;
    # None when unknown (not read yet, no monitor, or the server refuses CLIENT LIST).
    workers: int | None = None

    def timings_window(self, minutes: int) -> dict[str, NameMinute]:
        """Per job name, the wait/processing figures of the last ``minutes`` minutes (summed on
        demand: only timing rules ask, so a tick pays nothing for them)."""
        return {} if self.timings is None else self.timings.window(now_ms=self.now_ms, minutes=minutes)

    def job_names(self) -> set[str]:
        """The job names the monitor has seen on this queue (bounded by queues.timings.MAX_NAMES)."""
        return set() if self.timings is None else set(self.timings.names)

    @property
    def spark_json(self) -> str:
        return json.dumps(self.spark, separators=(",", ":"))

    @property
    def failure_ratio(self) -> float | None:
        done = self.completed_per_min[5] + self.failed_per_min[5]
        return None if done == 0 else self.failed_per_min[5] / done


def build_signals(
    snapshot: QueueSnapshot,
    series: QueueSeries,
    *,
    now_ms: int,
    stalled_now: list[str] | None = None,
    timings: QueueTimings | None = None,
    workers: int | None = None,
) -> QueueSignals:
    dlq = is_dead_letter_queue(snapshot.queue.name)

    window = series.window(now_ms=now_ms)

    def rates(name):
        return {w: window.per_minute(name, w) for w in RATE_WINDOWS}

    failed = rates("failed")
    return QueueSignals(
        snapshot=snapshot,
        completed_per_min=rates("completed"),
        failed_per_min=failed,
        # A DLQ queue's dead letters are the jobs added to it; for any other queue they are
        # the jobs entering its failed set.
        dlq_growth_per_min=rates("added") if dlq else failed,
        stalled_per_min=rates("stalled"),
        attempt_failed_per_min=rates("attempt_failed"),
        stalled_now=stalled_now or [],
        stall_failed_15m=window.total("stall_failed", 15),
        is_dlq=dlq,
        totals={name: {w: window.total(name, w) for w in RATE_WINDOWS} for name in ("completed", "failed", "stalled")},
        timings=timings,
        now_ms=now_ms,
        workers=workers,
    )


def stored_series(queues: list[QueueRef], *, now: dt.datetime, minutes: int = 16) -> dict[QueueRef, QueueSeries]:
    """Recent minute counters from the database (what the monitor has flushed)."""
    result = {q: QueueSeries() for q in queues}
    if not queues:
        return result
    names = {q.name for q in queues}
    rows = QueuePoint.objects.filter(
        resolution=QueuePoint.MINUTE, start__gte=now - dt.timedelta(minutes=minutes), queue__in=names
    )
    for row in rows:
        q = QueueRef(row.connection, row.prefix, row.queue)
        if q in result:
            result[q].minutes[int(row.start.timestamp() * 1000)] = Minute(**{c: getattr(row, c) for c in COUNTERS})
    return result


SPARK_MINUTES = 60


def spark_series(queues: list[QueueRef], *, now: dt.datetime) -> dict[QueueRef, dict]:
    """Last hour per minute for overview sparklines: completed, failed, dead-letter depth."""
    result: dict[QueueRef, dict] = {}
    if not queues:
        return result
    wanted = set(queues)
    start = now.replace(second=0, microsecond=0) - dt.timedelta(minutes=SPARK_MINUTES - 1)
    rows = QueuePoint.objects.filter(
        resolution=QueuePoint.MINUTE, start__gte=start, queue__in={q.name for q in queues}
    ).values_list("connection", "prefix", "queue", "start", "completed", "failed", "failed_depth", "waiting")
    for conn, prefix, name, start_at, completed, failed, depth, waiting in rows:
        q = QueueRef(conn, prefix, name)
        if q not in wanted:
            continue
        i = int((start_at - start).total_seconds() // 60)
        if not 0 <= i < SPARK_MINUTES:
            continue
        s = result.setdefault(q, {"c": [0] * SPARK_MINUTES, "f": [0] * SPARK_MINUTES, "d": [None] * SPARK_MINUTES})
        s["c"][i], s["f"][i] = completed, failed
        s["d"][i] = waiting if is_dead_letter_queue(name) else depth
    return result
