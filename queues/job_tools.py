"""The job tools: change a job's priority, reschedule a delayed job, move a job to failed by hand
(``queues.redis.job_tools`` runs them with BullMQ's own scripts). What each may act on, the
checks of its input and what each outcome says, the same for every source kind.

Like every per-job action (``queues.actions``) each tool is atomic and self-guarding: it acts
only on a job still in a state it allows, checked inside the same script as the change, and
otherwise reports what it found instead of raising.
"""

from __future__ import annotations

import datetime as dt

from .actions import (
    DONE,
    LOCKED,
    MISSING,
    NOT_A_JOB_REPLY,
    SCHEDULER_ITERATION,
    WRONG_STATE,
    ActionResult,
    gone,
    not_a_job,
)
from .job_options import PRIORITY_LIMIT
from .messages import _
from .states import CHANGE_DELAY, CHANGE_PRIORITY, MOVE_TO_FAILED, states_allowing

# Where each tool acts (one home: ``queues.states``).
PRIORITY_STATES = states_allowing(CHANGE_PRIORITY)
DELAY_STATES = states_allowing(CHANGE_DELAY)
FAIL_STATES = states_allowing(MOVE_TO_FAILED)

MAX_DELAY_MS = 10 * 365 * 86_400_000  # ten years: beyond it a number is more likely a mistake
MAX_FAILED_REASON = 2000

# The codes of the scripts (BullMQ's, and the few of ours around them).
OK, MISSING_JOB, NOT_IN_STATE, LOCK_HELD = 0, -1, -3, -6


def check_priority(value: object) -> int:
    """BullMQ's rule for a priority: a whole number from 0 (none) to ``PRIORITY_LIMIT``."""
    try:
        priority = int(str(value).strip())
    except (TypeError, ValueError):
        raise ValueError(_("The priority must be a whole number from 0 to {max}.", max=PRIORITY_LIMIT)) from None
    if not 0 <= priority <= PRIORITY_LIMIT:
        raise ValueError(_("The priority must be a whole number from 0 to {max}.", max=PRIORITY_LIMIT))
    return priority


def check_delay(delay_ms: int) -> int:
    if not 0 <= delay_ms <= MAX_DELAY_MS:
        raise ValueError(_("The delay must be from 0 to ten years."))
    return delay_ms


def _common(job_id: str, code: int) -> ActionResult | None:
    if code == NOT_A_JOB_REPLY:
        return not_a_job(job_id)
    if code == MISSING_JOB:
        return ActionResult(job_id, MISSING, gone(job_id))
    return None


def priority_outcome(job_id: str, code: int, *, priority: int) -> ActionResult:
    found = _common(job_id, code)
    if found:
        return found
    if code == OK:
        return ActionResult(job_id, DONE, _("Job {id} now has priority {priority}.", id=job_id, priority=priority))
    return ActionResult(
        job_id,
        WRONG_STATE,
        _("Job {id} is no longer waiting, prioritized or delayed; its priority was left as it was.", id=job_id),
    )


def delay_outcome(job_id: str, code: int, *, run_at_ms: int) -> ActionResult:
    found = _common(job_id, code)
    if found:
        return found
    if code == OK:
        return ActionResult(
            job_id, DONE, _("Job {id} rescheduled: it becomes ready at {when}.", id=job_id, when=_iso(run_at_ms))
        )
    return ActionResult(job_id, WRONG_STATE, _("Job {id} is no longer delayed; nothing to reschedule.", id=job_id))


def failed_outcome(job_id: str, code: int, *, kept: bool = True) -> ActionResult:
    found = _common(job_id, code)
    if found:
        return found
    if code == OK:
        if kept:
            return ActionResult(job_id, DONE, _("Job {id} moved to failed.", id=job_id))
        return ActionResult(
            job_id, DONE, _("Job {id} moved to failed and removed, as its removeOnFail option asks.", id=job_id)
        )
    if code == LOCK_HELD:
        return ActionResult(
            job_id,
            LOCKED,
            _(
                "Job {id} is being processed by a worker (it holds the lock); it was not moved. "
                "Only a job no worker holds can be failed by hand.",
                id=job_id,
            ),
        )
    return ActionResult(
        job_id,
        WRONG_STATE,
        _(
            "Job {id} is not waiting, prioritized, delayed or active; it was left as it is.",
            id=job_id,
        ),
    )


def scheduler_iteration(job_id: str) -> ActionResult:
    """Failing a scheduler's pending iteration by hand would stop the scheduler: BullMQ makes the
    next iteration when a worker takes this one."""
    return ActionResult(
        job_id,
        SCHEDULER_ITERATION,
        _(
            "Job {id} is the next iteration of its job scheduler; failing it would stop the scheduler "
            "(BullMQ schedules the next run when a worker takes this one). Nothing was done.",
            id=job_id,
        ),
    )


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
