"""What an operator action on a job or a queue reports: ``ActionResult`` and its outcomes, the
same for every source kind.

Each per-job action is atomic and self-guarding: it acts only if the job is still where the
caller saw it, and otherwise reports what it found (``ActionResult.outcome``) instead of
raising. That is what makes the bulk engine (``queues.redis.bulk``) safe to repeat after a crash.
A Redis node runs them with BullMQ's own scripts: ``queues.redis.actions``."""

from __future__ import annotations

from dataclasses import dataclass

from .keys import QueueRef
from .messages import Joined, _

# ActionResult.outcome values
DONE = "done"
MISSING = "missing"  # the job hash does not exist (removed, pruned, never existed)
LOCKED = "locked"  # a worker holds the job's lock
WRONG_STATE = "wrong_state"  # the job is not in the state the action needs (someone moved it)
SCHEDULER_ITERATION = "scheduler_iteration"  # the current iteration of a job scheduler
NOT_A_JOB = "not_a_job"  # the id names a key of the queue that is in none of its states (meta, repeat:<id>, ...)


@dataclass(frozen=True)
class ActionResult:
    job_id: str
    outcome: str
    message: str
    kept: tuple[str, ...] = ()  # redrive: what the copy kept of the dead letter (``queues.redis.redrive``)
    moved_to: tuple[QueueRef, str] | None = None  # redrive: the queue and id the job now has (its copy)

    @property
    def ok(self) -> bool:
        return self.outcome == DONE


def gone(job_id: str) -> str:
    """What every action says of a job that is no longer there."""
    return _("Job {id} no longer exists.", id=job_id)


def not_a_job(job_id: str) -> ActionResult:
    return ActionResult(
        job_id,
        NOT_A_JOB,
        _(
            "'{id}' is not a job: it is in none of this queue's states (waiting, "
            "active, delayed, prioritized, waiting-children, completed, failed). It "
            "may be one of the queue's own keys (meta, events, a scheduler or "
            "deduplication key). Nothing was done.",
            id=job_id,
        ),
    )


# The outcomes of BullMQ's per-job commands, in the codes its Redis scripts and PostgreSQL
# functions share (reprocess: 1 moved, -1 missing, else not in that state; promote: 0 moved).


def retry_outcome(job_id: str, code: int, *, state: str) -> ActionResult:
    if code == 1:
        moved = (
            _("Job {id} moved from failed back to waiting.", id=job_id)
            if state == "failed"
            else _("Job {id} moved from completed back to waiting.", id=job_id)
        )
        return ActionResult(job_id, DONE, moved)
    if code == -1:
        return ActionResult(job_id, MISSING, gone(job_id))
    left = (
        _("Job {id} is no longer failed; it was left as it is.", id=job_id)
        if state == "failed"
        else _("Job {id} is no longer completed; it was left as it is.", id=job_id)
    )
    return ActionResult(job_id, WRONG_STATE, left)


def not_retryable(job_id: str) -> ActionResult:
    return ActionResult(
        job_id, WRONG_STATE, _("Job {id} is neither failed nor completed, so it cannot be retried.", id=job_id)
    )


def removed(job_id: str, *, children_note: str = "") -> ActionResult:
    done = _("Job {id} removed.", id=job_id)
    return ActionResult(job_id, DONE, Joined([done, children_note], " ") if children_note else done)


def locked_refusal(job_id: str) -> ActionResult:
    return ActionResult(
        job_id,
        LOCKED,
        _(
            "Job {id} is being processed by a worker (it holds the lock); "
            "it was not removed. Try again when it has finished.",
            id=job_id,
        ),
    )


def scheduler_iteration_refusal(job_id: str) -> ActionResult:
    return ActionResult(
        job_id,
        SCHEDULER_ITERATION,
        _(
            "Job {id} is the next iteration of its job scheduler "
            "and cannot be removed on its own; remove the scheduler "
            "instead.",
            id=job_id,
        ),
    )


def promote_outcome(job_id: str, code: int) -> ActionResult:
    if code == 0:
        return ActionResult(job_id, DONE, _("Job {id} promoted: it runs as soon as a worker is free.", id=job_id))
    return ActionResult(job_id, WRONG_STATE, _("Job {id} is no longer delayed; nothing to promote.", id=job_id))


# What BullMQ's job scripts (and Queuewatch's composed ones) answer for a key that is not a job's hash.
NOT_A_JOB_REPLY = -101


def remove_outcome(job_id: str, code: int, *, children_note: str = "") -> ActionResult:
    if code == NOT_A_JOB_REPLY:
        return not_a_job(job_id)
    if code == 1:
        return removed(job_id, children_note=children_note)
    if code == 0:
        return locked_refusal(job_id)
    if code == -8:
        return scheduler_iteration_refusal(job_id)
    return ActionResult(
        job_id, WRONG_STATE, _("Job {id} was not removed (BullMQ returned {code}).", id=job_id, code=code)
    )
