"""The job tools on Redis: change a job's priority (BullMQ's ``changePriority-7``), reschedule a
delayed job (``changeDelay-4``) and move a job to failed by hand (``moveToFinished-14``), each
with the vendored 6.7 script, unchanged.

Two are composed (``queues.redis.bullmq_scripts``, "compose"): a few lines of ours run before
BullMQ's script in the same atomic step.

* Change priority checks that the id is a job in a state the tool allows (``changePriority``
  itself would write ``priority`` into any key of that name, a finished job's too).
* Move to failed: BullMQ moves a job to failed only from ``active``, releasing the lock of the
  worker that holds it (``Job.moveToFailed``). A job no worker holds is failed the same way:
  a waiting, prioritized or delayed job is taken out of its list or set and put on ``active``,
  and ``moveToFinished`` runs at once with no lock token, inside the one script, so no worker
  can ever see it on ``active``. An active job is failed only when no worker holds its lock any
  more (a stalled job); while a live worker holds it the tool refuses, so a running job's
  worker never finds its job gone. Everything else (the ``failed`` event and
  ``retries-exhausted``, the attempt counter, the job's ``removeOnFail``, the deduplication key
  released and a ``keepLastIfActive`` successor added, a flow parent told as its child's own
  options say) is BullMQ's own code.
"""

from __future__ import annotations

import time

import msgpack
import redis

from .. import job_tools
from ..actions import NOT_A_JOB_REPLY, ActionResult
from ..keys import QueueRef
from ..safe_json import loads_or
from ..states import BY_NAME
from ..text import to_text
from .actions import is_last_of_finished_scheduler
from .bullmq_scripts import IN_A_STATE, as_function, bullmq_source, lua_script

CHANGE_PRIORITY_SRC = (
    as_function("change_priority", "changePriority-7.lua")
    + IN_A_STATE
    + """
-- KEYS/ARGV exactly as changePriority-7 (ARGV[2] the queue key prefix, ARGV[3] the job id);
-- ARGV[5..] the state keys the change is allowed in. -1 missing, -101 not a job, -3 another state.
local state = state_of(ARGV[2], ARGV[3])
if not state then
  if redis.call("EXISTS", ARGV[2] .. ARGV[3]) == 0 then return -1 end
  return -101
end
for i = 5, #ARGV do
  if ARGV[i] == state then
    return change_priority(KEYS, {ARGV[1], ARGV[2], ARGV[3], ARGV[4]})
  end
end
return -3
"""
)

MOVE_TO_FAILED_SRC = (
    as_function("move_to_finished", "moveToFinished-14.lua")
    + IN_A_STATE
    + """
-- KEYS/ARGV exactly as moveToFinished-14 with target "failed" and lock token "0" (ARGV[7] the
-- queue key prefix). -1 missing, -101 not a job, -3 a state that cannot be failed by hand,
-- -6 an active job whose lock a worker holds.
local id, jobKey, prefix = ARGV[1], KEYS[12], ARGV[7]
if redis.call("EXISTS", jobKey) == 0 then return -1 end
local state = state_of(prefix, id)
if not state then return -101 end
if state == "active" then
  if redis.call("EXISTS", jobKey .. ":lock") == 1 then return -6 end
elseif state == "wait" or state == "paused" then
  redis.call("LREM", prefix .. state, 0, id)
  redis.call("RPUSH", KEYS[2], id)
elseif state == "prioritized" or state == "delayed" then
  redis.call("ZREM", prefix .. state, id)
  redis.call("RPUSH", KEYS[2], id)
else
  return -3
end
return move_to_finished(KEYS, ARGV)
"""
)

SCRIPTS = {
    "change_priority": lua_script(CHANGE_PRIORITY_SRC),
    "change_delay": lua_script(bullmq_source("changeDelay-4.lua")),
    "move_to_failed": lua_script(MOVE_TO_FAILED_SRC),
}


def state_keys(states: tuple[str, ...]) -> list[str]:
    """The keys of ``states`` as the Lua ``state_of`` answers them; waiting includes a legacy
    ``paused`` list."""
    keys = [BY_NAME[state].key for state in states]
    return keys + ["paused"] if "wait" in keys else keys


def now_ms() -> int:
    return int(time.time() * 1000)


def not_a_hash(client: redis.Redis, queue: QueueRef, job_id: str) -> bool:
    """A key under the queue that is no job's hash (a deduplication key, the events stream...)."""
    return to_text(client.type(queue.job_key(job_id))) not in ("hash", "none")


def stored_opts(client: redis.Redis, queue: QueueRef, job_id: str) -> dict:
    opts = loads_or(to_text(client.hget(queue.job_key(job_id), "opts"), "{}"), None)
    return opts if isinstance(opts, dict) else {}


# ---------------------------------------------------------------------------------------------
# Change priority


def change_priority_call(queue: QueueRef, job_id: str, *, priority: int, lifo: bool) -> tuple[list[str], list]:
    keys = [queue.key(s) for s in ("wait", "paused", "meta", "prioritized", "active", "pc", "marker")]
    return keys, [priority, queue.base, job_id, "1" if lifo else "0", *state_keys(job_tools.PRIORITY_STATES)]


def change_priority(client: redis.Redis, *, queue: QueueRef, job_id: str, priority: int) -> ActionResult:
    """``Job.changePriority({priority, lifo})`` with the job's own ``lifo``: a waiting or
    prioritized job is re-queued by the new priority at once (0 puts it back on ``wait``); a
    delayed or waiting-children job keeps it for when it becomes ready."""
    if not_a_hash(client, queue, job_id):
        return job_tools.priority_outcome(job_id, NOT_A_JOB_REPLY, priority=priority)
    lifo = bool(stored_opts(client, queue, job_id).get("lifo"))
    keys, args = change_priority_call(queue, job_id, priority=priority, lifo=lifo)
    code = int(SCRIPTS["change_priority"](keys=keys, args=args, client=client))
    return job_tools.priority_outcome(job_id, code, priority=priority)


# ---------------------------------------------------------------------------------------------
# Change delay


def change_delay_call(queue: QueueRef, job_id: str, *, delay_ms: int, now: int) -> tuple[list[str], list]:
    keys = [queue.key("delayed"), queue.key("meta"), queue.key("marker"), queue.key("events")]
    return keys, [delay_ms, str(now), job_id, queue.job_key(job_id)]


def change_delay(client: redis.Redis, *, queue: QueueRef, job_id: str, delay_ms: int) -> ActionResult:
    """``Job.changeDelay(delay)``: the delayed job becomes ready ``delay_ms`` from now (not from
    when it was added), with BullMQ's ``delayed`` event and the workers' delay marker moved."""
    now = now_ms()
    keys, args = change_delay_call(queue, job_id, delay_ms=delay_ms, now=now)
    code = int(SCRIPTS["change_delay"](keys=keys, args=args, client=client))
    return job_tools.delay_outcome(job_id, code, run_at_ms=now + delay_ms)


# ---------------------------------------------------------------------------------------------
# Move to failed


def keep_jobs(remove_on_fail: object) -> dict:
    """BullMQ's ``getKeepJobs`` for the job's own ``removeOnFail`` (a worker's default is not
    known here: a job without the option is kept, as BullMQ keeps it without a worker default)."""
    if isinstance(remove_on_fail, bool):
        return {"count": 0 if remove_on_fail else -1}
    if isinstance(remove_on_fail, int):
        return {"count": remove_on_fail}
    if isinstance(remove_on_fail, dict):
        return {k: v for k, v in remove_on_fail.items() if k in ("age", "count", "limit") and isinstance(v, int)}
    return {"count": -1}


def move_to_failed_call(queue: QueueRef, job_id: str, *, reason: str, opts: dict, now: int) -> tuple[list[str], list]:
    """moveToFinished's keys and arguments as ``Job.moveToFailed`` builds them (no lock token, no
    next job fetched, no metrics: this is no worker's failure)."""
    keys = [
        queue.key(s)
        for s in ("wait", "active", "prioritized", "events", "stalled", "limiter", "delayed", "paused", "meta", "pc")
    ]
    keys += [queue.key("failed"), queue.job_key(job_id), queue.key("metrics:failed"), queue.key("marker")]
    attempts = opts.get("attempts")
    packed = msgpack.packb(
        {
            "token": "0",
            "keepJobs": keep_jobs(opts.get("removeOnFail")),
            "attempts": attempts if isinstance(attempts, int) else 0,
            "maxMetricsSize": "",
            "fpof": bool(opts.get("fpof")),
            "cpof": bool(opts.get("cpof")),
            "idof": bool(opts.get("idof")),
            "rdof": bool(opts.get("rdof")),
        }
    )
    return keys, [job_id, now, "failedReason", reason, "failed", "0", queue.base, packed]


def pending_iteration(client: redis.Redis, queue: QueueRef, job_id: str) -> bool:
    """Whether this scheduler's job is its pending iteration (not yet taken by a worker) of a
    scheduler that is not finished. Read only for a scheduler's job: ``LPOS`` walks the list."""
    pending = any(client.zscore(queue.key(s), job_id) is not None for s in ("delayed", "prioritized")) or (
        client.lpos(queue.key("wait"), job_id) is not None
    )
    return pending and not is_last_of_finished_scheduler(client, queue=queue, job_id=job_id)


def move_to_failed(client: redis.Redis, *, queue: QueueRef, job_id: str, reason: str) -> ActionResult:
    """Fail a job no worker holds, with ``reason`` as its ``failedReason`` (see the module)."""
    key = queue.job_key(job_id)
    if not_a_hash(client, queue, job_id):
        return job_tools.failed_outcome(job_id, NOT_A_JOB_REPLY)
    if client.hexists(key, "rjk") and pending_iteration(client, queue, job_id):
        return job_tools.scheduler_iteration(job_id)
    keys, args = move_to_failed_call(
        queue, job_id, reason=reason, opts=stored_opts(client, queue, job_id), now=now_ms()
    )
    code = int(SCRIPTS["move_to_failed"](keys=keys, args=args, client=client))
    return job_tools.failed_outcome(job_id, code, kept=code != 0 or bool(client.exists(key)))
