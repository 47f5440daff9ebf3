"""Paginated job lists per state.

Order: finished states (completed, failed) and waiting-children newest first; waiting,
prioritized and delayed in the order they will run; active newest first. Each page costs one
range read plus one pipelined HMGET of light fields per listed job, whatever the set size.

Filtering by job name has to look at names, so it walks the state in batches and stops after
``scan_limit`` ids (``SAMPLE_LIMIT`` by default: the newest, or next to run); the result says how
far it got so the page can say so honestly. Worst case for one filtered page: one HMGET per id
examined plus a range read per 500 ids and the length — ``scan_limit + 2 + 3 × scan_limit / 500``
commands (2,014 at the default), whatever the size of the state.
"""

from __future__ import annotations

import redis

from ..jobs import JobSummary
from ..keys import QueueRef
from ..listing import DEFAULT_PAGE_SIZE, JobPage
from ..states import LIST_STATES
from . import replies
from .jobs import read_summaries

ZSET_ASCENDING = {"prioritized", "delayed"}
ZSET_DESCENDING = {"completed", "failed", "waiting-children"}
NAME_FILTER_BATCH = 500
# How many jobs a name filter (and error grouping) may examine per request: each costs one Redis
# command, so this is the bound on what one request can make the monitored Redis do.
SAMPLE_LIMIT = 2000


def state_length(client: redis.Redis, queue: QueueRef, state: str) -> int:
    key = queue.state_key(state)
    if state in LIST_STATES:
        n = client.llen(key)
        if state == "waiting":
            n += client.llen(queue.state_key("paused"))  # legacy v5 list
        return n
    return client.zcard(key)


def _range_ids(
    client: redis.Redis, queue: QueueRef, state: str, start: int, stop: int
) -> tuple[list[str], list[float] | None]:
    """Ids at positions start..stop (inclusive) in display order."""
    key = queue.state_key(state)
    if state == "waiting":
        # wait is LPUSHed and consumed from the tail: the tail runs next. Display run order,
        # so position 0 is index -1. The legacy v5 ``paused`` list (if any) runs first.
        legacy_len = client.llen(queue.state_key("paused"))
        ids = []
        if legacy_len and start < legacy_len:
            ids += _tail_first(client, queue.state_key("paused"), start, min(stop, legacy_len - 1))
        if stop >= legacy_len:
            ids += _tail_first(client, key, max(0, start - legacy_len), stop - legacy_len)
        return ids, None
    if state == "active":
        return [i.decode("utf-8", "replace") for i in replies.members(client.lrange(key, start, stop))], None
    if state in ZSET_ASCENDING:
        pairs = replies.scored(client.zrange(key, start, stop, withscores=True))
    else:
        pairs = replies.scored(client.zrevrange(key, start, stop, withscores=True))
    return [m.decode("utf-8", "replace") for m, _ in pairs], [s for _, s in pairs]


def _tail_first(client: redis.Redis, key: str, start: int, stop: int) -> list[str]:
    raw = replies.members(client.lrange(key, -(stop + 1), -(start + 1)))
    return [i.decode("utf-8", "replace") for i in reversed(raw) if not i.startswith(b"0:")]


def page_one_ids(
    client: redis.Redis, queue: QueueRef, state: str, page_size: int
) -> tuple[list[str], list[float] | None]:
    """The ids on page 1 of a state, in display order, with their scores for sorted sets: a
    cheap read (one or two commands) that lets a caller read only the rows it lacks."""
    return _range_ids(client, queue, state, 0, page_size - 1)


def list_jobs(
    client: redis.Redis,
    queue: QueueRef,
    state: str,
    *,
    page: int = 1,
    page_size: int = DEFAULT_PAGE_SIZE,
    name_filter: str = "",
    scan_limit: int = SAMPLE_LIMIT,
) -> JobPage:
    page = max(1, page)
    total = state_length(client, queue, state)
    start = (page - 1) * page_size
    if not name_filter:
        ids, scores = _range_ids(client, queue, state, start, start + page_size - 1)
        jobs = read_summaries(client, queue, ids, scores)
        return JobPage(state, jobs, total, page, page_size, has_next=start + page_size < total)

    # Filtered: walk the state in display order, keep matches, skip the first ``start`` of
    # them, stop when the page is full (plus one to know there is a next page) or the limit hits.
    needle = name_filter.lower()
    matches: list[JobSummary] = []
    pos = 0
    wanted = start + page_size + 1
    while pos < total and pos < scan_limit and len(matches) < wanted:
        ids, scores = _range_ids(client, queue, state, pos, pos + NAME_FILTER_BATCH - 1)
        if not ids:
            break
        for job in read_summaries(client, queue, ids, scores):
            if job.exists and needle in job.name.lower():
                matches.append(job)
        pos += len(ids)
    return JobPage(
        state,
        matches[start : start + page_size],
        total,
        page,
        page_size,
        name_filter=name_filter,
        scanned=pos,
        scan_complete=pos >= total,
        has_next=len(matches) > start + page_size,
    )
