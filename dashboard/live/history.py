"""Stored history (``QueuePoint``): chart series for one queue, and the roll-up of minutes
into hours with pruning of old points (run by the monitor on its schedule).

No request or response here: the view validates nothing but the queue, this module turns a
range key and "now" into aligned series, one value per period, ``None`` where the monitor
stored no point (uPlot draws a gap there).
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

from dashboard.connections.dead_letters import is_dead_letter_queue
from dashboard.live import timing_points
from dashboard.live.models import GAUGE_POINTS, POINT_GAUGES, QueuePoint
from queues.keys import QueueRef
from queues.rates import COUNTERS

log = logging.getLogger("queuewatch.monitor")


@dataclass(frozen=True)
class Range:
    resolution: int  # seconds per point: QueuePoint.MINUTE or QueuePoint.HOUR
    points: int


RANGES: dict[str, Range] = {
    "1h": Range(QueuePoint.MINUTE, 60),
    "24h": Range(QueuePoint.MINUTE, 24 * 60),
    "7d": Range(QueuePoint.HOUR, 7 * 24),
    "90d": Range(QueuePoint.HOUR, 90 * 24),  # hour points are kept QUEUEWATCH_HISTORY_HOUR_DAYS (90)
}

SERIES = ("completed", "failed", "attempt_failed", "dlq_growth", "stalled", "backlog", "oldest_age_s", "dlq_depth")


def _floor(now: dt.datetime, seconds: int) -> dt.datetime:
    if now.tzinfo is None:
        now = now.replace(tzinfo=dt.UTC)
    ts = int(now.timestamp())
    return dt.datetime.fromtimestamp(ts - ts % seconds, tz=dt.UTC)


def queue_history(queue: QueueRef, range_key: str, now: dt.datetime) -> dict:
    """Aligned series for ``range_key`` (``1h``/``24h`` of minute points, ``7d``/``90d`` of hour
    points) ending with the period that contains ``now`` (which is still filling).

    Counters are per minute: a minute point's total as is, an hour point's total / 60.
    Gauges are the last value seen in the period. Dead-letter growth is ``failed`` for a
    normal queue and ``added`` for an application dead-letter queue, whose depth is then its
    ``waiting`` count instead of its failed set. Raises ``ValueError`` for an unknown range.
    """
    try:
        rng = RANGES[range_key]
    except (KeyError, TypeError):
        raise ValueError(f"Unknown range {range_key!r}; use one of {', '.join(RANGES)}.") from None
    step = rng.resolution
    last = _floor(now, step)
    first = last - dt.timedelta(seconds=step * (rng.points - 1))
    first_ts = int(first.timestamp())
    per_min = step // 60
    dlq = is_dead_letter_queue(queue.name)

    series: dict[str, list] = {name: [None] * rng.points for name in SERIES}
    rows = QueuePoint.objects.filter(
        connection=queue.connection,
        prefix=queue.prefix,
        queue=queue.name,
        resolution=step,
        start__gte=first,
        start__lte=last,
    ).values_list(
        "start",
        "completed",
        "failed",
        "attempt_failed",
        "stalled",
        "added",
        "waiting",
        "prioritized",
        "failed_depth",
        "oldest_age_ms",
    )
    for start, completed, failed, attempt_failed, stalled, added, waiting, prioritized, failed_depth, oldest_ms in rows:
        offset = int(start.timestamp()) - first_ts
        if offset % step:
            continue  # not on this resolution's grid (never written by the monitor)
        i = offset // step

        def rate(total: int):
            return total if per_min == 1 else total / per_min

        series["completed"][i] = rate(completed)
        series["failed"][i] = rate(failed)
        series["attempt_failed"][i] = rate(attempt_failed)  # retried attempts, beside final failures
        series["dlq_growth"][i] = rate(added if dlq else failed)
        series["stalled"][i] = rate(stalled)
        series["backlog"][i] = waiting + prioritized
        series["oldest_age_s"][i] = None if oldest_ms is None else oldest_ms / 1000
        series["dlq_depth"][i] = waiting if dlq else failed_depth

    return {
        "queue": {"connection": queue.connection, "prefix": queue.prefix, "name": queue.name},
        "range": range_key,
        "resolution": step,
        "is_dlq": dlq,
        "t": [first_ts + k * step for k in range(rng.points)],
        **series,
        # Wait and processing p50/p95/p99 in ms from the per-job-name timings (docs/timings.md).
        **timing_points.timing_series(queue, resolution=step, first=first, points=rng.points),
    }


def rollup_and_prune(now: dt.datetime | None = None) -> None:
    """Sum the minute points (and per-job-name timings) of the last two hours and this one into hour points (counters
    summed, gauges the last value in the hour), then drop minute and hour points older than
    ``QUEUEWATCH_HISTORY_MINUTE_DAYS`` / ``QUEUEWATCH_HISTORY_HOUR_DAYS``. Idempotent: hours
    are rewritten whole, so running it again (or on a standby after a takeover) is harmless."""
    now = now or dt.datetime.now(dt.UTC)
    hour_start = now.replace(minute=0, second=0, microsecond=0) - dt.timedelta(hours=2)
    try:
        buckets: dict[tuple, dict] = {}
        for row in QueuePoint.objects.filter(resolution=QueuePoint.MINUTE, start__gte=hour_start).order_by("start"):
            key = (row.connection, row.prefix, row.queue, row.start.replace(minute=0))
            b = buckets.setdefault(key, {c: 0 for c in COUNTERS})
            for c in COUNTERS:
                b[c] += getattr(row, c)
            for g in POINT_GAUGES:
                b[g] = getattr(row, g)  # last value in the hour
        rows = [
            (*k[:3], QueuePoint.HOUR, k[3], *(v[c] for c in COUNTERS), *(v.get(g) for g in POINT_GAUGES))
            for k, v in buckets.items()
        ]
        with transaction.atomic():
            GAUGE_POINTS.write(rows)
            QueuePoint.objects.filter(
                resolution=QueuePoint.MINUTE, start__lt=now - dt.timedelta(days=settings.QUEUEWATCH_HISTORY_MINUTE_DAYS)
            ).delete()
            QueuePoint.objects.filter(
                resolution=QueuePoint.HOUR, start__lt=now - dt.timedelta(days=settings.QUEUEWATCH_HISTORY_HOUR_DAYS)
            ).delete()
            timing_points.rollup(
                since=hour_start,
                now=now,
                minute_days=settings.QUEUEWATCH_HISTORY_MINUTE_DAYS,
                hour_days=settings.QUEUEWATCH_HISTORY_HOUR_DAYS,
            )
    except Exception:
        log.exception("history roll-up failed; will retry")
