"""Stored wait and processing times (``JobTimingPoint``): rows from the monitor's minutes, minutes
back into a new leader, the API's windows, and the roll-up of minutes into hours.

Bucket counts add, so every period (an hour, a day, 90 days) and the whole queue are exact sums
of what the monitor counted per job name and minute (see ``queues.timings``).
"""

from __future__ import annotations

import datetime as dt

from dashboard.core.upsert import Upsert
from dashboard.live.models import TIMING_KEY, TIMING_VALUES, JobTimingPoint
from queues.keys import QueueRef
from queues.rates import RATE_WINDOWS
from queues.timings import MINUTE_MS, Histogram, NameMinute, QueueTimings, summarize

WINDOWS = {f"{w}m": w for w in RATE_WINDOWS}  # live windows by period name ("5m"), minutes
# History ranges: (resolution in seconds, length); minutes for short ranges, hours beyond.
RANGES = {"1h": (60, 3600), "24h": (60, 24 * 3600), "7d": (3600, 7 * 24 * 3600), "90d": (3600, 90 * 24 * 3600)}


def ms_to_dt(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


# Rows are tuples in the order of TIMING_KEY, then TIMING_VALUES (``as_row``).
UPSERT = Upsert(JobTimingPoint, key=TIMING_KEY, values=TIMING_VALUES)


def as_row(q: QueueRef, *, name: str, resolution: int, start: dt.datetime, figures: NameMinute) -> tuple:
    """One job name's figures over one period, as a row for ``save``."""
    return (
        q.connection,
        q.prefix,
        q.name,
        resolution,
        start,
        name,
        figures.wait.as_json(),
        figures.wait.sum_ms,
        figures.processing.as_json(),
        figures.processing.sum_ms,
        figures.completed,
        figures.failed,
        figures.attempt_failed,
    )


def figures_of(row: JobTimingPoint) -> NameMinute:
    return NameMinute(
        wait=Histogram.from_json(row.wait_buckets, row.wait_sum_ms),
        processing=Histogram.from_json(row.processing_buckets, row.processing_sum_ms),
        completed=row.completed,
        failed=row.failed,
        attempt_failed=row.attempt_failed,
    )


def dirty_rows(q: QueueRef, timings: QueueTimings) -> list[tuple]:
    """The minutes of one queue touched since the last flush, whole (rows are overwritten)."""
    return [
        as_row(q, name=name, resolution=60, start=ms_to_dt(minute), figures=figures)
        for minute in sorted(timings.dirty)
        for name, figures in timings.minutes.get(minute, {}).items()
    ]


def save(rows: list[tuple]) -> None:
    """Upsert rows made by ``as_row`` (inside the caller's transaction)."""
    UPSERT.write(rows)


def restore(timings_by_queue: dict[QueueRef, QueueTimings], *, now_ms: int) -> None:
    """Recent stored minutes into a new leader's memory, so it adds to them, not over them."""
    if not timings_by_queue:
        return
    since = ms_to_dt(now_ms - now_ms % MINUTE_MS - 16 * MINUTE_MS)
    wanted = {(q.connection, q.prefix, q.name): t for q, t in timings_by_queue.items()}
    for row in JobTimingPoint.objects.filter(
        resolution=60, start__gte=since, queue__in={q.name for q in timings_by_queue}
    ):
        timings = wanted.get((row.connection, row.prefix, row.queue))
        if timings is not None:
            timings.restore(int(row.start.timestamp() * 1000), row.name, figures_of(row))


def _by_name(rows) -> dict[str, NameMinute]:
    by_name: dict[str, NameMinute] = {}
    for row in rows:
        by_name.setdefault(row.name, NameMinute()).merge(figures_of(row))
    return by_name


def _rows(q: QueueRef, *, resolution: int, since: dt.datetime):
    return JobTimingPoint.objects.filter(
        connection=q.connection, prefix=q.prefix, queue=q.name, resolution=resolution, start__gt=since
    )


def window_summary(q: QueueRef, window: str, *, now: dt.datetime) -> dict:
    """The timings API document for a live window: the stored minutes overlapping the last 1, 5
    or 15 minutes (flushed every second). Raises ``ValueError`` for another window."""
    if window not in WINDOWS:
        raise ValueError(f"Unknown window {window!r}; use one of {', '.join(WINDOWS)}.")
    since = now - dt.timedelta(minutes=WINDOWS[window] + 1)
    return summarize(_by_name(_rows(q, resolution=60, since=since)), window=window)


def range_summary(q: QueueRef, range_key: str, *, now: dt.datetime) -> dict:
    """The same document over a history range (1h/24h of minutes, 7d/90d of hours)."""
    if range_key not in RANGES:
        raise ValueError(f"Unknown range {range_key!r}; use one of {', '.join(RANGES)}.")
    resolution, seconds = RANGES[range_key]
    since = now - dt.timedelta(seconds=seconds + resolution)
    return summarize(_by_name(_rows(q, resolution=resolution, since=since)), window=range_key)


TIMING_SERIES = tuple(f"{kind}_{p}" for kind in ("wait", "processing") for p in ("p50", "p95", "p99"))


def timing_series(q: QueueRef, *, resolution: int, first: dt.datetime, points: int) -> dict[str, list]:
    """Chart series of one queue's wait and processing p50/p95/p99 (ms), every job name together,
    one value per period from ``first`` (``None`` where nothing was timed: uPlot draws a gap).
    The histograms of a period's rows add exactly, so an hour's percentile is the hour's own."""
    first_ts = int(first.timestamp())
    periods: dict[int, NameMinute] = {}
    rows = JobTimingPoint.objects.filter(
        connection=q.connection, prefix=q.prefix, queue=q.name, resolution=resolution, start__gte=first
    )
    for row in rows:
        offset = int(row.start.timestamp()) - first_ts
        if offset % resolution == 0 and 0 <= offset // resolution < points:
            periods.setdefault(offset // resolution, NameMinute()).merge(figures_of(row))
    series: dict[str, list] = {key: [None] * points for key in TIMING_SERIES}
    for i, figures in periods.items():
        for kind, histogram in (("wait", figures.wait), ("processing", figures.processing)):
            for p, value in histogram.percentiles().items():
                series[f"{kind}_{p}"][i] = value
    return series


def rollup(*, since: dt.datetime, minute_days: int, hour_days: int, now: dt.datetime) -> None:
    """Sum minute rows from ``since`` into hour rows (whole hours rewritten: idempotent), then
    drop minutes older than ``minute_days`` and hours older than ``hour_days``. Call inside a
    transaction."""
    hours: dict[tuple, NameMinute] = {}
    for row in JobTimingPoint.objects.filter(resolution=60, start__gte=since):
        key = (row.connection, row.prefix, row.queue, row.name, row.start.replace(minute=0, second=0, microsecond=0))
        hours.setdefault(key, NameMinute()).merge(figures_of(row))
    save(
        [
            as_row(QueueRef(c, p, qn), name=n, resolution=3600, start=start, figures=f)
            for (c, p, qn, n, start), f in hours.items()
        ]
    )
    JobTimingPoint.objects.filter(resolution=60, start__lt=now - dt.timedelta(days=minute_days)).delete()
    JobTimingPoint.objects.filter(resolution=3600, start__lt=now - dt.timedelta(days=hour_days)).delete()
