"""The fast road for retrying a whole finished set (see "Retrying a whole finished set" in the
package docstring): the batch script picks its own batches and writes a receipt, so ids never
travel to Python and back."""

from __future__ import annotations

import redis

from ..actions import retry_outcome
from ..bullmq_scripts import scripts_for
from ..selection import Cursor, zset_bounds, zset_offset
from ..text import to_text
from .batches import STATE_SET
from .plan import BulkPlan
from .progress import Progress, ProgressStore, nothing_left_behind

RECEIPT_NAMESPACE = "queuewatch:bulk-receipt"


def head_mode(plan: BulkPlan) -> bool:
    """Whether the plan retries a whole finished set up to ``before_ms`` (no filter reading the
    jobs, no lower time bound): then the batch script picks its own batches (``run_head_batch``)."""
    f = plan.filt
    return (plan.action == "retry" and f is not None and f.state in ("failed", "completed")
            and not f.reads_jobs and f.finished_from_ms is None)


def reconcile_head(client: redis.Redis, progress: Progress) -> None:
    """After a crash during a whole-set batch: its receipt says whether it ran and what it moved
    (the jobs it did not move are still ahead of the saved cursor)."""
    if progress.head_pending:
        raw = to_text(client.get(progress.receipt_key))
        batch, _, moved = raw.partition(":")
        if batch == str(progress.head_batch):
            progress.moved += int(moved)
        progress.head_pending = False


def run_head_batch(client: redis.Redis, plan: BulkPlan, progress: Progress, store: ProgressStore,
                cursor: Cursor) -> tuple[int, bool, Cursor]:
    """One batch of a whole-set retry; returns (jobs taken, exhausted, new cursor)."""
    q, state = plan.queue, plan.filt.state
    key = q.state_key(state)
    lo, hi = zset_bounds(plan.filt, plan.before_ms)
    offset = 0 if nothing_left_behind(progress) else zset_offset(client, key=key, lo=lo, cursor=cursor)
    progress.head_batch += 1
    progress.head_pending = True
    store.save(progress)  # the journal: the receipt of this batch number decides after a crash
    keys = [q.key(s) for s in ("events", STATE_SET[state], "wait", "meta", "active", "marker", "prioritized", "pc",
                               "paused")] + [progress.receipt_key]
    reply = scripts_for(client).retry_head(keys=keys, args=[
        q.base, state, "failedReason" if state == "failed" else "returnvalue", "1" if plan.reset_counters else "0",
        hi, offset, plan.batch_size, progress.head_batch])
    taken, moved = int(reply[0]), int(reply[1])
    progress.moved += moved
    refused = reply[4:]
    for job_id, code in zip(refused[0::2], refused[1::2]):
        r = retry_outcome(to_text(job_id), int(code), state=state)
        progress.skipped += 1
        progress.skipped_by[r.outcome] = progress.skipped_by.get(r.outcome, 0) + 1
    progress.head_pending = False
    if taken:
        cursor = Cursor(score=float(reply[3]), member=to_text(reply[2]))
    return taken, taken < plan.batch_size, cursor
