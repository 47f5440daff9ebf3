"""One batch of a bulk edit-and-retry: the plan's JSON merge patch applied to each failed job's
data *as stored in Redis* (never what a page showed), then the job retried with its counters
reset, as the single-job fix-and-replay does (``queues.redis.edit_retry``).

The batch goes in chunks: each chunk's data is read in one round trip, patched in Python (Lua's
cjson would rewrite numbers and turn ``[]`` into ``{}``), and sent in one script that checks,
in the same atomic step as the writes, that the jobs are still failed and their data still what
was read (by SHA-1, so the data travels once). When the chunk is the head of the failed set, its
data as a whole is as read (one SHA-1 of the chunk: ``chunk_digest``) and no job has a priority
or ``lifo``, BullMQ's ``updateData`` writes each job's data, the counters are reset and BullMQ's
``moveJobsToWait`` moves the chunk (the whole-set retry's fast road); otherwise each job's own
SHA-1 is checked and ``updateData`` and ``reprocessJob`` run per job (a ``lifo`` job pushed as
``Job.retry`` pushes it) and, with the reset, the stall counter is deleted. A job whose data
changed in between is left failed and counted as skipped (``changed``); one whose stored data
is not JSON we can write back is skipped (``bad_data``), and so is one whose patched data does
not pass the queue's job schema (``invalid_data``, with the reasons: ``queues.job_schema``); the
others go on. The patch is applied to the stored data in ``edit_patch``.
"""

from __future__ import annotations

import hashlib
from collections import deque
from itertools import repeat

import redis
from hiredis import pack_command

from ... import job_schema
from ...actions import MISSING, WRONG_STATE, ActionResult
from ...bulk.edit_patch import patched
from ...bulk.plan import BulkPlan
from ...bulk.progress import Progress, nothing_left_behind
from ...edit_growth import TOO_BIG, Budget, text_bytes
from ...edit_retry import CHANGED
from ...keys import QueueRef
from ...messages import _
from ...selection import Cursor, Page
from ..bullmq_scripts import COUNTERS, HEAD_READS, MOVE_JOBS_TO_WAIT_RESETTING, PUSH_CMD, as_function, lua_script
from ..selection import zset_bounds, zset_offset

BAD_DATA = "bad_data"  # the job's stored data is not JSON: a merge patch cannot apply

EDIT_RETRY_BATCH = lua_script(
    as_function("update_data", "updateData-1.lua")
    + as_function("reprocess_job", "reprocessJob-9.lua")
    + MOVE_JOBS_TO_WAIT_RESETTING
    + PUSH_CMD
    + HEAD_READS
    + """
-- KEYS[1..9]: events, failed, wait, meta, active, marker, prioritized, pc, paused
-- ARGV[1] queue key prefix, ARGV[2] reset counters "1"/"0", ARGV[3] the plan's upper bound on
-- finish times (e.g. "(1700000000000"), ARGV[4] the chunk's digest (``chunk_digest``: one SHA-1
-- of every job's data as read, joined by NUL), ARGV[5..] triples: job id, SHA-1 of its data as
-- read, the new data. Returns per job: 1 done, -1 missing, -3 no longer failed, -4 its data
-- changed since it was read.
-- When the chunk is exactly the head of the failed set, its data as a whole is as read (the
-- digest) and no job has a priority or lifo, the data is written (updateData) and BullMQ's
-- moveJobsToWait moves the whole chunk, resetting the counters, as the whole-set retry does;
-- otherwise each job is checked against its own SHA-1 and reprocessJob runs per job.
local n = (#ARGV - 4) / 3
local codes = {}
local head = redis.call("ZRANGEBYSCORE", KEYS[2], "-inf", ARGV[3], "LIMIT", 0, n)
local fast = #head == n
for k = 1, fast and n or 0 do
  if head[k] ~= ARGV[3 * k + 2] then fast = false break end
end
if fast then
  local rows, data = head_rows(KEYS[2], ARGV[1], head, {"data", "opts", "priority"}), {}
  for k = 1, n do data[k] = rows[3 * k - 2] end
  local ok, joined = pcall(table.concat, data, "\\0")  -- fails on a missing job's false
  fast = ok and redis.sha1hex(joined) == ARGV[4] and plain_jobs(rows, 3, 3, 2)
end
if fast then
  local jobKeys, data = {}, {}  -- updateData's KEYS and ARGV, one pair of tables for the chunk
  for k = 1, n do
    local i = 3 * k + 2
    local jobKey = ARGV[1] .. ARGV[i]
    jobKeys[1], data[1] = jobKey, ARGV[i + 2]
    update_data(jobKeys, data)
    codes[k] = 1
  end
  counters = ARGV[2] == "1" and """
    + COUNTERS
    + """ or {}
  move_jobs_to_wait({ARGV[1], KEYS[1], KEYS[2], KEYS[3], KEYS[9], KEYS[4], KEYS[5], KEYS[6]},
                    {n, redis.call("ZSCORE", KEYS[2], head[n]), "failed"})
  return codes
end
for k = 1, n do
  local i = 3 * k + 2
  local id = ARGV[i]
  local jobKey = ARGV[1] .. id
  local code
  if not redis.call("ZSCORE", KEYS[2], id) then
    code = redis.call("EXISTS", jobKey) == 0 and -1 or -3
  else
    local v = redis.call("HMGET", jobKey, "data", "opts")
    if redis.sha1hex(v[1] or "") ~= ARGV[i + 1] then
      code = -4
    else
      code = update_data({jobKey}, {ARGV[i + 2]})  -- -1: a failed-set member without its job
      if code == 0 then
        code = reprocess_job({jobKey, KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]},
                             {id, push_cmd(v[2]), "failedReason", "failed", ARGV[2], ARGV[2]})
        if code == 1 and ARGV[2] == "1" then redis.call("HDEL", jobKey, "stc") end
      end
    end
  end
  codes[k] = code
end
return codes
"""
)


def chunk_digest(raws: list[bytes]) -> str:
    """One SHA-1 of a chunk's stored data as read, joined by NUL, for the edit's fast road (one
    hash per chunk in Redis instead of one per job). The join cannot be read two ways: when no
    job's data as read holds a NUL (JSON text never does), a join of the jobs' current data that
    equals it has NULs in the same places only, so each job's data equals what was read. A
    chunk whose data holds a NUL gets "", which matches nothing: its jobs are checked one by one."""
    text = b"\0".join(raws)
    if text.count(b"\0") != len(raws) - 1:
        return ""
    return hashlib.sha1(text).hexdigest()


# A chunk's stored data in one reply (a pipeline of HGETs costs more in the client than in Redis):
# one SORT_RO from the first id's rank when the chunk is a run of consecutive members of the set
# (as on the whole-set road), else one HGET per job.
READ_DATA = lua_script(
    HEAD_READS
    + """
-- KEYS[1] the set the ids were read from. ARGV[1] queue key prefix, ARGV[2..] job ids.
-- Returns each job's data, false when none.
local n = #ARGV - 1
local rank = redis.call("ZRANK", KEYS[1], ARGV[2])
local out
if rank and sortable(KEYS[1], ARGV[1]) then
  local f = redis.pcall("SORT_RO", KEYS[1], "BY", "nosort", "LIMIT", rank, n, "GET", "#", "GET", ARGV[1] .. "*->data")
  out = not f.err and {} or nil
  for i = 1, out and n or 0 do
    if f[2 * i - 1] ~= ARGV[i + 1] then out = nil break end
    out[i] = f[2 * i]
  end
end
if not out then
  out = {}
  for i = 1, n do out[i] = redis.call("HGET", ARGV[1] .. ARGV[i + 1], "data") or false end
end
return out
"""
)


# The ids of a page and the last one's score (all the cursor needs): parsing a score per job in
# the client costs more than the rest of the page.
READ_PAGE = lua_script("""
-- KEYS[1] the set. ARGV[1] min, ARGV[2] max, ARGV[3] offset, ARGV[4] count.
-- Returns {} or {last score, id, id, ...}.
local ids = redis.call("ZRANGEBYSCORE", KEYS[1], ARGV[1], ARGV[2], "LIMIT", ARGV[3], ARGV[4])
if #ids == 0 then return {} end
table.insert(ids, 1, redis.call("ZSCORE", KEYS[1], ids[#ids]))
return ids
""")


def reads_its_page(plan: BulkPlan) -> bool:
    """Whether the plan's pages are read by ``read_page``: an edit of a whole range of the
    failed set (no filter that reads the jobs)."""
    return plan.action == "edit-retry" and plan.filt is not None and not plan.filt.reads_jobs


def read_page(client: redis.Redis, plan: BulkPlan, cursor: Cursor, progress: Progress) -> Page:
    """The next page after ``cursor``, as ``selection.next_page`` gives it, in one round trip
    (instead of up to four) while no job has stayed behind the cursor."""
    filt = plan.scan_filter
    key = plan.queue.state_key(filt.state)
    lo, hi = zset_bounds(filt, plan.before_ms)
    offset = 0 if nothing_left_behind(progress) else zset_offset(client, key=key, lo=lo, cursor=cursor)
    reply = READ_PAGE(keys=[key], args=[lo, hi, offset, plan.batch_size], client=client)
    if not reply:
        return Page([], [], exhausted=True)
    try:  # to_text, without a Python call per id (this runs while Redis waits)
        ids = list(map(bytes.decode, reply[1:]))
    except UnicodeDecodeError:
        ids = [m.decode("utf-8", "replace") for m in reply[1:]]
    passed: list = list(zip(ids, repeat(None)))
    passed[-1] = (ids[-1], float(reply[0]))
    return Page(passed, ids, exhausted=len(ids) < plan.batch_size)


# A batch goes in chunks on one connection, pipelined: the data reads of the next
# ``CHUNKS_AHEAD`` chunks are always in flight, each chunk is patched as its data comes back and
# its edit sent at once, and an edit's reply is read only when the replies before a later read
# must be (so at most ``CHUNKS_AHEAD`` edits are in flight). Redis runs the edits sent while this
# process patches the next chunk, and never waits for this process to wake up (a helper thread,
# tried before, waited up to the interpreter's switch interval at every hand-over); what is in
# flight, in Redis's buffers and here, is a few chunks, whatever the batch size. Each chunk is
# its own atomic step, run in order, so each can still be the head of the failed set.
CHUNK = 200
CHUNKS_AHEAD = 4


def edit_batch(
    client: redis.Redis,
    queue: QueueRef,
    ids: list[str],
    *,
    patch: dict,
    reset_counters: bool,
    before_ms: int,
    schema: dict | None = None,
    budget: Budget | None = None,
) -> list[ActionResult | Exception | None]:
    """Edit and retry ``ids`` (failed jobs); results in order, ``None`` for a job moved. A job
    whose patched data does not pass ``schema`` is not written (``invalid_data``, with why), nor
    one whose data would grow more than ``budget`` allows (``too_big``: per job, and what is
    left of the task's; each job sent counts against it)."""
    results: list = [None] * len(ids)
    keys = [
        queue.key(s) for s in ("events", "failed", "wait", "meta", "active", "marker", "prioritized", "pc", "paused")
    ]
    failed = keys[1]
    head = [queue.base, "1" if reset_counters else "0", f"({before_ms}"]
    spans = [range(start, min(len(ids), start + CHUNK)) for start in range(0, len(ids), CHUNK)]
    for script in (READ_DATA, EDIT_RETRY_BATCH):  # loaded up front: a chunk sent unloaded runs out of order
        client.script_load(script.script)
    flight: deque = deque()  # what was sent, in order: a span (a data read) or [args, positions] (an edit)
    edits: list = []  # [args, positions, reply] per edit read
    pool = client.connection_pool
    conn = pool.get_connection()

    def send_read(k: int) -> None:
        conn.send_command("EVALSHA", READ_DATA.sha, 1, failed, queue.base, *(ids[n] for n in spans[k]))
        flight.append(spans[k])

    try:
        for k in range(min(CHUNKS_AHEAD, len(spans))):
            send_read(k)
        for k, span in enumerate(spans):
            while not isinstance(flight[0], range):  # the edits sent before this chunk's read
                edits.append([*flight.popleft(), _reply(conn.read_response)])
            flight.popleft()
            stored = _reply(conn.read_response)
            if isinstance(stored, redis.exceptions.NoScriptError):  # a SCRIPT FLUSH meanwhile
                stored = READ_DATA(keys=[failed], args=[queue.base, *(ids[n] for n in span)], client=client)
            # args[3]: the chunk's digest, once its jobs are known
            args: list[str | bytes] = [*head, ""]
            sent: list[int] = []
            raws: list[bytes] = []
            made_here: list = []  # (n, raw, made) of the jobs the patch applies to
            for n, raw in zip(span, stored):
                made = patched(raw, patch)
                if made is None:
                    results[n] = ActionResult(
                        ids[n],
                        BAD_DATA,
                        _(
                            "Job {id}'s stored data is not valid JSON, so the "
                            "merge patch cannot be applied; it was left failed.",
                            id=ids[n],
                        ),
                    )
                else:
                    made_here.append((n, raw, made))
            # The chunk's data checked in one round trip to the checking process (queues.schema_worker).
            refusals = job_schema.validate_many(schema, [made[1] for _n, _raw, made in made_here])
            for (n, raw, made), refused in zip(made_here, refusals):
                if refused:
                    results[n] = ActionResult(
                        ids[n],
                        job_schema.INVALID_DATA,
                        _("Job {id} was left failed: {why}", id=ids[n], why=job_schema.refusal(refused)),
                    )
                    continue
                if budget is not None:
                    too_big = budget.take(text_bytes(made[1]) - len(raw or b""), job_id=ids[n])
                    if too_big is not None:
                        results[n] = ActionResult(ids[n], TOO_BIG, too_big)
                        continue
                args += [ids[n], *made]
                sent.append(n)
                raws.append(raw or b"")
            args[3] = chunk_digest(raws)
            if sent:  # packed by hiredis directly: redis-py's packer looks at every argument first
                command = ("EVALSHA", EDIT_RETRY_BATCH.sha, len(keys), *keys, *args)
                # hiredis's stub types the command as a 1-tuple; it takes a tuple of any length.
                conn.send_packed_command([pack_command(command)])  # type: ignore[arg-type]
                flight.append([args, sent])
            if k + CHUNKS_AHEAD < len(spans):
                send_read(k + CHUNKS_AHEAD)
        while flight:
            edits.append([*flight.popleft(), _reply(conn.read_response)])
    except BaseException:
        conn.disconnect()  # replies may be left unread on it
        raise
    finally:
        pool.release(conn)
    for args, sent, reply in edits:
        if isinstance(reply, redis.exceptions.NoScriptError):  # it did not run (a SCRIPT FLUSH meanwhile)
            reply = _reply(lambda chunk_args=args: EDIT_RETRY_BATCH(keys=keys, args=chunk_args, client=client))
        _record(ids, results, reply, sent)
    return results


def _reply(call):
    try:
        return call()
    except redis.ResponseError as exc:
        return exc


def _record(ids: list[str], results: list, codes, sent: list[int]) -> None:
    """The outcome of one chunk."""
    if isinstance(codes, Exception):
        for n in sent:
            results[n] = codes
        return
    if codes.count(1) == len(codes):  # every job moved (their results stay None)
        return
    for n, code in zip(sent, codes):
        job_id = ids[n]
        if code == -1:
            results[n] = ActionResult(job_id, MISSING, _("Job {id} no longer exists.", id=job_id))
        elif code == -3:
            results[n] = ActionResult(
                job_id, WRONG_STATE, _("Job {id} is no longer failed; it was left as it is.", id=job_id)
            )
        elif code == -4:
            results[n] = ActionResult(
                job_id, CHANGED, _("Job {id}'s data changed while the task ran; it was left failed.", id=job_id)
            )
