"""Fix and replay: edit a failed job's data with a JSON merge patch, then retry it.

A permanent error (bad input) is not cured by retrying; correcting the data and replaying is.
The patch (RFC 7386) is applied to the data *as stored in Redis*, never to what a page showed
(redacted and capped), and the write is guarded: the composed script below changes the job
only if it is still failed and its data is still byte for byte what the patch was applied to.
In one atomic step it then runs BullMQ's ``updateData`` (what ``Job.updateData`` runs) and
``reprocessJob`` (what ``Job.retry`` runs), with the attempt and stall counters reset as the
plain retry does (``queues.redis.actions``).

Framework-free.
"""

from __future__ import annotations

from typing import Any

import redis

from .. import job_schema
from ..actions import DONE, MISSING, WRONG_STATE, ActionResult
from ..edit_retry import CHANGED, UNCHANGED, EditPlan, PatchError, merge_patch
from ..messages import _
from ..safe_json import parse_json
from ..text import to_text
from .actions import retry_call
from .bullmq_scripts import as_function, lua_script

EDIT_RETRY = lua_script(
    as_function("update_data", "updateData-1.lua")
    + as_function("reprocess_job", "reprocessJob-9.lua")
    + """
-- KEYS/ARGV[1..7] exactly as the composed retry (queues.redis.actions.retry_call); ARGV[8] the data as
-- read when the patch was applied, ARGV[9] the new data.
-- Returns 1 done, -1 no such job, -3 not failed any more, -4 the data changed since it was read.
if redis.call("EXISTS", KEYS[1]) == 0 then return -1 end
if not redis.call("ZSCORE", KEYS[3], ARGV[1]) then return -3 end
if redis.call("HGET", KEYS[1], "data") ~= ARGV[8] then return -4 end
update_data({KEYS[1]}, {ARGV[9]})
local result = reprocess_job(KEYS, ARGV)
if result == 1 and ARGV[7] == "1" then redis.call("HDEL", KEYS[1], "stc") end
return result
"""
)


def plan_edit(client: redis.Redis, *, queue, job_id: str, patch: Any, schema: dict | None = None) -> EditPlan | None:
    """The stored data of failed job ``job_id`` with ``patch`` applied (``None``: no such job),
    and why the result does not pass the queue's ``schema``, if it does not."""
    key = queue.job_key(job_id)
    pipe = client.pipeline(transaction=False)
    pipe.hget(key, "data")
    pipe.exists(key)
    pipe.zscore(queue.key("failed"), job_id)
    pipe.hget(key, "opts")
    raw, exists, failed, opts = pipe.execute()
    if not exists:
        return None
    before_raw = to_text(raw, "{}")
    ok, before = parse_json(before_raw)
    if not ok:
        raise PatchError(_("The job's stored data is not valid JSON, so a merge patch cannot be applied to it."))
    after = merge_patch(before, patch)
    return EditPlan(
        job_id=job_id,
        state="failed" if failed is not None else "other",
        before_raw=before_raw,
        before=before,
        after=after,
        lifo=_lifo(opts),
        refusals=tuple(job_schema.validate(schema, after)),
    )


def _lifo(opts_raw) -> bool:
    ok, opts = parse_json(to_text(opts_raw, "{}"))
    return ok and isinstance(opts, dict) and bool(opts.get("lifo"))


def edit_and_retry(client: redis.Redis, *, queue, plan: EditPlan, reset_counters: bool = True) -> ActionResult:
    """Write ``plan.after`` and retry the job, if it is still failed with ``plan.before_raw``."""
    job_id = plan.job_id
    if plan.state != "failed":
        return ActionResult(
            job_id, WRONG_STATE, _("Job {id} is not failed; only failed jobs are edited and retried.", id=job_id)
        )
    if not plan.changes:
        return ActionResult(
            job_id,
            UNCHANGED,
            _(
                "The patch leaves job {id}'s data as it is; nothing was done (use Retry to run it again unchanged).",
                id=job_id,
            ),
        )
    if plan.refusals:
        return ActionResult(job_id, job_schema.INVALID_DATA, job_schema.refusal(list(plan.refusals)))
    keys, args = retry_call(queue, job_id, state="failed", reset_counters=reset_counters, lifo=plan.lifo)
    code = int(EDIT_RETRY(keys=keys, args=[*args, plan.before_raw, plan.after_raw], client=client))
    if code == 1:
        return ActionResult(job_id, DONE, _("Job {id}'s data was edited and the job moved back to waiting.", id=job_id))
    if code == -1:
        return ActionResult(job_id, MISSING, _("Job {id} no longer exists.", id=job_id))
    if code == -4:
        return ActionResult(
            job_id,
            CHANGED,
            _("Job {id}'s data changed since the preview; nothing was done. Preview the patch again.", id=job_id),
        )
    return ActionResult(job_id, WRONG_STATE, _("Job {id} is no longer failed; it was left as it is.", id=job_id))
