"""The queue figures a page reads from its source: jobs per priority, maxed, the rate-limit
window (``queues.figures``), and BullMQ's own per-minute metrics aligned to the history
charts' grid (``queues.bullmq_metrics``).

BullMQ's metrics change once a minute at most, and the charts re-fetch their history whenever
the live figures change, so a read is kept for ``METRICS_TTL_S`` in this process: open tabs do
not make the monitored Redis read the same lists again and again.
"""

from __future__ import annotations

import threading
import time

from django.utils.translation import gettext as _

from dashboard.connections.registry import get_registry
from dashboard.core.i18n import translate
from queues.bullmq_metrics import KINDS, MINUTE_MS, BullmqMetrics, points_for
from queues.errors import NotOffered, SourceUnavailable, UnreadableQueueData
from queues.figures import QueueFigures
from queues.keys import QueueRef

METRICS_TTL_S = 30
_cache: dict[tuple[QueueRef, str, int], tuple[float, BullmqMetrics]] = {}
_cache_lock = threading.Lock()
CACHE_MAX = 512


def queue_figures(queue: QueueRef) -> tuple[QueueFigures | None, str]:
    """The queue's figures, or ``None`` and the reason they are not offered on its connection."""
    try:
        facet = get_registry().figures(queue.connection)
    except NotOffered as exc:
        return None, translate(exc.message)
    try:
        return facet.figures(queue), ""
    except UnreadableQueueData as exc:  # a key of the wrong type: the box says so, the page stays
        return None, f"{_('Unreadable queue data')}: {exc}"


def _metrics(queue: QueueRef, kind: str, points: int) -> BullmqMetrics:
    key = (queue, kind, points)
    now = time.monotonic()
    with _cache_lock:
        kept = _cache.get(key)
        if kept and now - kept[0] < METRICS_TTL_S:
            return kept[1]
    read = get_registry().figures(queue.connection).metrics(queue, kind=kind, points=points)
    with _cache_lock:
        if len(_cache) >= CACHE_MAX:
            _cache.clear()
        _cache[key] = (now, read)
    return read


def bullmq_series(queue: QueueRef, *, t: list[int], step_s: int, now_ms: int) -> dict:
    """``bullmq_completed`` and ``bullmq_failed`` per period of the grid ``t`` (period starts in
    seconds, ``step_s`` long), per minute as the history's own counters are (an hour point is its
    total / 60); ``None`` where BullMQ's data do not reach. ``bullmq_metrics`` says whether they
    are offered and recorded."""
    empty = {f"bullmq_{kind}": [None] * len(t) for kind in KINDS}
    try:
        get_registry().figures(queue.connection)
    except NotOffered:
        return {**empty, "bullmq_metrics": {"offered": False, "recorded": False}}
    points = points_for(t[0] * 1000, now_ms)
    series = dict(empty)
    recorded = False
    per_min = step_s // 60
    for kind in KINDS:
        try:
            read = _metrics(queue, kind, points)
        except SourceUnavailable:  # our own history still shows; BullMQ's is left out
            return {**empty, "bullmq_metrics": {"offered": True, "recorded": False, "unavailable": True}}
        if not read.recorded:
            continue
        recorded = True
        minutes = read.per_minute()
        oldest = min(minutes)
        values: list = []
        for start in t:
            first = start * 1000
            if first + step_s * 1000 <= oldest:
                values.append(None)  # before BullMQ's oldest data point
                continue
            total = sum(minutes.get(first + k * MINUTE_MS, 0) for k in range(per_min))
            values.append(total if per_min == 1 else total / per_min)
        series[f"bullmq_{kind}"] = values
    return {**series, "bullmq_metrics": {"offered": True, "recorded": recorded}}
