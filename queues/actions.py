"""What an operator action on a job or a queue reports: ``ActionResult`` and its outcomes, the
same for every source kind.

Each per-job action is atomic and self-guarding: it acts only if the job is still where the
caller saw it, and otherwise reports what it found (``ActionResult.outcome``) instead of
raising. That is what makes the bulk engine (``queues.redis.bulk``) safe to repeat after a crash.
A Redis node runs them with BullMQ's own scripts: ``queues.redis.actions``."""

from __future__ import annotations

from dataclasses import dataclass

from .keys import QueueRef
from .messages import _

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
