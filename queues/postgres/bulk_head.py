"""The fast road for retrying a whole finished set on PostgreSQL: BullMQ's own ``retry_jobs``
(the SQL ``Queue.retryJobs`` runs), one statement a batch, instead of ``reprocess_job`` job by
job: three statements a batch instead of four round trips a job.

It applies when the plan retries every job of a finished state up to its bound with the
counters reset (``BulkPlan.retries_whole_set``; ``retry_jobs`` always resets them) and no job was
left behind the cursor (``nothing_left_behind``): ``retry_jobs`` takes the oldest jobs of the
state, which are then exactly the batch. Each batch is fixed before it is moved: its rows locked,
oldest first, cut before a tie on the finish time (``retry_jobs`` orders by finish time alone),
so the statement moves exactly the rows checked. A batch holding a flow child goes the per-job
road instead: ``retry_jobs`` leaves a parent's dependencies as they were, ``reprocess_job`` moves
the child's dependency back to pending.

``retry_jobs`` publishes no event; each moved job then gets the ``waiting`` event
``reprocess_job`` would have published, through BullMQ's own ``publish_event`` in one statement,
so the monitor's live counts and the user's ``QueueEvents`` see every job come back.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from ..bulk.plan import BulkPlan
from ..bulk.progress import Progress, nothing_left_behind
from .job_commands import run

# The next batch of the set, oldest first, locked: (id, finish time, whether it is a flow child).
LOCK_HEAD = (
    "SELECT id, finished_at_ms, parent_id IS NOT NULL FROM job"
    " WHERE queue = %(queue)s AND state = %(state)s::job_state AND finished_at_ms < %(before)s"
    " AND (%(to)s::bigint IS NULL OR finished_at_ms <= %(to)s::bigint)"
    " ORDER BY finished_at_ms, id LIMIT %(limit)s FOR UPDATE"
)


ANNOUNCE = (
    "SELECT count(publish_event(%s, 'waiting', jsonb_build_object('jobId', id, 'prev', %s::text)))"
    " FROM unnest(%s::text[]) AS id"
)


@dataclass
class HeadBatch:
    moved: int
    examined: int
    cursor: dict  # the scan cursor after the batch (the per-job road's form)
    exhausted: bool


def head_road(plan: BulkPlan, progress: Progress) -> bool:
    return plan.retries_whole_set and plan.reset_counters and nothing_left_behind(progress)


def retry_head(conn: psycopg.Connection, plan: BulkPlan) -> HeadBatch | None:
    """Retry the oldest batch of the set with ``retry_jobs``, in the caller's transaction; or
    ``None`` when this batch must go the per-job road (a flow child in it, or a tie on the finish
    time as wide as the batch). Nothing is changed when it returns ``None``."""
    filt = plan.scan_filter
    size = plan.batch_size
    rows = conn.execute(
        LOCK_HEAD,
        {
            "queue": plan.queue.name,
            "state": filt.state,
            "before": plan.before_ms,
            "to": filt.finished_to_ms,
            "limit": size + 1,
        },
    ).fetchall()
    exhausted = len(rows) <= size
    batch = rows[:size]
    if not exhausted:
        boundary = rows[size][1]
        while batch and batch[-1][1] == boundary:
            batch.pop()
    if not batch or any(child for _, _, child in batch):
        return None
    last_id, last_key, _ = batch[-1]
    found = run(conn, "retry_jobs", (plan.queue.name, filt.state, len(batch), int(last_key)))
    moved = int(found[0]) if found else 0
    if moved:
        # The ``waiting`` event per job that ``reprocess_job`` publishes, through BullMQ's own
        # ``publish_event``: the monitor and the user's QueueEvents see each job come back.
        conn.execute(ANNOUNCE, (plan.queue.name, filt.state, [row[0] for row in batch]))
    return HeadBatch(
        moved=moved,
        examined=len(batch),
        cursor={"score": int(last_key), "member": last_id},
        exhausted=exhausted,
    )
