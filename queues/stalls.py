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


def currently_stalled(client: redis.Redis, queues: list[QueueRef], *, limit: int = 100) -> dict[QueueRef, list[str]]:
    if not queues:
        return {}
    pipe = client.pipeline(transaction=False)
    for q in queues:
        pipe.lrange(q.key("active"), 0, limit - 1)
    actives = [[to_text(i) for i in ids if not i.startswith(b"0:")] for ids in pipe.execute()]
    pipe = client.pipeline(transaction=False)
    for q, ids in zip(queues, actives):
        for job_id in ids:
            pipe.exists(q.job_key(job_id) + ":lock")
    flags = iter(pipe.execute())
    result = {}
    for q, ids in zip(queues, actives):
        stalled = [job_id for job_id in ids if not next(flags)]
        if stalled:
            result[q] = stalled
    return result
