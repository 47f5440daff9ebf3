"""Operator actions on jobs and queues: retry, discard, promote, pause, clean (redrive from a
dead-letter queue: ``queues.redis.redrive``).

Every state change goes through BullMQ's own Lua scripts (``queues.redis.bullmq_scripts``), so Node
and Python workers see exactly what their own library would have done; the only write of ours
is the stall-counter reset, made inside the same atomic script as the retry. Each per-job
action is atomic and self-guarding: it acts only if the job is still where the caller saw it,
and otherwise reports what it found (``ActionResult.outcome``) instead of raising. That is
what makes the bulk engine (``queues.redis.bulk``) safe to repeat after a crash.

No Django imports; a client is a sync ``redis.Redis`` (bytes or text responses both work).
"""

from __future__ import annotations

import time

import redis

from ..actions import (
    MISSING,
    ActionResult,
    gone,
    not_a_job,
    not_retryable,
    promote_outcome,
    remove_outcome,
    retry_outcome,
)
from ..keys import QueueRef
from ..messages import Joined, _
from ..safe_json import loads_or
from ..states import CLEANABLE_STATES, RETRYABLE_STATES, STATE_KEYS
from ..text import to_text
from .bullmq_scripts import scripts_for
from .schedulers import read_scheduler


def _now_ms() -> int:
    return int(time.time() * 1000)


# ---------------------------------------------------------------------------------------------
# Retry


def retry_call(
    queue: QueueRef, job_id: str, *, state: str, reset_counters: bool, lifo: bool = False
) -> tuple[list[str], list]:
    """KEYS and ARGV for the composed retry script (``reprocessJob-9`` + stall-counter reset)."""
    keys = [
        queue.job_key(job_id),
        queue.key("events"),
        queue.key(state),
        queue.key("wait"),
        queue.key("meta"),
        queue.key("active"),
        queue.key("marker"),
        queue.key("prioritized"),
        queue.key("pc"),
    ]
    flag = "1" if reset_counters else "0"
    args = [
        job_id,
        "RPUSH" if lifo else "LPUSH",
        "failedReason" if state == "failed" else "returnvalue",
        state,
        flag,
        flag,
        flag,
    ]
    return keys, args


def _lifo(client: redis.Redis, queue: QueueRef, job_id: str) -> bool:
    opts = loads_or(to_text(client.hget(queue.job_key(job_id), "opts"), "{}"), None)
    return isinstance(opts, dict) and bool(opts.get("lifo"))


def job_retry(client: redis.Redis, *, queue: QueueRef, job_id: str, reset_counters: bool = True) -> ActionResult:
    """Move a failed or completed job back to waiting (or ``prioritized`` if it has a priority).

    With ``reset_counters`` (the default, SQS-redrive semantics) ``atm`` (attempts made),
    ``ats`` (attempts started) and ``stc`` (stall counter) are deleted in the same atomic
    script as the move, so the job gets its full ``attempts`` budget and stall budget again.
    Without it, BullMQ's plain ``Job.retry`` semantics apply (one more try for an exhausted job).

    Concurrent retries of one job: exactly one returns ``done``, the others ``wrong_state``.
    """
    pipe = client.pipeline(transaction=False)
    for st in RETRYABLE_STATES:
        pipe.zscore(queue.state_key(st), job_id)
    pipe.exists(queue.job_key(job_id))
    *scores, exists = pipe.execute()
    if not exists:
        return ActionResult(job_id, MISSING, gone(job_id))
    state = next((st for st, score in zip(RETRYABLE_STATES, scores) if score is not None), None)
    if state is None:
        return not_retryable(job_id)
    keys, args = retry_call(
        queue, job_id, state=state, reset_counters=reset_counters, lifo=_lifo(client, queue, job_id)
    )
    return retry_outcome(job_id, int(scripts_for(client).retry(keys=keys, args=args)), state=state)


# ---------------------------------------------------------------------------------------------
# Discard (remove)


def remove_call(
    queue: QueueRef, job_id: str, *, remove_children: bool, last_of_finished: bool = False
) -> tuple[list[str], list]:
    """The ``remove`` script's keys and arguments. ``last_of_finished``: the job is the last
    iteration of a finished job scheduler, which BullMQ's check for a scheduler's current
    iteration must let go (``<queue>:repeat:`` would be the hash of a scheduler with no id)."""
    keys = [queue.job_key(job_id), queue.key("repeat"), queue.key("repeat:")]
    return keys, [job_id, "1" if remove_children else "0", queue.base, "1" if last_of_finished else "0"]


def is_last_of_finished_scheduler(client: redis.Redis, *, queue: QueueRef, job_id: str) -> bool:
    """Whether the job belongs to a job scheduler BullMQ has finished (limit reached, end date
    passed): its current iteration is then its last, already taken, not a next run."""
    scheduler_id = client.hget(queue.job_key(job_id), "rjk")
    if scheduler_id is None:
        return False
    scheduler = read_scheduler(client, queue, to_text(scheduler_id))
    return scheduler is not None and scheduler.finished


def children_note(client: redis.Redis, *, queue: QueueRef, job_id: str, remove_children: bool) -> str:
    """What removing this job does to its flow relatives, in words, read before the removal."""
    key = queue.job_key(job_id)
    pipe = client.pipeline(transaction=False)
    pipe.scard(key + ":dependencies")
    pipe.hlen(key + ":processed")
    pipe.hget(key, "parentKey")
    pending, processed, parent = pipe.execute()
    parts = []
    if pending or processed:
        if remove_children:
            parts.append(
                _("Its {n} child job(s) were removed with it (unless a worker held one).", n=pending + processed)
            )
        else:
            parts.append(
                _(
                    "Its {pending} unfinished and {processed} finished child job(s) were kept; they run on, "
                    "with no parent left to report to.",
                    pending=pending,
                    processed=processed,
                )
            )
    # removeJob takes a child off its parent's ``:dependencies`` only while it is pending there; a
    # child that finished (or failed) is recorded elsewhere on the parent, which it leaves as is.
    if parent and client.sismember(to_text(parent) + ":dependencies", key):
        parts.append(
            _(
                "It was also taken off its parent {parent}'s dependencies; the parent moves to waiting if "
                "this was its last pending child.",
                parent=to_text(parent),
            )
        )
    elif parent:
        parts.append(
            _(
                "Its parent {parent} was not waiting for it any more and keeps its record of this job's result.",
                parent=to_text(parent),
            )
        )
    return Joined(parts, " ")


def job_discard(client: redis.Redis, *, queue: QueueRef, job_id: str, remove_children: bool = False) -> ActionResult:
    """Remove a job in any state with BullMQ's ``removeJob``.

    Refused (not raised) when a worker holds the job's lock (``locked``) or it is a job
    scheduler's current iteration (``scheduler_iteration``), unless that scheduler is finished. Children are kept unless
    ``remove_children``; the message says what happens to them and to the parent.
    """
    kind = to_text(client.type(queue.job_key(job_id)))
    if kind == "none":
        return ActionResult(job_id, MISSING, gone(job_id))
    if kind != "hash":  # a stream, list or string under the queue (events, de:<id>, ...): never a job
        return not_a_job(job_id)
    note = children_note(client, queue=queue, job_id=job_id, remove_children=remove_children)
    last = is_last_of_finished_scheduler(client, queue=queue, job_id=job_id)
    keys, args = remove_call(queue, job_id, remove_children=remove_children, last_of_finished=last)
    return remove_outcome(job_id, int(scripts_for(client).remove(keys=keys, args=args)), children_note=note)


# ---------------------------------------------------------------------------------------------
# Promote


def promote_call(queue: QueueRef, job_id: str) -> tuple[list[str], list]:
    keys = [
        queue.key(s) for s in ("delayed", "wait", "paused", "meta", "prioritized", "active", "pc", "events", "marker")
    ]
    return keys, [queue.base, job_id]


def job_promote(client: redis.Redis, *, queue: QueueRef, job_id: str) -> ActionResult:
    """Move a delayed job to waiting now (BullMQ's ``promote``)."""
    if not client.exists(queue.job_key(job_id)):
        return ActionResult(job_id, MISSING, gone(job_id))
    keys, args = promote_call(queue, job_id)
    return promote_outcome(job_id, int(scripts_for(client).promote(keys=keys, args=args)))


# ---------------------------------------------------------------------------------------------
# Queue-level


def queue_pause(client: redis.Redis, *, queue: QueueRef, paused: bool) -> None:
    """Pause (``paused=True``) or resume a queue with BullMQ's ``pause`` script. Resume loops
    while the script reports legacy v5 ``paused``-list entries still to move (7000 per call),
    as Node's ``Queue.resume`` does, and like it asks only the first call for the ``resumed``
    event: listeners see one resume, however long the legacy list was."""
    script = scripts_for(client).pause
    src, dst = ("wait", "paused") if paused else ("paused", "wait")
    keys = [queue.key(s) for s in (src, dst, "meta", "prioritized", "events", "delayed", "marker")]
    emit = "1"
    while True:
        left = script(keys=keys, args=["paused" if paused else "resumed", emit])
        if paused or not left or int(left) <= 0:
            return
        emit = "0"


def queue_clean(client: redis.Redis, *, queue: QueueRef, state: str, older_than_ms: int, limit: int = 0) -> int:
    """Delete jobs of ``state`` older than ``older_than_ms`` (finishedOn for finished jobs; for
    the others the last attempt's start, else the creation time), at most ``limit`` (0 = all)
    with BullMQ's ``cleanJobsInSet``. Returns how many went. Scheduler iterations and locked
    jobs are skipped by the script itself."""
    if state not in CLEANABLE_STATES:
        raise ValueError(
            _("Cannot clean state '{state}'; choose one of {states}.", state=state, states=", ".join(CLEANABLE_STATES))
        )
    if older_than_ms < 0 or limit < 0:
        raise ValueError(_("The age and the limit of a clean must not be negative."))
    set_name = STATE_KEYS[state]
    keys = [queue.key(set_name), queue.key("events"), queue.key("repeat")]
    removed = scripts_for(client).clean(keys=keys, args=[queue.base, _now_ms() - older_than_ms, limit, set_name])
    return len(removed or [])
