"""Chart series for one queue from stored history (``QueuePoint``), JSON-ready.

No request or response here: the view validates nothing but the queue, this module turns a
range key and "now" into aligned series, one value per period, ``None`` where the monitor
stored no point (uPlot draws a gap there).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from dashboard.live.models import QueuePoint
from dashboard.dead_letters import is_dead_letter_queue
from queues.keys import QueueRef


@dataclass(frozen=True)
class Range:
    resolution: int  # seconds per point: QueuePoint.MINUTE or QueuePoint.HOUR
    points: int


RANGES: dict[str, Range] = {
    "1h": Range(QueuePoint.MINUTE, 60),
    "24h": Range(QueuePoint.MINUTE, 24 * 60),
    "7d": Range(QueuePoint.HOUR, 7 * 24),
}

SERIES = ("completed", "failed", "dlq_growth", "stalled", "backlog", "oldest_age_s", "dlq_depth")


def _floor(now: dt.datetime, seconds: int) -> dt.datetime:
    if now.tzinfo is None:
        now = now.replace(tzinfo=dt.timezone.utc)
    ts = int(now.timestamp())
    return dt.datetime.fromtimestamp(ts - ts % seconds, tz=dt.timezone.utc)


def queue_history(queue: QueueRef, range_key: str, now: dt.datetime) -> dict:
    """Aligned series for ``range_key`` (``1h``/``24h`` of minute points, ``7d`` of hour
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
        connection=queue.connection, prefix=queue.prefix, queue=queue.name,
        resolution=step, start__gte=first, start__lte=last,
    ).values_list(
        "start", "completed", "failed", "stalled", "added",
        "waiting", "prioritized", "failed_depth", "oldest_age_ms",
    )
    for start, completed, failed, stalled, added, waiting, prioritized, failed_depth, oldest_ms in rows:
        offset = int(start.timestamp()) - first_ts
        if offset % step:
            continue  # not on this resolution's grid (never written by the monitor)
        i = offset // step

        def rate(total: int):
            return total if per_min == 1 else total / per_min

        series["completed"][i] = rate(completed)
        series["failed"][i] = rate(failed)
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
    }
