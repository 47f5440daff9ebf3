"""One batch of a bulk edit-and-retry: the plan's JSON merge patch applied to each failed job's
data *as stored in Redis* (never what a page showed), then the job retried with its counters
reset, as the single-job fix-and-replay does (``queues.edit_retry``).

The batch reads the jobs' data in one pipelined round trip, applies the patch in Python (Lua's
cjson would rewrite numbers and turn ``[]`` into ``{}``), and sends one script that, per job and
in one atomic step, checks the job is still failed and its data is still what was read (by SHA-1,
so the data travels once), then runs BullMQ's ``updateData`` and ``reprocessJob`` unchanged (a
``lifo`` job pushed as ``Job.retry`` pushes it) and, with the reset, deletes the stall counter.
A job whose data changed in between is left failed and counted as skipped (``changed``); one
whose stored data is not JSON is skipped (``bad_data``) and the others go on.
"""

from __future__ import annotations

import hashlib
import json

import redis

from ..actions import MISSING, WRONG_STATE, ActionResult
from ..bullmq_scripts import PUSH_CMD, as_function, lua_script
from ..edit_retry import CHANGED, merge_patch
from ..keys import QueueRef
from ..messages import _
from ..safe_json import parse_json

BAD_DATA = "bad_data"  # the job's stored data is not JSON: a merge patch cannot apply

EDIT_RETRY_BATCH = lua_script(as_function("update_data", "updateData-1.lua")
                              + as_function("reprocess_job", "reprocessJob-9.lua") + PUSH_CMD + """
-- KEYS[1..8]: events, failed, wait, meta, active, marker, prioritized, pc
-- ARGV[1] queue key prefix, ARGV[2] reset counters "1"/"0", ARGV[3..] triples: job id, SHA-1 of
-- its data as read, the new data. Returns per job: 1 done, -1 missing, -3 no longer failed,
-- -4 its data changed since it was read.
local codes = {}
for i = 3, #ARGV, 3 do
  local id = ARGV[i]
  local jobKey = ARGV[1] .. id
  local code
  if redis.call("EXISTS", jobKey) == 0 then
    code = -1
  elseif not redis.call("ZSCORE", KEYS[2], id) then
    code = -3
  else
    local f = redis.call("HMGET", jobKey, "data", "opts")
    if redis.sha1hex(f[1] or "") ~= ARGV[i + 1] then
      code = -4
    else
      update_data({jobKey}, {ARGV[i + 2]})
      code = reprocess_job({jobKey, KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]},
                           {id, push_cmd(f[2]), "failedReason", "failed", ARGV[2], ARGV[2]})
      if code == 1 and ARGV[2] == "1" then redis.call("HDEL", jobKey, "stc") end
    end
  end
  codes[#codes + 1] = code
end
return codes
""")


def patched(raw: bytes | None, patch: dict) -> tuple[str, str] | None:
    """(SHA-1 of the stored data, the patched data as JSON) or ``None`` when it is not JSON.
    Data the patch leaves as it is keeps its exact bytes."""
    raw = raw if raw is not None else b""
    ok, before = parse_json(raw.decode("utf-8", "replace") if raw else "{}")
    if not ok:
        return None
    after = merge_patch(before, patch)
    text = raw.decode("utf-8", "replace") if after == before and raw else \
        json.dumps(after, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha1(raw).hexdigest(), text


def edit_batch(client: redis.Redis, queue: QueueRef, ids: list[str], *, patch: dict,
               reset_counters: bool) -> list[ActionResult | Exception | None]:
    """Edit and retry ``ids`` (failed jobs); results in order, ``None`` for a job moved."""
    read = client.pipeline(transaction=False)
    for job_id in ids:
        read.hget(queue.job_key(job_id), "data")
    results: list = [None] * len(ids)
    args, sent = [queue.base, "1" if reset_counters else "0"], []
    for n, (job_id, raw) in enumerate(zip(ids, read.execute())):
        made = patched(raw, patch)
        if made is None:
            results[n] = ActionResult(job_id, BAD_DATA, _("Job {id}'s stored data is not valid JSON, so the merge "
                                                          "patch cannot be applied; it was left failed.", id=job_id))
            continue
        args += [job_id, *made]
        sent.append(n)
    if not sent:
        return results
    keys = [queue.key(s) for s in ("events", "failed", "wait", "meta", "active", "marker", "prioritized", "pc")]
    try:
        codes = EDIT_RETRY_BATCH(keys=keys, args=args, client=client)
    except redis.ResponseError as exc:
        for n in sent:
            results[n] = exc
        return results
    for n, code in zip(sent, codes):
        job_id = ids[n]
        if code == -1:
            results[n] = ActionResult(job_id, MISSING, _("Job {id} no longer exists.", id=job_id))
        elif code == -3:
            results[n] = ActionResult(job_id, WRONG_STATE, _("Job {id} is no longer failed; it was left as it is.",
                                                             id=job_id))
        elif code == -4:
            results[n] = ActionResult(job_id, CHANGED, _("Job {id}'s data changed while the task ran; it was left "
                                                         "failed.", id=job_id))
    return results
