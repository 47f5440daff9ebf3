"""Detecting stalled jobs from outside, read-only (reference §4).

A job is *currently stalled* when it sits in ``active`` but its ``<id>:lock`` key is gone: the
worker that held it died or blocked its event loop past the lock duration, and the next stall
check of any live worker will move it back to ``wait`` (incrementing ``stc``).

Fleets of any size. ``moveToActive`` pushes new jobs at the *head* of ``active``, so the jobs
of a worker that crashed long ago sit at the *tail*: looking at the first N ids misses exactly
them. So the whole list is read, in ``LRANGE`` pages of ``PAGE`` ids, and locks are read with one
``MGET`` per page (the value is not needed, only whether it is nil). Both are plain reads, safe
on replicas, and the work is bounded: at most ``budget`` ids per call, shared among the queues;
a list longer than what is left of the budget gets its tail read (where a crashed worker's
jobs are) and is reported as partial, so the caller keeps what it knew of the head (from
``active`` events) until the next exact read.

A lock read costs Redis about as much as an ``EXISTS``; 10,000 active jobs are 10 ``LRANGE``
and 10 ``MGET`` commands.
"""

from __future__ import annotations

import redis

from ..keys import QueueRef
from ..stalls import ActiveLists
from ..text import to_text

PAGE = 1000  # ids per LRANGE / keys per MGET: small replies, few commands
READ_BUDGET = 50_000  # ids read per call across all queues (about 1 MB of ids)
LEGACY_MARKER = b"0:"  # v5 markers in lists are not jobs


def read_active(
    client: redis.Redis, lengths: dict[QueueRef, int], *, budget: int = READ_BUDGET, page: int = PAGE
) -> ActiveLists:
    """Every id in each queue's ``active`` list, given each list's length (from a snapshot),
    in one pipelined round trip. The last page of each list is open-ended (``-1``), so jobs
    pushed since the length was read are not lost; they are at the head anyway."""
    result = ActiveLists()
    plan: list[tuple[QueueRef, int, int]] = []
    left = budget
    for q, n in lengths.items():
        result.ids[q] = []
        if n <= 0:
            continue
        if n <= left:
            # Head to tail; the last page is open-ended, so jobs pushed since the length was
            # read do not push the tail out of reach.
            plan.extend((q, s, -1 if s + page >= n else s + page - 1) for s in range(0, n, page))
            left -= n
        else:
            # Not enough budget for all of it: the tail (the oldest jobs, where a crashed
            # worker's sit), counted from the tail so concurrent pushes at the head do not shift it.
            result.partial.add(q)
            plan.extend((q, -min(left, s + page), -s - 1) for s in range(0, left, page))
            left = 0
    if plan:
        pipe = client.pipeline(transaction=False)
        for q, s, e in plan:
            pipe.lrange(q.key("active"), s, e)
        for (q, s, _), chunk in zip(plan, pipe.execute()):
            ids = [to_text(i) for i in chunk if not i.startswith(LEGACY_MARKER)]
            if s < 0:  # tail pages come tail first: keep the list's head-first order
                result.ids[q][:0] = ids
            else:
                result.ids[q].extend(ids)
    for q, ids in result.ids.items():
        # A page boundary shifted by a concurrent LPUSH can repeat an id: keep the first.
        result.ids[q] = list(dict.fromkeys(ids))
    return result


def without_lock(
    client: redis.Redis, jobs: dict[QueueRef, list[str]], *, page: int = PAGE
) -> dict[QueueRef, list[str]]:
    """Of these active jobs, those whose lock is gone: one ``MGET`` per ``page`` jobs of a
    queue (a queue's keys share a slot on a hash-tagged prefix), all in one round trip."""
    plan = [(q, ids[i : i + page]) for q, ids in jobs.items() for i in range(0, len(ids), page)]
    if not plan:
        return {}
    pipe = client.pipeline(transaction=False)
    for q, chunk in plan:
        pipe.mget([q.job_key(j) + ":lock" for j in chunk])
    result: dict[QueueRef, list[str]] = {}
    for (q, chunk), locks in zip(plan, pipe.execute()):
        stalled = [j for j, lock in zip(chunk, locks) if lock is None]
        if stalled:
            result.setdefault(q, []).extend(stalled)
    return result
