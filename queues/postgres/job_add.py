"""Adding a job, duplicating one and editing-and-retrying one on PostgreSQL, through BullMQ's own
commands as Node runs them: ``add_job`` with the arguments Node's ``Queue.add`` gives it (the
options stored as Node's ``Job`` keeps them on this backend: ``attempts`` 0 by default,
``deduplication`` under its own name), ``update_data`` (``Job.updateData``) then
``reprocess_job`` (``Job.retry``). Each in one transaction.

BullMQ's ``add_job`` answers with the existing job's id both for a custom id already taken
("duplicated") and for a deduplication hit ("deduplicated"), as Node does; an operator needs to
know, so the transaction tells them apart: the id taken before the call, or a returned row this
transaction did not write (its ``xmin`` is not ours).

An edit is applied to the data *as stored* (``data::text``, read by the jobs facet's
``edit_plan``), and written only if the job, its row locked, is still failed with that same data.
"""

from __future__ import annotations

import json

import psycopg

from .. import job_schema
from ..actions import DONE, MISSING, WRONG_STATE, ActionResult
from ..edit_retry import CHANGED, UNCHANGED, EditPlan, PatchError, merge_patch
from ..job_add import CREATED, DEDUPLICATED, DUPLICATED, AddOutcome, SourceJob
from ..job_options import InvalidJob, NewJob
from ..keys import QueueRef
from ..messages import _
from ..safe_json import parse_json
from .job_commands import run

_QUEUE_KNOWN = "SELECT EXISTS (SELECT 1 FROM meta WHERE queue = %s) OR EXISTS (SELECT 1 FROM job WHERE queue = %s)"
_OURS = (
    "SELECT xmin::text = mod(pg_current_xact_id()::text::numeric, 4294967296)::text "
    "FROM job WHERE queue = %s AND id = %s"
)


def stored_opts(job: NewJob) -> dict:
    """The options as Node's ``Job`` keeps them on this backend."""
    return {"attempts": 0, **job.opts}


def add_in(conn: psycopg.Connection, queue: QueueRef, job: NewJob, *, now_ms: int) -> AddOutcome:
    known = conn.execute(_QUEUE_KNOWN, (queue.name, queue.name)).fetchone()
    if not (known and known[0]):
        raise InvalidJob(
            _("There is no queue '{name}' (no meta key); Queuewatch never creates a queue.", name=queue.name)
        )
    existed = (
        bool(job.job_id)
        and conn.execute("SELECT 1 FROM job WHERE queue = %s AND id = %s", (queue.name, job.job_id)).fetchone()
        is not None
    )
    opts = stored_opts(job)
    # No savepoint: the row BullMQ inserts must carry this transaction's own id (``_OURS``).
    try:
        found = run(
            conn,
            "add_job",
            (
                queue.name,
                job.job_id,
                job.name,
                job.data_json,
                json.dumps(opts),
                int(opts.get("priority") or 0),
                int(opts.get("delay") or 0),
                now_ms,
                int(opts["attempts"]),
                None,
                None,
                None,
                job.deduplication_id or None,
                None,
                bool(opts.get("lifo")),
            ),
        )
    except psycopg.Error as exc:
        if exc.sqlstate == "BM001":
            raise InvalidJob(f"BullMQ refused the job (code {exc.diag.message_detail}).") from None
        raise
    job_id = str(found[0]) if found else ""
    if existed:
        return AddOutcome(job_id, DUPLICATED)
    ours = conn.execute(_OURS, (queue.name, job_id)).fetchone()
    return AddOutcome(job_id, CREATED if ours and ours[0] else DEDUPLICATED)


def read_source(rows, queue: QueueRef, job_id: str) -> SourceJob | None:
    """The job as stored (``rows``: the jobs facet's reader, with the job table's query)."""
    found = rows(queue, job_id)
    if not found:
        return None
    name, data_text, opts = found[0]
    return SourceJob(name=name or "", data_json=data_text or "{}", opts=opts if isinstance(opts, dict) else {})


def plan_edit(row: tuple | None, *, job_id: str, patch, schema: dict | None) -> EditPlan | None:
    """``row``: (state, data as text, lifo) of the job, or ``None`` when it is gone."""
    if row is None:
        return None
    state, before_raw, lifo = row
    ok, before = parse_json(before_raw or "{}")
    if not ok:
        raise PatchError(_("The job's stored data is not valid JSON, so a merge patch cannot be applied to it."))
    after = merge_patch(before, patch)
    return EditPlan(
        job_id=job_id,
        state="failed" if state == "failed" else "other",
        before_raw=before_raw or "{}",
        before=before,
        after=after,
        lifo=bool(lifo),
        refusals=tuple(job_schema.validate(schema, after)),
    )


def edit_and_retry_in(
    conn: psycopg.Connection, queue: QueueRef, plan: EditPlan, *, reset_counters: bool
) -> ActionResult:
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
    row = conn.execute(
        "SELECT state::text, data::text FROM job WHERE queue = %s AND id = %s FOR UPDATE", (queue.name, job_id)
    ).fetchone()
    if row is None:
        return ActionResult(job_id, MISSING, _("Job {id} no longer exists.", id=job_id))
    if row[0] != "failed":
        return ActionResult(job_id, WRONG_STATE, _("Job {id} is no longer failed; it was left as it is.", id=job_id))
    if row[1] != plan.before_raw:
        return ActionResult(
            job_id,
            CHANGED,
            _("Job {id}'s data changed since the preview; nothing was done. Preview the patch again.", id=job_id),
        )
    run(conn, "update_data", (queue.name, job_id, plan.after_raw))
    found = run(conn, "reprocess_job", (queue.name, job_id, "failed", plan.lifo, reset_counters, reset_counters))
    if found and int(found[0]) == 1:
        return ActionResult(job_id, DONE, _("Job {id}'s data was edited and the job moved back to waiting.", id=job_id))
    return ActionResult(job_id, WRONG_STATE, _("Job {id} is no longer failed; it was left as it is.", id=job_id))
