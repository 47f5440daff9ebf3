"""BullMQ's own Lua scripts, vendored from the pinned npm package, for a sync client.

The scripts are those of the newest BullMQ release Queuewatch supports (``SCRIPTS_VERSION``,
6.7.0): ``queues/redis/bullmq_lua/*.lua`` are the flattened scripts (their ``--- @include``s
resolved) that the npm package ships in ``dist/cjs/scripts/*.js``, byte for byte
(``tests/queues/test_vendored_scripts.py`` compares them with the pinned package in
``tests/node``; the Docker image has no Node). The Python ``bullmq`` package carries 6.4's
copies, whose add scripts ignore 6.7's deduplication ``reschedule``. Every state change a Node
worker can see is made by BullMQ's own code: the scripts are not edited, with one exception
(``MOVE_JOBS_TO_WAIT_RESETTING``, where one HDEL also names the counters a reset deletes).

Which release wrote a queue is in its ``meta`` (``version``, ``bullmq:<x.y.z>``, written by the
Node Queue; Python writes none): a queue recorded by a *newer* release than ``SCRIPTS_VERSION``
may hold data our scripts do not know, so the commands refuse to change it
(``queues.script_versions``).

Two actions need more than one BullMQ script to run as one atomic step. Instead of MULTI (where
EVALSHA cannot fall back to loading the script and the second step cannot see the first one's
result), we *compose*: each BullMQ script's text is wrapped, unchanged, as a local Lua function
taking its own ``KEYS``/``ARGV``, and a few lines of ours call them in order. Redis runs the
whole composition atomically, so a crash of our process, a worker or another operator can
never observe a half-done action:

* ``RETRY`` = ``reprocessJob-9`` and, only when it returned 1 and a reset was asked for,
  ``HDEL <job> stc``. This is the one documented exception to "never hand-edit": no stock
  script resets the stall counter, and doing it in the same atomic step means no worker can
  take the job with its old stall budget (a separate HDEL after the move could race a worker).
* ``queues.redis.redrive.REDRIVE`` = ``removeJob-2`` on the dead-letter job and, only when it removed
  it, the add script ``Queue.add`` would pick for the copy's options, into the source queue.
  Either both happen or neither, so a repeat after a crash can neither duplicate nor lose the job.

On Redis Cluster a composition touches the keys of two queues (redrive) and needs both
queues in one hash slot (a hash-tagged prefix such as ``{bull}``), which BullMQ needs anyway
for flows across queues.
"""

from __future__ import annotations

import functools
from pathlib import Path

import redis
from redis.commands.core import Script

from ..actions import NOT_A_JOB_REPLY

SCRIPTS_VERSION = (6, 7, 0)  # the npm release the vendored scripts come from (tests/node/package.json)
COMMANDS_DIR = Path(__file__).resolve().parent / "bullmq_lua"


@functools.cache
def bullmq_source(filename: str) -> str:
    """The text of one of BullMQ's flattened scripts, e.g. ``reprocessJob-9.lua``."""
    return (COMMANDS_DIR / filename).read_text(encoding="utf-8")


def as_function(name: str, filename: str) -> str:
    """BullMQ's script text, unchanged, as a local function ``name(KEYS, ARGV)``.

    The parameters shadow the globals, so the script reads exactly the keys and arguments we
    hand it; its ``return`` statements return from the function."""
    return f"local function {name}(KEYS, ARGV)\n{bullmq_source(filename)}\nend\n"


# A job id comes from a user or a producer, and every key under a queue looks like a job key
# (``<prefix>:<queue>:<id>``): ``meta``, ``events``, a scheduler's ``repeat:<id>`` hash, a
# deduplication key ``de:<id>``. An action acts on an id only if the id sits in one of the
# queue's state structures, checked inside the same script as the action, so nothing can move
# in between. (BullMQ's reprocessJob and promote check their own state set already;
# removeJob checks nothing, so discard and redrive add this.)
NOT_A_JOB = NOT_A_JOB_REPLY
IN_A_STATE = """
local function state_of(prefix, id)
  for _, s in ipairs({"completed", "failed", "delayed", "prioritized", "waiting-children"}) do
    if redis.call("ZSCORE", prefix .. s, id) then return s end
  end
  for _, s in ipairs({"wait", "paused", "active"}) do
    if redis.call("LPOS", prefix .. s, id) then return s end
  end
  return nil
end
local function in_a_state(prefix, id)
  return state_of(prefix, id) ~= nil
end
"""

REMOVE_SRC = (
    as_function("remove_job", "removeJob-2.lua")
    + IN_A_STATE
    + """
-- KEYS/ARGV exactly as removeJob-2 (ARGV[3] is the queue key prefix). -101: not a job.
-- ARGV[4] = "1": the job is a finished scheduler's last iteration (BullMQ runs no further
-- one, so removing it cannot stop the scheduler). removeJob refuses (-8) the iteration its
-- scheduler's score points at; it is handed KEYS[3], a key no scheduler set lives in, as the
-- repeat set, and refuses as before should that key ever exist.
if not in_a_state(ARGV[3], ARGV[1]) then return -101 end
if ARGV[4] == "1" then
  if redis.call("EXISTS", KEYS[3]) == 1 then return -8 end
  return remove_job({KEYS[1], KEYS[3]}, ARGV)
end
return remove_job({KEYS[1], KEYS[2]}, ARGV)
"""
)

RETRY_SRC = (
    as_function("reprocess_job", "reprocessJob-9.lua")
    + """
-- KEYS/ARGV exactly as reprocessJob-9; ARGV[7] = "1" also resets the stall counter.
local result = reprocess_job(KEYS, ARGV)
if result == 1 and ARGV[7] == "1" then
  redis.call("HDEL", KEYS[1], "stc")
end
return result
"""
)

# Batch forms for the bulk engine: one EVALSHA runs BullMQ's script once per job id, in order,
# and returns each job's code. A batch is one atomic step (it blocks Redis for about 15 us per
# job; the engine keeps batches at or below 1000 jobs). Job keys are built from the queue's key
# prefix inside Lua, as BullMQ's own multi-job scripts (moveJobsToWait, cleanJobsInSet) do.

# Node's ``Job.retry`` pushes a ``lifo`` job to the head of the wait list (RPUSH); the bulk
# scripts read each job's stored options to do the same. A plain substring test: BullMQ stores
# options as compact JSON (``JSON.stringify``), so ``"lifo":true`` is exactly how it appears.
PUSH_CMD = """
local function push_cmd(opts)
  if opts and string.find(opts, '"lifo":true', 1, true) then return "RPUSH" end
  return "LPUSH"
end
"""

RETRY_BATCH_SRC = (
    as_function("reprocess_job", "reprocessJob-9.lua")
    + PUSH_CMD
    + """
-- KEYS[1..8]: events, <state>, wait, meta, active, marker, prioritized, pc
-- ARGV[1] queue key prefix, ARGV[2] state, ARGV[3] field to clear, ARGV[4] reset "1"/"0",
-- ARGV[5..] job ids. Returns reprocessJob's code per job.
local codes = {}
for i = 5, #ARGV do
  local id = ARGV[i]
  local jobKey = ARGV[1] .. id
  local code = reprocess_job({jobKey, KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]},
                             {id, push_cmd(redis.call("HGET", jobKey, "opts")), ARGV[3], ARGV[2], ARGV[4], ARGV[4]})
  if code == 1 and ARGV[4] == "1" then
    redis.call("HDEL", jobKey, "stc")
  end
  codes[#codes + 1] = code
end
return codes
"""
)

# Reading the jobs of a batch that is the head of a sorted set (the first n members): one
# SORT_RO ... BY nosort LIMIT 0 n GET <prefix>*-><field> GET ... for all the fields instead of one
# HMGET per job (each a call from Lua into Redis, which costs more than the read itself). SORT
# walks a sorted set in its own (rank) order when told not to sort, so the values come in the
# order of the ids ZRANGEBYSCORE gave. Only where that is a plain read: not on a listpack-encoded
# set (SORT converts it to a skiplist), not when the key prefix holds a "*" (SORT's pattern would
# substitute there); on Redis Cluster (GET patterns are refused), for an ACL user without every
# key, or on Redis before 7.0 (no SORT_RO) the SORT fails and each job is read with HMGET instead.
# The values come as one flat table, row after row (job 1's fields, then job 2's ...): splitting
# them into a table per field, or joining a field's values into one text to search, costs more
# Lua time than testing each value where it lies. A missing value (a set member without its job,
# or without the field) is false.
HEAD_READS = """
local function sortable(setKey, prefix)
  return not string.find(prefix, "*", 1, true) and redis.call("OBJECT", "ENCODING", setKey) == "skiplist"
end
local function head_rows(setKey, prefix, ids, fields)
  if sortable(setKey, prefix) then
    local cmd = {"SORT_RO", setKey, "BY", "nosort", "LIMIT", 0, #ids}
    for f = 1, #fields do
      cmd[#cmd + 1] = "GET"
      cmd[#cmd + 1] = prefix .. "*->" .. fields[f]
    end
    local r = redis.pcall(unpack(cmd))
    if not r.err then return r end
  end
  local rows = {}
  for i = 1, #ids do
    local v = redis.call("HMGET", prefix .. ids[i], unpack(fields))
    for f = 1, #fields do rows[#rows + 1] = v[f] end
  end
  return rows
end
-- Whether no job of `rows` (`stride` values per job) has a priority (the value at `p`; none, or
-- one that is not a number, reads as 0, as in reprocessJob) or lifo (its options, at `o`), so
-- BullMQ's moveJobsToWait puts each where Job.retry would (it pushes every job to the far end of
-- the wait list; Job.retry puts a priority job in prioritized and a lifo job at the near end).
-- A job without options (a set member without its job) is not plain either: the per-job road
-- is always right, only slower. Lua 5.1 interns every string, so jobs with the same options
-- (most of a queue) share one value and its search runs once per batch (`plain_opts`).
local function plain_jobs(rows, stride, p, o)
  for i = p, #rows, stride do
    local v = rows[i]
    if v ~= "0" and v and (tonumber(v) or 0) > 0 then return false end
  end
  local plain_opts = {}
  for i = o, #rows, stride do
    local v = rows[i]
    if not v then return false end
    if not plain_opts[v] then
      if string.find(v, '"lifo":true', 1, true) then return false end
      plain_opts[v] = true
    end
  end
  return true
end
"""


# BullMQ's moveJobsToWait, for the fast road of a bulk retry with the counters reset: its
# per-job HDEL (finishedOn, processedOn and failedReason or returnvalue) also deletes the
# fields in the table `counters` (an upvalue set before each call: {} or attempts made, attempts
# started and the stall counter). That is one HDEL of the fields reprocessJob's own HDEL deletes
# for Job.retry with resetAttemptsMade/resetAttemptsStarted, plus "stc" as in RETRY: the same
# writes in the same atomic step as the plain composition (an HDEL of the counters per job, then
# moveJobsToWait), one call into Redis fewer per job (about 0.03 s per 100,000 jobs of 0.38 s).
# The one change to a BullMQ script's text; it fails at import if BullMQ's line moved.
def _move_jobs_to_wait_resetting() -> str:
    source = bullmq_source("moveJobsToWait-8.lua")
    for field in ("failedReason", "returnvalue"):
        line = f'rcall("HDEL", jobKey, "finishedOn", "processedOn", "{field}")'
        if source.count(line) != 1:
            raise RuntimeError(f"moveJobsToWait-8.lua changed: {line} is not there once")
        source = source.replace(line, line[:-1] + ", unpack(counters))")
    return f"local counters = {{}}\nlocal function move_jobs_to_wait(KEYS, ARGV)\n{source}\nend\n"


MOVE_JOBS_TO_WAIT_RESETTING = _move_jobs_to_wait_resetting()
COUNTERS = '{"atm", "ats", "stc"}'  # Lua: the fields a retry with the counters reset deletes


RETRY_HEAD_SRC = (
    as_function("reprocess_job", "reprocessJob-9.lua")
    + MOVE_JOBS_TO_WAIT_RESETTING
    + PUSH_CMD
    + HEAD_READS
    + """
-- The bulk retry of a whole finished set (no filter) in batches the script picks itself, so
-- ids never travel to the caller and back.
-- KEYS[1..9]: events, <state>, wait, meta, active, marker, prioritized, pc, paused; KEYS[10]
-- the task's receipt key. ARGV[1] queue key prefix, ARGV[2] state, ARGV[3] field to clear,
-- ARGV[4] reset "1"/"0", ARGV[5] range max (e.g. "(1700000000000"), ARGV[6] offset (entries
-- left behind before the caller's cursor), ARGV[7] batch size, ARGV[8] batch number, ARGV[9]
-- "" or the number of the batch this one follows (sent before the caller read that one's
-- reply): it then runs only if that batch's receipt says it moved a full batch (so it left no
-- job behind and the head of the set is where this batch starts), else returns {-1, 0, "", ""}
-- and writes nothing.
-- The batch is the first ARGV[7] entries of the set from ARGV[6] up to ARGV[5]. When it is the
-- head of the set (offset 0) and no job has a priority or lifo, moveJobsToWait moves it (with the
-- reset, its per-job HDEL deletes the counters too); otherwise reprocessJob runs per job. The
-- receipt "<batch>:<moved>" is written in the same atomic step, so a caller that died before
-- reading the reply can tell afterwards whether the batch ran and what it moved.
-- Returns {taken, moved, last id, last score, id, code, id, code, ...} (jobs not moved).
if (ARGV[9] or "") ~= "" and redis.call("GET", KEYS[10]) ~= ARGV[9] .. ":" .. ARGV[7] then return {-1, 0, "", ""} end
local ids = redis.call("ZRANGEBYSCORE", KEYS[2], "-inf", ARGV[5], "LIMIT", ARGV[6], ARGV[7])
local n = #ids
if n == 0 then
  redis.call("SET", KEYS[10], ARGV[8] .. ":0", "PX", 86400000)
  return {0, 0, "", ""}
end
local last = redis.call("ZSCORE", KEYS[2], ids[n])
local fast = ARGV[6] == "0"
if fast then
  -- At offset 0 the batch is the first n members of the set.
  fast = plain_jobs(head_rows(KEYS[2], ARGV[1], ids, {"priority", "opts"}), 2, 1, 2)
end
local reply = {n, 0, ids[n], last}
if fast then
  counters = ARGV[4] == "1" and """
    + COUNTERS
    + """ or {}
  move_jobs_to_wait({ARGV[1], KEYS[1], KEYS[2], KEYS[3], KEYS[9], KEYS[4], KEYS[5], KEYS[6]},
                    {n, last, ARGV[2]})
  reply[2] = n
else
  for i = 1, n do
    local id = ids[i]
    local jobKey = ARGV[1] .. id
    local code = reprocess_job({jobKey, KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]},
                               {id, push_cmd(redis.call("HGET", jobKey, "opts")), ARGV[3], ARGV[2], ARGV[4], ARGV[4]})
    if code == 1 then
      if ARGV[4] == "1" then redis.call("HDEL", jobKey, "stc") end
      reply[2] = reply[2] + 1
    else
      reply[#reply + 1] = id
      reply[#reply + 1] = code
    end
  end
end
redis.call("SET", KEYS[10], ARGV[8] .. ":" .. reply[2], "PX", 86400000)
return reply
"""
)

REMOVE_BATCH_SRC = (
    as_function("remove_job", "removeJob-2.lua")
    + IN_A_STATE
    + """
-- KEYS[1] repeat key; ARGV[1] queue key prefix, ARGV[2] remove children "1"/"0", ARGV[3..] ids
-- Returns removeJob's code per job, or -101 for an id that is in none of the queue's states.
local codes = {}
for i = 3, #ARGV do
  if in_a_state(ARGV[1], ARGV[i]) then
    codes[#codes + 1] = remove_job({ARGV[1] .. ARGV[i], KEYS[1]}, {ARGV[i], ARGV[2], ARGV[1]})
  else
    codes[#codes + 1] = -101
  end
end
return codes
"""
)

PROMOTE_BATCH_SRC = (
    as_function("promote_job", "promote-9.lua")
    + """
-- KEYS[1..9] promote-9's keys; ARGV[1] queue key prefix, ARGV[2..] job ids
local codes = {}
for i = 2, #ARGV do
  codes[#codes + 1] = promote_job(KEYS, {ARGV[1], ARGV[i]})
end
return codes
"""
)


def lua_script(source: str) -> Script:
    # Bytes, so no client is needed to hash it; every call names its client (or pipeline).
    # redis-py types the client as required; without one a Script only hashes its bytes.
    return Script(None, source.encode("utf-8"))  # type: ignore[arg-type]


SCRIPTS = {
    "retry": lua_script(RETRY_SRC),
    "retry_batch": lua_script(RETRY_BATCH_SRC),
    "retry_head": lua_script(RETRY_HEAD_SRC),
    "remove_batch": lua_script(REMOVE_BATCH_SRC),
    "promote_batch": lua_script(PROMOTE_BATCH_SRC),
    "remove": lua_script(REMOVE_SRC),
    "promote": lua_script(bullmq_source("promote-9.lua")),
    "pause": lua_script(bullmq_source("pause-7.lua")),
    "clean": lua_script(bullmq_source("cleanJobsInSet-3.lua")),
}


class _Bound:
    def __init__(self, script: Script, client: redis.Redis):
        self.script, self.client = script, client

    def __call__(self, *, keys, args, client=None):
        """EVALSHA (loading the script if Redis does not know it); ``client`` may be a
        pipeline of the bound client, which loads its scripts before executing."""
        return self.script(keys=keys, args=args, client=client if client is not None else self.client)


class BullScripts:
    """The scripts, bound to one client: ``scripts_for(client).retry(keys=..., args=...)``."""

    # One per entry of SCRIPTS (set below), declared for the type checker.
    retry: _Bound
    retry_batch: _Bound
    retry_head: _Bound
    remove_batch: _Bound
    promote_batch: _Bound
    remove: _Bound
    promote: _Bound
    pause: _Bound
    clean: _Bound

    def __init__(self, client: redis.Redis):
        for name, script in SCRIPTS.items():
            setattr(self, name, _Bound(script, client))


def scripts_for(client: redis.Redis) -> BullScripts:
    return BullScripts(client)
