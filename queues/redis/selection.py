"""Choosing jobs: "all jobs matching this filter", oldest first, fixed at confirmation.

A filter is evaluated over one state, oldest first: failed/completed by finish time (the ZSET
score), delayed by due time, waiting from the list's tail and prioritized in priority order (both
the next to run first). The target set is fixed by ``before_ms`` (the confirmation time): only
jobs that finished before it (failed and completed), or were created before it (delayed,
waiting, prioritized), match, so jobs that fail after the
start are not swept in, and a job we retried that fails again is not picked up twice.

The scan is resumable from a small ``Cursor`` (the bulk engine persists it) and never holds
more than one page of ids: memory does not grow with the number of jobs.
"""

from __future__ import annotations

from collections.abc import Iterator

import redis

from ..keys import QueueRef
from ..selection import Cursor, JobFilter, Page, Preview, advance, matches_filter
from ..states import FINISHED_STATES
from ..text import to_text
from . import replies
from .jobs import read_summaries
from .listing import state_length

PAGE = 500


def _member_key(member: str) -> bytes:
    return member.encode("utf-8", "surrogateescape")


def zset_bounds(filt: JobFilter, before_ms: int) -> tuple[str, str]:
    if filt.state in FINISHED_STATES:
        lo = str(filt.finished_from_ms) if filt.finished_from_ms is not None else "-inf"
        hi = f"({before_ms}"
        if filt.finished_to_ms is not None and filt.finished_to_ms < before_ms:
            hi = str(filt.finished_to_ms)
        return lo, hi
    return (
        "-inf",
        "+inf",
    )  # delayed, prioritized: the score is the due time or the priority; before_ms applies to creation


def zset_offset(client: redis.Redis, *, key: str, lo: str, cursor: Cursor) -> int:
    """How many entries of the range before ``cursor`` are still in the set: everything with a
    lower score, plus the members at the cursor's score up to the cursor's member (Redis orders
    equal scores by member bytes). Only the equal-score group is read, which is small."""
    if cursor.score is None:
        return 0
    below = client.zcount(key, lo, f"({cursor.score!r}")
    same = replies.members(client.zrangebyscore(key, repr(cursor.score), repr(cursor.score)))
    mark = _member_key(cursor.member or "")
    return below + sum(1 for m in same if m <= mark)


def zset_resume(client: redis.Redis, *, key: str, lo: str, cursor: Cursor) -> tuple[str, int]:
    """Where the page after ``cursor`` starts: (min score, offset). At the cursor's own score,
    skipping the members there up to the cursor's member, rather than at ``lo`` skipping
    everything before: ``ZRANGEBYSCORE … LIMIT offset`` walks ``offset`` entries inside Redis,
    so an offset from the start of the range made paging through N jobs cost O(N²) (an
    export of 1,000,000 jobs never finished); from the cursor's score each page costs
    O(log N + page + equal scores)."""
    if cursor.score is None:
        return lo, 0
    same = replies.members(client.zrangebyscore(key, repr(cursor.score), repr(cursor.score)))
    mark = _member_key(cursor.member or "")
    return repr(cursor.score), sum(1 for m in same if m <= mark)


def _zset_page(client: redis.Redis, queue: QueueRef, filt: JobFilter, before_ms: int, cursor: Cursor, size: int):
    key = queue.state_key(filt.state)
    range_lo, hi = zset_bounds(filt, before_ms)
    lo, offset = zset_resume(client, key=key, lo=range_lo, cursor=cursor)
    if filt.reads_jobs:
        pairs = replies.scored(client.zrangebyscore(key, lo, hi, start=offset, num=size, withscores=True))
        return [(to_text(m), s) for m, s in pairs], len(pairs) < size
    # Ids only, plus the last one's score (all the cursor needs): parsing a score per job
    # costs more than the rest of a bulk retry's Python work.
    members = replies.members(client.zrangebyscore(key, lo, hi, start=offset, num=size))
    if not members:
        return [], True
    last = client.zscore(key, members[-1])
    if last is None:  # moved by someone else just now: read the scores after all
        return _zset_page_with_scores(client, key, lo, hi, offset, size)
    passed: list[tuple[str, float | None]] = [(m.decode("utf-8", "replace"), None) for m in members]
    passed[-1] = (passed[-1][0], last)
    return passed, len(members) < size


def _zset_page_with_scores(client, key, lo, hi, offset, size):
    pairs = replies.scored(client.zrangebyscore(key, lo, hi, start=offset, num=size, withscores=True))
    return [(to_text(m), s) for m, s in pairs], len(pairs) < size


def _list_page(client: redis.Redis, queue: QueueRef, cursor: Cursor, size: int):
    key = queue.state_key("waiting")
    skip = 0
    if cursor.anchor is not None:
        pos = client.lpos(key, cursor.anchor, rank=-1)
        if isinstance(pos, int):  # without COUNT, LPOS gives one position or none
            skip = client.llen(key) - pos  # entries from the tail up to and including the anchor
    raw = replies.members(client.lrange(key, -(skip + size), -(skip + 1))) if skip + size > 0 else []
    ids = [to_text(i) for i in reversed(raw) if not i.startswith(b"0:")]
    return [(i, None) for i in ids], len(raw) < size


def scan_length(client: redis.Redis, *, queue: QueueRef, filt: JobFilter, before_ms: int) -> int:
    """How many entries a scan by ``next_page`` passes from start to end, as the state is now: the
    wait list, or the sorted set's entries within the filter's score bounds."""
    if filt.state == "waiting":
        return client.llen(queue.state_key("waiting"))
    return client.zcount(queue.state_key(filt.state), *zset_bounds(filt, before_ms))


def next_page(
    client: redis.Redis, *, queue: QueueRef, filt: JobFilter, before_ms: int, cursor: Cursor, size: int = PAGE
) -> Page:
    """The next ``size`` entries after ``cursor``, oldest first, with those that match."""
    if filt.state == "waiting":
        passed, exhausted = _list_page(client, queue, cursor, size)
    else:
        passed, exhausted = _zset_page(client, queue, filt, before_ms, cursor, size)
    if not passed:
        return Page([], [], exhausted=True)
    ids = [i for i, _ in passed]
    if not filt.reads_jobs:
        return Page(passed, ids, exhausted=exhausted)
    summaries = read_summaries(client, queue, ids, [s for _, s in passed])
    reasons = _full_reasons(client, queue, ids) if (filt.reason_contains or filt.fingerprint) else {}
    matches = [j for j in summaries if matches_filter(j, filt=filt, before_ms=before_ms, reason=reasons.get(j.id, ""))]
    return Page(passed, [j.id for j in matches], {j.id: j for j in matches}, exhausted)


def _full_reasons(client: redis.Redis, queue: QueueRef, ids: list[str]) -> dict[str, str]:
    pipe = client.pipeline(transaction=False)
    for i in ids:
        pipe.hget(queue.job_key(i), "failedReason")
    return {i: to_text(r) for i, r in zip(ids, pipe.execute())}


def matching_ids(client: redis.Redis, *, queue: QueueRef, filt: JobFilter, before_ms: int) -> Iterator[str]:
    """Every matching id, oldest first, one page in memory at a time. Read-only: for a
    consumer that moves jobs while iterating, use ``next_page``/``advance`` (``queues.redis.bulk``)."""
    cursor = Cursor()
    while True:
        page = next_page(client, queue=queue, filt=filt, before_ms=before_ms, cursor=cursor)
        yield from page.match_ids
        if page.exhausted:
            return
        cursor = advance(cursor, page)


def preview(
    client: redis.Redis, *, queue: QueueRef, filt: JobFilter, before_ms: int, sample: int = 10, limit: int | None = None
) -> Preview:
    """How many jobs an action on this filter would touch, and the oldest ``sample`` of them.

    Without name/reason/fingerprint conditions a finished state is counted with one ZCOUNT;
    otherwise the state is scanned (pipelined, one page at a time), examining at most ``limit``
    entries (one Redis command each) when given: a request never reads a whole big state. A
    scan stopped there says so (``complete`` False, ``count`` then counts the examined ones)."""
    if not filt.reads_jobs:
        lo, hi = zset_bounds(filt, before_ms)
        count = client.zcount(queue.state_key(filt.state), lo, hi)
        first = replies.scored(
            client.zrangebyscore(queue.state_key(filt.state), lo, hi, start=0, num=sample, withscores=True)
        )
        jobs = read_summaries(client, queue, [to_text(m) for m, _ in first], [s for _, s in first])
        return Preview(count=count, sample=[j for j in jobs if j.exists], scanned=count)
    count, scanned, jobs = 0, 0, []
    cursor = Cursor()
    while True:
        size = PAGE if limit is None else min(PAGE, limit - scanned)
        page = next_page(client, queue=queue, filt=filt, before_ms=before_ms, cursor=cursor, size=size)
        scanned += len(page.passed)
        count += len(page.match_ids)
        jobs.extend(page.matches[: max(0, sample - len(jobs))])
        if page.exhausted:
            return Preview(count=count, sample=jobs, scanned=scanned)
        if limit is not None and scanned >= limit:
            return Preview(
                count=count,
                sample=jobs,
                scanned=scanned,
                complete=False,
                in_state=state_length(client, queue, filt.state),
            )
        cursor = advance(cursor, page)
