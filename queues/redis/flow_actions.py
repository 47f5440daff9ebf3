"""The flow actions on Redis, through BullMQ's own scripts, unchanged: ``removeChildDependency``
(a child leaves its parent's pending dependencies; the parent moves to wait, with its
``waiting`` event, when that was its last) and ``removeUnprocessedChildren`` (a parent's children
that have not run are removed with theirs; locked ones are kept). Both scripts reach keys of the
other queues of the flow from inside Lua, as BullMQ's do: on a Cluster the flow's queues share a
hash slot (a hash-tagged prefix), which BullMQ needs to build such a flow at all."""

from __future__ import annotations

import redis

from .. import flow_actions as outcomes
from ..actions import MISSING, ActionResult, gone, not_a_job
from ..flows import split_job_key
from ..keys import QueueRef
from ..text import to_text
from .bullmq_scripts import bullmq_source, lua_script

REMOVE_CHILD_DEPENDENCY = lua_script(bullmq_source("removeChildDependency-1.lua"))
REMOVE_UNPROCESSED_CHILDREN = lua_script(bullmq_source("removeUnprocessedChildren-2.lua"))


def _job_hash(client: redis.Redis, queue: QueueRef, job_id: str) -> ActionResult | None:
    """A refusal for an id that names no job hash (gone, or another key of the queue)."""
    kind = to_text(client.type(queue.job_key(job_id)))
    if kind == "none":
        return ActionResult(job_id, MISSING, gone(job_id))
    return None if kind == "hash" else not_a_job(job_id)


def parent_of(client: redis.Redis, queue: QueueRef, job_id: str) -> str:
    return to_text(client.hget(queue.job_key(job_id), "parentKey"))


def remove_child_dependency(client: redis.Redis, *, queue: QueueRef, job_id: str) -> ActionResult:
    """``Job.removeChildDependency``: offered for a child its parent still waits for."""
    refused = _job_hash(client, queue, job_id)
    if refused:
        return refused
    key = queue.job_key(job_id)
    parent = parent_of(client, queue, job_id)
    if not parent:
        return outcomes.no_parent(job_id)
    pipe = client.pipeline(transaction=False)
    pipe.sismember(parent + ":dependencies", key)
    pipe.scard(parent + ":dependencies")
    waiting, pending = pipe.execute()
    if not waiting:
        return outcomes.not_pending_child(job_id, parent)
    code = int(REMOVE_CHILD_DEPENDENCY(keys=[queue.base], args=[key, parent], client=client))
    parent_base, parent_id = split_job_key(parent)
    # The script moves the parent to wait only if it was in waiting-children and this was its last.
    released = code == 0 and pending == 1 and client.zscore(parent_base + "waiting-children", parent_id) is None
    return outcomes.child_dependency_outcome(job_id, code, parent=parent, released=released)


def remove_unprocessed_children(client: redis.Redis, *, queue: QueueRef, job_id: str) -> ActionResult:
    """``Job.removeUnprocessedChildren``, refused above ``UNPROCESSED_CHILDREN_CAP`` pending."""
    refused = _job_hash(client, queue, job_id)
    if refused:
        return refused
    key = queue.job_key(job_id)
    pipe = client.pipeline(transaction=False)
    pipe.scard(key + ":dependencies")
    pipe.zscore(queue.state_key("waiting-children"), job_id)
    pending, was_waiting = pipe.execute()
    if not pending:
        return outcomes.no_unprocessed_children(job_id)
    if pending > outcomes.UNPROCESSED_CHILDREN_CAP:
        return outcomes.too_many_children(job_id, pending)
    REMOVE_UNPROCESSED_CHILDREN(keys=[key, queue.key("meta")], args=[queue.base, job_id], client=client)
    pipe = client.pipeline(transaction=False)
    pipe.scard(key + ":dependencies")
    pipe.zscore(queue.state_key("waiting-children"), job_id)
    kept, still_waiting = pipe.execute()
    released = was_waiting is not None and still_waiting is None
    return outcomes.unprocessed_removed(job_id, removed=pending - kept, kept=kept, released=released)
