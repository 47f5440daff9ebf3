"""The figures facet on Redis: jobs per priority, maxed, the rate-limit window, and BullMQ's
own metrics, in plain reads (safe on a replica; no script, no write).

Per priority: getCountsPerPriority is ``LLEN wait`` for priority 0 and, for each priority asked,
``ZCOUNT prioritized`` over that priority's scores. It takes the priorities to count, and BullMQ
allows 2**21 of them, so this reader finds the priorities present instead: it asks for the
first job at or after a priority's scores (``ZRANGE … BYSCORE LIMIT 0 1``), counts that job's
priority with the same ``ZCOUNT``, and goes on from the next priority. One round trip per
priority present, ``PRIORITIES_SHOWN`` at most; the jobs of further priorities are one remainder
(``ZCARD`` minus the counted), never read one by one.
"""

from __future__ import annotations

import redis

from ..bullmq_metrics import BullmqMetrics
from ..figures import PRIORITIES_SHOWN, QueueFigures, priority_of_score, priority_score_range
from ..keys import QueueRef
from ..script_versions import newer_than_supported
from ..text import finite, to_int, to_text
from . import replies
from .bullmq_scripts import SCRIPTS_VERSION
from .errors import redis_errors


def _first_at_or_after(pipe, queue: QueueRef, priority: int) -> None:
    low, _ = priority_score_range(priority)
    pipe.zrangebyscore(queue.key("prioritized"), low, "+inf", start=0, num=1, withscores=True)


def read_figures(client: redis.Redis, queue: QueueRef) -> QueueFigures:
    pipe = client.pipeline(transaction=False)
    pipe.hmget(queue.key("meta"), ["concurrency", "max", "duration", "version"])
    pipe.llen(queue.key("active"))
    pipe.llen(queue.key("wait"))
    pipe.zcard(queue.key("prioritized"))
    pipe.get(queue.key("limiter"))
    pipe.pttl(queue.key("limiter"))
    _first_at_or_after(pipe, queue, 1)
    (concurrency, rate_max, duration, version), active, waiting, prioritized, limiter, pttl, first = pipe.execute()
    recorded = to_text(version) if version is not None else None
    newer = recorded if newer_than_supported(recorded, SCRIPTS_VERSION) else None
    per_priority = [(0, int(waiting))]
    counted = 0
    found = replies.scored(first)
    while found and len(per_priority) <= PRIORITIES_SHOWN and counted < prioritized:
        score = finite(found[0][1])
        if score is None:  # a producer's inf or nan: no priority of BullMQ's; left in the remainder
            break
        priority = priority_of_score(score)
        low, high = priority_score_range(priority)
        pipe = client.pipeline(transaction=False)
        pipe.zcount(queue.key("prioritized"), low, high)
        _first_at_or_after(pipe, queue, priority + 1)
        count, nxt = pipe.execute()
        per_priority.append((priority, int(count)))
        counted += int(count)
        found = replies.scored(nxt)
    has_window = limiter is not None and pttl is not None and pttl > 0
    return QueueFigures(
        per_priority=tuple(per_priority),
        prioritized=int(prioritized),
        active=int(active),
        concurrency=to_int(concurrency),
        rate_max=to_int(rate_max),
        rate_duration_ms=to_int(duration),
        window_count=to_int(limiter, 0) if has_window else None,
        window_left_ms=int(pttl) if has_window else 0,
        newer_release=newer,
        scripts_release=SCRIPTS_VERSION if newer else None,
    )


def read_metrics(client: redis.Redis, queue: QueueRef, *, kind: str, points: int) -> BullmqMetrics:
    """``Queue.getMetrics(kind, 0, points - 1)``: its script's reads, as plain commands."""
    key = queue.key(f"metrics:{kind}")
    pipe = client.pipeline(transaction=False)
    pipe.hmget(key, ["count", "prevTS", "prevCount"])
    pipe.lrange(key + ":data", 0, points - 1)
    pipe.llen(key + ":data")
    (count, prev_ts, prev_count), data, total = pipe.execute()
    return BullmqMetrics(
        kind=kind,
        count=to_int(count, 0),
        prev_ts=to_int(prev_ts, 0),
        prev_count=to_int(prev_count, 0),
        data=tuple(to_int(v, 0) for v in replies.members(data)),
        points=int(total),
    )


class RedisFigures:
    def __init__(self, client: redis.Redis, *, connection: str):
        self.client, self.connection = client, connection

    def figures(self, queue: QueueRef) -> QueueFigures:
        with redis_errors(self.connection):
            return read_figures(self.client, queue)

    def metrics(self, queue: QueueRef, *, kind: str, points: int) -> BullmqMetrics:
        with redis_errors(self.connection):
            return read_metrics(self.client, queue, kind=kind, points=points)
