"""Job schedulers (BullMQ 6) and legacy repeat metadata.

Schedulers live in the ``repeat`` ZSET (member = scheduler id, score = next run in ms) with a
definition hash ``repeat:<id>``. Two legacy layouts can also be found there (reference §6.2):
the pre-hash key shape ``name:jobId:endDate:tz:pattern`` with no hash — BullMQ 6 throws on it —
and v5 hashed repeatables whose hash lacks ``ic`` — BullMQ 6 silently adopts them. Both are
flagged with what to do about them, and so is a member with no definition at all, which Node's
``getJobSchedulers()`` deletes when it lists the queue's schedulers.

A scheduler BullMQ has finished (its ``limit`` of iterations reached, or its ``endDate``
passed) keeps its entry, scored with its last run's time: ``queues.schedulers.is_finished``
tells it apart from one whose next run is late, with the last iteration's job read to know
whether a worker has taken it (``processedOn``).
"""

from __future__ import annotations

import time

import redis

from ..keys import QueueRef
from ..scheduler_zone import stored_zone
from ..schedulers import Scheduler, is_finished, unreadable_fields
from ..text import to_ms, to_safe_int, to_text
from . import replies

SCHEDULER_CHUNK = 1000  # ZRANGE members (and HGETALLs pipelined) per round trip
# Schedulers read for the alert rules and health checks, in chunks, oldest score first: every one
# of a queue that has up to this many, so a crowd of finished ones cannot push a live one out.
MAX_SCHEDULERS = 10_000


def is_legacy_key_shape(member: str) -> bool:
    """``name:jobId:endDate:tz:pattern|every`` — 5 parts, 3rd empty or numeric, last a cron
    pattern (contains a space) or a number of milliseconds."""
    parts = member.split(":")
    if len(parts) != 5:
        return False
    end_date, last = parts[2], parts[4]
    return (end_date == "" or end_date.isdigit()) and (" " in last or last.isdigit())


def read_schedulers(
    client: redis.Redis, queue: QueueRef, *, cron_tz: str = "", start: int = 0, count: int = MAX_SCHEDULERS
) -> list[Scheduler]:
    """The ``count`` schedulers from index ``start`` of the ``repeat`` set (soonest score first),
    read ``SCHEDULER_CHUNK`` at a time. ``cron_tz``: the zone the connection's workers run
    zone-less patterns in, if configured."""
    found: list[Scheduler] = []
    end = start + count
    for first in range(start, end, SCHEDULER_CHUNK):
        last = min(first + SCHEDULER_CHUNK, end) - 1
        members = replies.scored(client.zrange(queue.key("repeat"), first, last, withscores=True))
        found += _read_entries(client, queue, [(to_text(member), score) for member, score in members], cron_tz)
        if len(members) <= last - first:
            break
    return found


def read_scheduler_page(
    client: redis.Redis, queue: QueueRef, *, start: int, count: int, cron_tz: str = ""
) -> tuple[list[Scheduler], int]:
    """One page of schedulers, and how many the queue has."""
    total = int(client.zcard(queue.key("repeat")))
    return read_schedulers(client, queue, cron_tz=cron_tz, start=start, count=count), total


def read_scheduler(client: redis.Redis, queue: QueueRef, scheduler_id: str, *, cron_tz: str = "") -> Scheduler | None:
    """One scheduler by id, or None when the ``repeat`` set does not hold it."""
    score = client.zscore(queue.key("repeat"), scheduler_id)
    if score is None:
        return None
    (found,) = _read_entries(client, queue, [(scheduler_id, score)], cron_tz)
    return found


def _read_entries(
    client: redis.Redis, queue: QueueRef, members: list[tuple[str, float | None]], cron_tz: str
) -> list[Scheduler]:
    pipe = client.pipeline(transaction=False)
    for sid, _score in members:
        pipe.hgetall(queue.key("repeat:") + sid)
    hashes = pipe.execute() if members else []
    result = [
        _entry(sid, score, {to_text(k): to_text(v) for k, v in h.items()}, cron_tz)
        for (sid, score), h in zip(members, hashes)
    ]
    _mark_finished(client, queue, result)
    return result


def _entry(sid: str, score: float | None, h: dict[str, str], cron_tz: str) -> Scheduler:
    if not h and is_legacy_key_shape(sid):
        parts = sid.split(":")
        legacy = "key-shape"
        name, tz, spec = parts[0], parts[3], parts[4]
        pattern, every = (spec, None) if " " in spec else ("", to_safe_int(spec))
        end_date = to_safe_int(parts[2])
    else:
        # A member with neither a hash nor the old key shape has no definition at all: BullMQ 6
        # cannot run it, and Node's ``getJobSchedulers()`` deletes it when it lists the queue's.
        legacy = "" if "ic" in h else ("v5-hash" if h else "no-definition")
        name, tz, pattern, every = h.get("name", ""), h.get("tz", ""), h.get("pattern", ""), to_safe_int(h.get("every"))
        end_date = to_safe_int(h.get("endDate"))
    # A producer can score the entry ``inf`` or ``-inf`` (or any time no date can show): it has no
    # next run we can show, and only this row says so.
    next_run = to_ms(score)
    unreadable = ("next_run",) if score is not None and next_run is None else ()
    return Scheduler(
        id=sid,
        name=name,
        pattern=pattern,
        every=every,
        tz=tz,
        next_run=next_run,
        iterations=to_safe_int(h.get("ic")),
        limit=to_safe_int(h.get("limit")),
        start_date=to_safe_int(h.get("startDate")),
        end_date=end_date,
        legacy=legacy,
        zone=stored_zone(pattern=pattern, tz=tz, score=next_run, configured=cron_tz),
        offset=to_safe_int(h.get("offset")),
        unreadable=unreadable + unreadable_fields(h, ("every", "ic", "limit", "startDate", "endDate", "offset")),
    )


def _mark_finished(client: redis.Redis, queue: QueueRef, schedulers: list[Scheduler]) -> None:
    """Set ``finished`` (and clear ``next_run``) on the schedulers BullMQ will not run again.
    Only those with a limit or an end date can be; their last iteration's job (BullMQ's id
    ``repeat:<id>:<score>``) says whether it still waits for a worker: created, not processed."""
    now_ms = int(time.time() * 1000)
    bounded = [
        s
        for s in schedulers
        # BullMQ 6 throws on a key-shaped entry rather than finishing it: it stays a legacy problem.
        if s.next_run is not None and s.legacy != "key-shape" and (s.limit is not None or s.end_date is not None)
    ]
    if not bounded:
        return
    pipe = client.pipeline(transaction=False)
    for s in bounded:
        pipe.hmget(queue.job_key(f"repeat:{s.id}:{s.next_run}"), "timestamp", "processedOn")
    for s, (created, processed) in zip(bounded, pipe.execute()):
        if is_finished(
            iterations=s.iterations,
            limit=s.limit,
            end_date=s.end_date,
            pattern=s.pattern,
            tz=s.pattern_tz,
            last_run=s.next_run,
            last_run_pending=created is not None and processed is None,
            now_ms=now_ms,
        ):
            s.finished, s.next_run = True, None
