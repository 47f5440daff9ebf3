"""When a waiting job became ready, and which waiting job has been ready the longest.

"Oldest waiting" is the age of the job that has been *ready* the longest, over both ``wait``
and ``prioritized``: a job becomes ready when it enters one of them (added without delay, its
delay or back-off expired or it was promoted, a retry, stall recovery or a rate-limit
push-back put it back), whatever it did before. Counting from its creation would make a job
delayed by a day read a day old the moment it is promoted. See docs/live-truth.md.

The monitor knows it exactly from the ``waiting`` events it follows (``queues.live_counts``).
Read from Redis alone, at a constant cost per queue, it is a bound, because of what BullMQ 6
keeps in a job's hash:

* ``timestamp`` is the creation time (a scheduler iteration: when that iteration was created);
  ``opts.delay`` the delay asked at creation (a scheduler iteration: until its run).
* The hash ``delay`` field is set to 0 when a delayed job is promoted (``promoteDelayedJobs``,
  ``promote``), so in ``wait`` it no longer tells anything; ``opts.delay`` still does.
* A retry with back-off (``moveToDelayed``) keeps its back-off in ``delay`` until promotion
  resets it, and no failure time; an immediate retry (``retryJob``), stall recovery
  (``moveStalledJobsToWait``) and a rate-limit push-back (``moveJobFromActiveToWait``) store no
  time at all. Such a job has run (``processedOn`` is set): it became ready after its
  ``processedOn``, and the hash does not say when.

So a job's ready time read from its hash (``ReadyTime``) is exact for a job that never ran and
was never delayed (``timestamp``); for a delayed job that never ran it is when its delay
expired (``timestamp + opts.delay``: a worker promotes it at its next fetch, so later if none
fetched meanwhile, earlier if it was promoted by hand); for a job that ran, unknown.
"""

from __future__ import annotations

import json
from typing import NamedTuple

import orjson

from .text import to_int, to_ms

# The job-hash fields a ready time is read from, in this order.
READY_FIELDS = (b"timestamp", b"processedOn", b"opts")
PRIORITY_SHIFT = 0x100000000  # prioritized score: priority * 2^32 + a counter (getPriorityScore)


class ReadyTime(NamedTuple):
    """One job's ready time as its hash tells it: ``ms`` (None: unknown), whether that is
    exact, and whether the job was pushed to the end workers take from (``lifo``). A named
    tuple, not a frozen dataclass: a 10,000-queue snapshot makes tens of thousands of them, and
    a frozen dataclass's ``__init__`` (a guarded ``__setattr__`` per field) costs nearly twice
    as much (0.44 against 0.24 µs here)."""

    ms: int | None
    exact: bool
    lifo: bool = False


def ready_time(timestamp: bytes | None, processed_on: bytes | None, opts: bytes | None) -> ReadyTime:
    """The ready time of a waiting job from its hash fields (``READY_FIELDS``)."""
    created = to_ms(timestamp)
    options = _options(opts)
    lifo = bool(options.get("lifo"))
    if created is None or (processed_on is not None and to_ms(processed_on) is not None):
        return ReadyTime(None, False, lifo)  # it ran: back in waiting since some unstored time
    raw_delay = options.get("delay")
    delay = to_int(raw_delay, 0) if isinstance(raw_delay, (int, float, str)) else 0
    if delay > 0:
        return ReadyTime(created + delay, False, lifo)
    return ReadyTime(created, True, lifo)


def _options(opts: bytes | None) -> dict:
    # A producer's options: hostile JSON (deep, non-finite, binary) reads as no options. Only
    # ``delay`` and ``lifo`` matter here, and most jobs have neither: a snapshot reads up to six
    # jobs per queue, so options naming neither are not parsed at all (a thousand queues' worth
    # of JSON parsing was most of a snapshot's CPU).
    if not opts or (b'"delay"' not in opts and b'"lifo"' not in opts):
        return {}
    # Only two top-level keys are read (through the non-finite-safe ``to_int``). orjson first
    # (a fifth of a 10,000-queue snapshot's CPU was ``json.loads`` here); what it refuses
    # (``NaN``, nesting past its limit, a lone surrogate) gets ``json``'s reading, so either
    # reads the same: a value nested too deep for both reads as no options.
    try:
        parsed = orjson.loads(opts)
    except orjson.JSONDecodeError:
        try:
            parsed = json.loads(opts)
        except (ValueError, RecursionError):
            return {}
    return parsed if isinstance(parsed, dict) else {}


class WaitingEnds(NamedTuple):
    """What one snapshot read of a queue's waiting jobs: the ready times of the jobs at the
    tail of ``wait`` from the tail inwards (the tail is the next to run; ``WAIT_TAIL_WINDOW``
    of them), of the job at its head (the last one LPUSHed), and of the first and last
    ``prioritized`` jobs with their scores. None where a job's hash could not be read."""

    wait_count: int
    prioritized_count: int
    wait_from_tail: tuple[ReadyTime | None, ...] = ()
    wait_head: ReadyTime | None = None
    prioritized_first: tuple[ReadyTime, float] | None = None
    prioritized_last: tuple[ReadyTime, float] | None = None


WAIT_TAIL_WINDOW = 3  # jobs read from the tail of wait: lifo jobs there are passed over


def oldest_ready(ends: WaitingEnds, now_ms: int) -> tuple[int | None, bool]:
    """When the job ready the longest became ready, from a constant number of reads, and
    whether that is a bound (the age is "at least" so much: an unread job may be older).

    ``wait``: jobs are LPUSHed as they become ready and every RPUSH (lifo, stall recovery,
    rate-limit push-back, a flow parent) lands beyond the tail, so the first job from the tail
    that was surely LPUSHed (never ran, not lifo) became ready before every job behind it; the
    answer is exact when that job and the ones read before it have exact ready times.
    ``prioritized``: exact when its first and last jobs share a priority (then the score's
    counter orders the set as the jobs entered it) and the first one's ready time is exact."""
    if ends.wait_count + ends.prioritized_count == 0:
        return None, False
    times: list[int] = []
    exact = True
    if ends.wait_count > 0:
        wait_exact, wait_times = _oldest_of_wait(ends)
        exact, times = wait_exact, wait_times
    if ends.prioritized_count > 0:
        first, last = ends.prioritized_first, ends.prioritized_last
        if first is not None and last is not None and first[0].exact and _priority(first) == _priority(last):
            times.append(first[0].ms or 0)  # exact: always a time
        else:
            exact = False
            times += [t[0].ms for t in (first, last) if t is not None and t[0].ms is not None]
    if not times:
        return None, True
    # A delayed job's expiry may lie ahead if it was promoted by hand: it is ready now at most.
    return min(min(times), now_ms), not exact


def _oldest_of_wait(ends: WaitingEnds) -> tuple[bool, list[int]]:
    walked: list[ReadyTime] = []
    for t in ends.wait_from_tail:
        if t is None:
            break
        walked.append(t)
        if t.exact and not t.lifo:  # surely LPUSHed: everything behind it is younger
            return all(w.exact for w in walked), [w.ms for w in walked if w.ms is not None]
    every_job_read = len(walked) == len(ends.wait_from_tail) >= ends.wait_count
    known = [t for t in (*ends.wait_from_tail, ends.wait_head) if t is not None and t.ms is not None]
    return every_job_read and all(w.exact for w in walked), [t.ms for t in known if t.ms is not None]


def _priority(entry: tuple[ReadyTime, float]) -> int:
    return int(entry[1] // PRIORITY_SHIFT)
