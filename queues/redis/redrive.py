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

import time

import msgpack
import redis

from ..actions import MISSING, ActionResult
from ..keys import QueueRef
from ..messages import _
from ..redrive_rules import (  # noqa: F401  (the outcome codes, for the callers that name them here)
    CHANGED,
    CROSS_SLOT,
    DEDUPLICATED,
    NO_SOURCE,
    NOT_ENVELOPED,
    TARGET_EXISTS,
    UNKNOWN_TARGET,
    candidate_ids,
    cross_slot_refusal,
    envelope_refusal,
    keepable_id,
    kept_items,
    redrive_job_id,
    redrive_outcome,
)
from .bullmq_scripts import IN_A_STATE, as_function, lua_script
from .redrive_copy import RedriveCopy, read_redrive_copy

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


def job_redrive_to_source(
    client: redis.Redis, *, dlq: QueueRef, job_id: str, source: QueueRef, payload_field: str | None = None
) -> ActionResult:
    """Move one job of an application dead-letter queue into its source queue.

    The copy gets the dead letter's name, data (or, with ``payload_field``, the value of that
    field of its data: for envelopes such as ``{"source": ..., "data": {...}}``) and the
    options of ``COPIED_OPTS``, keeping its identity as the module docstring says; attempt
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
