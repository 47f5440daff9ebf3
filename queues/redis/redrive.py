"""Redrive: move a job of an application dead-letter queue back into its source queue, keeping
its identity (which queue is the source: ``queues.dead_letters``; the caller passes it in).

What the copy keeps, and why (each kept item is reported per job, ``ActionResult.kept``):

* **Its id**, when the dead letter's id is a custom one (not a number BullMQ generated) that
  Node would accept and that is free in the source: ``order-42`` comes back as ``order-42``.
  Otherwise the deterministic ``redrive-<dlq>-<id>``; and when that too is taken by a finished
  copy (an earlier redrive that completed or failed), ``redrive-<dlq>-<id>-<timestamp>``, the
  dead letter's own timestamp, so each dead-letter *incarnation* has its own id and a second
  redrive of the same custom id is never stuck. The reason (which id was taken, by a job in
  which state) is part of the result. If a candidate id is held by a job that is still
  waiting, active, delayed or prioritized, the same work is already under way: the dead letter
  is left where it is (``target_exists``) and can be redriven once that job has finished.
* **Its deduplication id** (``de``/``deid``): the copy is added with the deduplication key, so a
  later ``Queue.add`` with that id is deduplicated against it, as against the original. If the
  id is held in the source right now by another job (or a deduplication window), BullMQ would
  not add the copy; it is left in the dead-letter queue (``deduplicated``), nothing is lost.
* **Its priority** (added with ``addPrioritizedJob``) and **lifo** (``addStandardJob`` pushes it
  to the head), as ``Queue.add`` would with those options.
* **Its delay only where it still means something**: a dead letter that is itself delayed and
  not yet due gives the copy the same due time; a delay already served is not served again.

Removing the dead letter (``removeJob``) and adding the copy (BullMQ's add script for the
options, as ``Queue.add`` picks it) are one composed script, so a repeat after a crash can
neither duplicate nor lose a job. Reading what the copy carries: ``queues.redis.redrive_copy``. No Django
imports.
"""

from __future__ import annotations

import re
import time

import msgpack
import redis

from ..actions import DONE, MISSING, ActionResult
from ..job_options import RESERVED_IDS
from ..keys import QueueRef
from ..messages import Joined, _
from ..text import to_text
from .actions import remove_outcome
from .bullmq_scripts import IN_A_STATE, as_function, lua_script
from .redrive_copy import RedriveCopy, read_redrive_copy

TARGET_EXISTS = "target_exists"  # a job with the copy's id is still waiting/active/... in the source
DEDUPLICATED = "deduplicated"  # the deduplication id is held in the source by another job
CHANGED = "changed"  # the job was replaced between read and move
NO_SOURCE = "no_source"  # no source queue could be determined
UNKNOWN_TARGET = "unknown_target"  # the source queue does not exist (no <prefix>:<queue>:meta)
NOT_ENVELOPED = "not_enveloped"  # the dead letter lacks the data field its queue's envelope names
CROSS_SLOT = "cross_slot"  # on a Redis Cluster, the two queues are in different hash slots

_INTEGER = re.compile(r"-?(0|[1-9][0-9]*)")


def redrive_job_id(*, dlq_name: str, job_id: str) -> str:
    """The deterministic id of a dead-letter job's copy when its own id cannot be kept.

    Never an integer string and without ``:`` (Node rejects most ids with ``:``): ``%`` and
    ``:`` are percent-escaped, which keeps the mapping one-to-one."""
    escaped = job_id.replace("%", "%25").replace(":", "%3A")
    return f"redrive-{dlq_name}-{escaped}"


def keepable_id(job_id: str) -> bool:
    """Whether the dead letter's id is a custom id Node's ``Queue.add`` would accept as such
    (a plain integer is one BullMQ generated, and refused as a custom id)."""
    return (
        bool(job_id.strip())
        and len(job_id) <= 1000
        and not _INTEGER.fullmatch(job_id)
        and ":" not in job_id
        and job_id not in RESERVED_IDS
    )


def candidate_ids(*, dlq_name: str, job_id: str, timestamp_raw: str) -> list[str]:
    """The ids the copy may get, in order of preference (see the module docstring)."""
    fallback = redrive_job_id(dlq_name=dlq_name, job_id=job_id)
    ids = [job_id] if keepable_id(job_id) else []
    ids.append(fallback)
    if timestamp_raw:
        ids.append(f"{fallback}-{timestamp_raw.replace('%', '%25').replace(':', '%3A')}")
    return ids


# The source queue's keys the composed script takes, in this order; each add script gets its own
# selection of them, in the order it expects (as ``queues.redis.job_add._KINDS``).
SOURCE_KEYS = (
    "wait",
    "paused",
    "meta",
    "id",
    "completed",
    "delayed",
    "active",
    "events",
    "marker",
    "prioritized",
    "pc",
)

REDRIVE = lua_script(
    as_function("remove_job", "removeJob-2.lua")
    + as_function("add_standard", "addStandardJob-9.lua")
    + as_function("add_delayed", "addDelayedJob-6.lua")
    + as_function("add_prioritized", "addPrioritizedJob-9.lua")
    + IN_A_STATE
    + """
-- KEYS[1..11] source: wait, paused, meta, id, completed, delayed, active, events, marker,
--             prioritized, pc. KEYS[12] dead-letter job key, KEYS[13] dead-letter repeat key,
--             KEYS[14] the source's deduplication key for the copy (its meta key when none).
-- ARGV[1] add kind (standard|delayed|prioritized), ARGV[2] data, ARGV[3] packed options,
-- ARGV[4] dead-letter job id, ARGV[5] dead-letter queue key prefix, ARGV[6] its timestamp as
-- read (a job removed and re-added under the same id in between is not moved with stale data),
-- ARGV[7] source queue key prefix, ARGV[8] deduplication id or "", ARGV[9..] pairs of
-- (candidate id, the add script's packed arguments for it), in order of preference.
-- Returns {1, id, taken id, its state, ...} moved; {-100, id, state} a candidate is held by an
-- unfinished job; {-104} every candidate is taken by a finished job; {-103, holder} the
-- deduplication id is held; {-1} no such job; {-3} changed
-- since read; {-101} not a job; {-102} no source queue; else {removeJob's code}.
if redis.call("EXISTS", KEYS[12]) == 0 then return {-1} end
if not in_a_state(ARGV[5], ARGV[4]) then return {-101} end
if redis.call("EXISTS", KEYS[3]) == 0 then return {-102} end
if redis.call("HGET", KEYS[12], "timestamp") ~= ARGV[6] then return {-3} end
if ARGV[8] ~= "" then
  local holder = redis.call("GET", KEYS[14])
  -- A key without expiry whose job is gone is stale: BullMQ's add script recovers it itself.
  if holder and not (redis.call("PTTL", KEYS[14]) == -1 and redis.call("EXISTS", ARGV[7] .. holder) == 0) then
    return {-103, holder}
  end
end
local reply = {1, ""}
local packed
for i = 9, #ARGV, 2 do
  local id = ARGV[i]
  if redis.call("EXISTS", ARGV[7] .. id) == 0 then
    reply[2], packed = id, ARGV[i + 1]
    break
  end
  local state = state_of(ARGV[7], id) or "none"
  if state ~= "completed" and state ~= "failed" and state ~= "none" then return {-100, id, state} end
  reply[#reply + 1] = id
  reply[#reply + 1] = state
end
if not packed then return {-104} end
local removed = remove_job({KEYS[12], KEYS[13]}, {ARGV[4], "0", ARGV[5]})
if removed ~= 1 then return {removed} end
local args = {packed, ARGV[2], ARGV[3]}
local added
if ARGV[1] == "delayed" then
  added = add_delayed({KEYS[9], KEYS[3], KEYS[4], KEYS[6], KEYS[5], KEYS[8]}, args)
elseif ARGV[1] == "prioritized" then
  added = add_prioritized({KEYS[9], KEYS[3], KEYS[4], KEYS[10], KEYS[6], KEYS[5], KEYS[7], KEYS[8], KEYS[11]}, args)
else
  added = add_standard({KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]}, args)
end
reply[2] = tostring(added)
return reply
"""
)


def redrive_call(
    *, dlq: QueueRef, job_id: str, source: QueueRef, copy: RedriveCopy, now_ms: int
) -> tuple[list[str], list]:
    """KEYS and ARGV for the composed redrive script."""
    kind, opts = copy.placed(now_ms)
    dedup_key = source.key(f"de:{copy.dedup_id}") if copy.dedup_id else None
    keys = [source.key(s) for s in SOURCE_KEYS] + [
        dlq.job_key(job_id),
        dlq.key("repeat"),
        dedup_key or source.key("meta"),
    ]
    args = [
        kind,
        copy.data_json,
        msgpack.packb(opts, use_bin_type=True),
        job_id,
        dlq.base,
        copy.timestamp_raw,
        source.base,
        copy.dedup_id,
    ]
    for new_id in candidate_ids(dlq_name=dlq.name, job_id=job_id, timestamp_raw=copy.timestamp_raw):
        args += [
            new_id,
            msgpack.packb(
                [source.base, new_id, copy.name, now_ms, None, None, None, None, dedup_key], use_bin_type=True
            ),
        ]
    return keys, args


def kept_items(
    copy: RedriveCopy, *, job_id: str, new_id: str, taken: list[str], now_ms: int
) -> tuple[list[str], list[str]]:
    """(what the copy kept, as counter names; the same in words) for a moved job."""
    kind, opts = copy.placed(now_ms)
    names: list[str] = []
    words: list[str] = []
    if new_id == job_id:
        names.append("job_id")
        words.append(_("its id"))
    else:
        names.append("new_id")
        reasons = [
            _("{id} is taken by a {state} job", id=taken[i], state=taken[i + 1]) for i in range(0, len(taken), 2)
        ]
        words.append(
            _("a new id ({why})", why=Joined(reasons, "; "))
            if reasons
            else _("a new id (a number BullMQ generated is not kept)")
        )
    if copy.unwrapped:
        names.append("unwrapped")
        words.append(_("the {field} field of its data as its data", field=copy.unwrapped))
    if copy.dedup_id:
        names.append("deduplication")
        words.append(_("deduplication id {id}", id=copy.dedup_id))
    if kind == "prioritized" or (opts.get("priority") and kind == "delayed"):
        names.append("priority")
        words.append(_("priority {n}", n=opts["priority"]))
    if kind == "delayed":
        names.append("delay")
        words.append(_("its delay (due in {ms} ms)", ms=opts["delay"]))
    if opts.get("lifo") and not opts.get("priority"):
        names.append("lifo")
        words.append(_("lifo"))
    return names, words


def envelope_refusal(job_id: str, copy: RedriveCopy, *, dlq: QueueRef) -> ActionResult | None:
    """A dead letter without the field its queue's envelope holds the original data in is left
    where it is: copied whole, it would only fail in the source queue."""
    if not copy.envelope_missing:
        return None
    return ActionResult(
        job_id,
        NOT_ENVELOPED,
        _(
            "Job {id} was not moved: its data has no field {field}, where the dead letters of {dlq} keep the "
            "original data. It was left in {dlq}.",
            id=job_id,
            field=copy.envelope_missing,
            dlq=dlq.name,
        ),
    )


def redrive_outcome(
    job_id: str, reply: list, *, dlq: QueueRef, source: QueueRef, copy: RedriveCopy, now_ms: int
) -> ActionResult:
    code = int(reply[0])
    if code == 1:
        new_id = to_text(reply[1])
        taken = [to_text(x) for x in reply[2:]]
        names, words = kept_items(copy, job_id=job_id, new_id=new_id, taken=taken, now_ms=now_ms)
        return ActionResult(
            job_id,
            DONE,
            _(
                "Job {id} moved from {dlq} to {source} as job {new}; kept: {kept}.",
                id=job_id,
                dlq=dlq.name,
                source=source.name,
                new=new_id,
                kept=Joined(words, ", "),
            ),
            kept=tuple(names),
            moved_to=(source, new_id),
        )
    if code == -100:
        return ActionResult(
            job_id,
            TARGET_EXISTS,
            _(
                "Job {id} was not moved: {source} still holds job {other} ({state}), an earlier copy of the same work. "
                "It was left in {dlq}; redrive it again once that job has finished.",
                id=job_id,
                source=source.name,
                other=to_text(reply[1]),
                state=to_text(reply[2]),
                dlq=dlq.name,
            ),
        )
    if code == -104:
        return ActionResult(
            job_id,
            TARGET_EXISTS,
            _(
                "Job {id} was not moved: every id its copy could take in {source} is taken by an earlier copy. It was "
                "left in {dlq}.",
                id=job_id,
                source=source.name,
                dlq=dlq.name,
            ),
        )
    if code == -103:
        return ActionResult(
            job_id,
            DEDUPLICATED,
            _(
                "Job {id} was not moved: its deduplication id {dedup} is held in {source} by job {holder}, so BullMQ "
                "would not add it. It was left in {dlq}.",
                id=job_id,
                dedup=copy.dedup_id,
                source=source.name,
                holder=to_text(reply[1]),
                dlq=dlq.name,
            ),
        )
    if code == -3:
        return ActionResult(
            job_id, CHANGED, _("Job {id} changed while being redriven; it was left in {dlq}.", id=job_id, dlq=dlq.name)
        )
    if code == -1:
        return ActionResult(job_id, MISSING, _("Job {id} no longer exists.", id=job_id))
    if code == -102:
        return ActionResult(
            job_id,
            UNKNOWN_TARGET,
            _(
                "Job {id} was not moved: there is no queue {source} (it has no meta key), so it was left in {dlq}. "
                "Check QUEUEWATCH_DLQ_MAP.",
                id=job_id,
                source=source.name,
                dlq=dlq.name,
            ),
        )
    return remove_outcome(job_id, code)


def cross_slot_refusal(job_id: str, *, dlq: QueueRef, source: QueueRef) -> ActionResult:
    """A redrive a Redis Cluster cannot run: the composed script names keys of both queues, and
    a Cluster runs a script only on keys of one hash slot (it would fail with ``CROSSSLOT``)."""
    return ActionResult(
        job_id,
        CROSS_SLOT,
        _(
            "Job {id} was not moved: a redrive moves it from {dlq} to {source} in one atomic step, which on a Redis "
            "Cluster needs both queues in the same hash slot, and theirs differ. Give both queues the same hash tag "
            "(for example the prefix {example}, or one tag in both names) so they share a slot. It was left in {dlq}.",
            id=job_id,
            dlq=dlq.name,
            source=source.name,
            example="{bull}",
        ),
    )


def job_redrive_to_source(
    client: redis.Redis, *, dlq: QueueRef, job_id: str, source: QueueRef, payload_field: str | None = None
) -> ActionResult:
    """Move one job of an application dead-letter queue into its source queue.

    The copy gets the dead letter's name, data (or, with ``payload_field``, the value of that
    field of its data: for envelopes such as ``{"source": ..., "data": {...}}``) and options
    minus ``DROPPED_OPTS``, keeping its identity as the module docstring says; attempt
    counters start from zero. ``source`` must be on the same connection."""
    if source.connection != dlq.connection:
        raise ValueError("A dead-letter job can only be redriven to a queue on the same Redis connection.")
    copy = read_redrive_copy(client, dlq=dlq, job_id=job_id, payload_field=payload_field)
    if copy is None:
        return ActionResult(job_id, MISSING, _("Job {id} no longer exists.", id=job_id))
    refused = envelope_refusal(job_id, copy, dlq=dlq)
    if refused is not None:
        return refused
    now = int(time.time() * 1000)
    keys, args = redrive_call(dlq=dlq, job_id=job_id, source=source, copy=copy, now_ms=now)
    reply = REDRIVE(keys=keys, args=args, client=client)
    return redrive_outcome(job_id, reply, dlq=dlq, source=source, copy=copy, now_ms=now)
