"""Detecting stalled jobs from outside, read-only (reference §4).

A job is *currently stalled* when it sits in ``active`` but its ``<id>:lock`` key is gone: the
worker that held it died or blocked its event loop past the lock duration, and the next stall
check of any live worker will move it back to ``wait`` (incrementing ``stc``). We only look at
the head of ``active`` (``limit`` jobs) so the cost stays bounded on huge active lists.
"""

from __future__ import annotations

import redis

from .keys import QueueRef
from .text import to_text

STALLED_LIMIT_REASON = "job stalled more than allowable limit"


def active_ids(client: redis.Redis, queues: list[QueueRef], *, limit: int = 100) -> dict[QueueRef, list[str]]:
    """The ids at the head of each queue's ``active`` list (at most ``limit``)."""
    if not queues:
        return {}
    pipe = client.pipeline(transaction=False)
    for q in queues:
        pipe.lrange(q.key("active"), 0, limit - 1)
    return {q: [to_text(i) for i in ids if not i.startswith(b"0:")] for q, ids in zip(queues, pipe.execute())}


def without_lock(client: redis.Redis, jobs: dict[QueueRef, list[str]]) -> dict[QueueRef, list[str]]:
    """Of these active jobs, those whose lock is gone (one EXISTS each, one round trip)."""
    pipe = client.pipeline(transaction=False)
    for q, ids in jobs.items():
        for job_id in ids:
            pipe.exists(q.job_key(job_id) + ":lock")
    flags = iter(pipe.execute()) if len(pipe) else iter(())
    result = {}
    for q, ids in jobs.items():
        stalled = [job_id for job_id in ids if not next(flags)]
        if stalled:
            result[q] = stalled
    return result


def currently_stalled(client: redis.Redis, queues: list[QueueRef], *, limit: int = 100) -> dict[QueueRef, list[str]]:
    return without_lock(client, active_ids(client, queues, limit=limit))
