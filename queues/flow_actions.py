"""What the flow actions report (``removeChildDependency``, ``removeUnprocessedChildren``), the
same for every source kind; a Redis node runs them with BullMQ's own scripts:
``queues.redis.flow_actions``."""

from __future__ import annotations

from .actions import DONE, MISSING, WRONG_STATE, ActionResult, gone
from .messages import Joined, _

# ``removeUnprocessedChildren`` walks the children (and theirs) in one script, as BullMQ's own
# method does; BullMQ warns it is slow beyond a thousand. Above this many pending children the
# action is refused, so one click never blocks the server for long.
UNPROCESSED_CHILDREN_CAP = 1000


def no_parent(job_id: str) -> ActionResult:
    return ActionResult(job_id, WRONG_STATE, _("Job {id} has no flow parent.", id=job_id))


def not_pending_child(job_id: str, parent: str) -> ActionResult:
    return ActionResult(
        job_id,
        WRONG_STATE,
        _(
            "Job {id} is not among its parent {parent}'s pending dependencies (it finished or failed, and the "
            "parent keeps its record of that), so there is no dependency to remove.",
            id=job_id,
            parent=parent,
        ),
    )


def child_dependency_outcome(job_id: str, code: int, *, parent: str, released: bool) -> ActionResult:
    """``removeChildDependency``'s codes: 0 removed, 1 no relationship, -1 no job, -5 no parent."""
    if code == 0:
        done = _(
            "Job {id} was taken off its parent {parent}'s dependencies: it runs on as a job of its own, and "
            "its parent no longer waits for it.",
            id=job_id,
            parent=parent,
        )
        if released:
            moved = _("It was the parent's last pending child: the parent moved to waiting.")
            return ActionResult(job_id, DONE, Joined([done, moved], " "))
        return ActionResult(job_id, DONE, done)
    if code == -1:
        return ActionResult(job_id, MISSING, gone(job_id))
    if code == -5:
        return ActionResult(
            job_id, MISSING, _("The parent {parent} of job {id} no longer exists.", parent=parent, id=job_id)
        )
    return not_pending_child(job_id, parent)


def no_unprocessed_children(job_id: str) -> ActionResult:
    return ActionResult(job_id, WRONG_STATE, _("Job {id} has no unprocessed children.", id=job_id))


def too_many_children(job_id: str, pending: int) -> ActionResult:
    return ActionResult(
        job_id,
        WRONG_STATE,
        _(
            "Job {id} has {n} unprocessed children, more than the {cap} one action removes (BullMQ's script "
            "walks them all in one step, blocking the server meanwhile). Nothing was removed.",
            id=job_id,
            n=pending,
            cap=UNPROCESSED_CHILDREN_CAP,
        ),
    )


def unprocessed_removed(job_id: str, *, removed: int, kept: int, released: bool) -> ActionResult:
    parts = [_("Removed {n} unprocessed child job(s) of job {id}, with their own children.", n=removed, id=job_id)]
    if kept:
        parts.append(_("{n} kept: a worker holds them (active children are never removed).", n=kept))
    if released:
        parts.append(_("No pending child is left: job {id} moved to waiting.", id=job_id))
    return ActionResult(job_id, DONE, Joined(parts, " "))


def cross_slot_refusal(job_id: str, parent: str) -> ActionResult:
    """A child and parent a Redis Cluster cannot change in one script: their keys are in different
    hash slots (BullMQ could not have built such a flow there either)."""
    return ActionResult(
        job_id,
        WRONG_STATE,
        _(
            "Job {id} was left as it is: on a Redis Cluster BullMQ's script changes the child and its parent "
            "{parent} in one step, which needs both in one hash slot, and theirs differ.",
            id=job_id,
            parent=parent,
        ),
    )
