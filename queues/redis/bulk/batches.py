"""One batch of a bulk task: where each job is now, and the per-batch BullMQ script calls that
move it (one atomic step per job, acting only if the job is still where the plan expects it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import redis

from ...actions import DONE, MISSING, WRONG_STATE, ActionResult
from ...bulk.plan import ACTION_STATES, BulkPlan
from ...dead_letters import dlq_source
from ...edit_growth import Budget
from ...keys import QueueRef
from ...states import FINISHED_STATES, LIST_STATES, STATE_KEYS
from .. import redrive, redrive_copy
from ..actions import promote_call, promote_outcome, remove_outcome, retry_outcome
from ..bullmq_scripts import scripts_for
from .edit import edit_batch

# The result of every job a batch moved: one shared object (a message per job would cost more
# than the move itself at bulk speed); refusals keep their own id and message.
MOVED = ActionResult("", DONE, "moved")


def state_check(pipe, queue: QueueRef, job_id: str, state: str) -> None:
    if state in LIST_STATES:
        pipe.lpos(queue.state_key(state), job_id, rank=-1)
    else:
        pipe.zscore(queue.state_key(state), job_id)


def still_there(value, state: str, before_ms: int) -> bool:
    if value is None:
        return False
    return state not in FINISHED_STATES or float(value) < before_ms


def explicit_page(client: redis.Redis, plan: BulkPlan, position: int) -> tuple[list[tuple[str, str | None]], int]:
    """The next batch of an explicit selection, each id with the state the action finds it in
    (None when it is in none of the action's states)."""
    if plan.job_ids is None:
        raise ValueError("This plan scans a state: it has no list of job ids.")
    ids = list(plan.job_ids[position : position + plan.batch_size])
    states = ACTION_STATES[plan.action]
    pipe = client.pipeline(transaction=False)
    for job_id in ids:
        for st in states:
            state_check(pipe, plan.queue, job_id, st)
    found = pipe.execute()
    items: list[tuple[str, str | None]] = []
    for n, job_id in enumerate(ids):
        values = found[n * len(states) : (n + 1) * len(states)]
        state = next((st for st, v in zip(states, values) if still_there(v, st, plan.before_ms)), None)
        items.append((job_id, state))
    return items, position + len(ids)


def _resolve_source(plan: BulkPlan) -> str | None:
    """The operator's choice or configuration; never the job's data (see ``dlq_source``)."""
    if plan.source:
        return plan.source
    return dlq_source(dlq_name=plan.queue.name, patterns=plan.dlq_patterns, mapping=dict(plan.dlq_mapping))


def execute_batch(
    client: redis.Redis,
    plan: BulkPlan,
    items: list[tuple[str, str | None]],
    *,
    now_ms: int,
    budget: Budget | None = None,
) -> list[ActionResult | Exception]:
    """Run the plan's action on a batch; results in item order (moved jobs share ``MOVED``).
    Retry, discard and promote run as one batch script per state (one round trip, one atomic step); a redrive reads the
    dead-letter jobs in one pipelined round trip and runs one composed script per job in a
    second. A script error is returned (not raised) so one bad job cannot stop the batch. An
    edit's ``budget`` (what its jobs' data may still grow) is taken from as it goes."""
    q = plan.queue
    results: list = [None] * len(items)
    by_state: Mapping[str, Sequence[int]]
    if plan.filt is not None:  # a scan's page: every job is in the filter's state
        by_state = {plan.filt.state: range(len(items))} if items else {}
    else:
        listed: dict[str, list[int]] = {}
        for n, (job_id, state) in enumerate(items):
            if state is None:
                results[n] = ActionResult(
                    job_id, WRONG_STATE, f"Job {job_id} is no longer in a state this action applies to."
                )
            else:
                listed.setdefault(state, []).append(n)
        by_state = listed
    if plan.action == "redrive":
        _redrive_batch(client, plan, items, [n for ns in by_state.values() for n in ns], results, now_ms=now_ms)
        return results
    scripts = scripts_for(client)
    for state, positions in by_state.items():
        ids = [job_id for job_id, _ in items] if len(positions) == len(items) else [items[n][0] for n in positions]
        made: list[ActionResult | Exception]
        try:
            if plan.action == "retry":
                keys = [
                    q.key(s)
                    for s in ("events", STATE_KEYS[state], "wait", "meta", "active", "marker", "prioritized", "pc")
                ]
                codes = scripts.retry_batch(
                    keys=keys,
                    args=[
                        q.base,
                        state,
                        "failedReason" if state == "failed" else "returnvalue",
                        "1" if plan.reset_counters else "0",
                        *ids,
                    ],
                )
                made = [MOVED if c == 1 else retry_outcome(j, int(c), state=state) for j, c in zip(ids, codes)]
            elif plan.action == "edit-retry":
                if plan.patch is None:  # refused by BulkPlan.__post_init__
                    raise ValueError("An edit-and-retry plan needs a patch.")
                made = [
                    MOVED if r is None else r
                    for r in edit_batch(
                        client,
                        q,
                        ids,
                        patch=plan.patch,
                        schema=plan.schema,
                        budget=budget if budget is not None else Budget(plan.growth_bounds),
                        reset_counters=plan.reset_counters,
                        before_ms=plan.before_ms,
                    )
                ]
            elif plan.action == "discard":
                codes = scripts.remove_batch(
                    keys=[q.key("repeat")], args=[q.base, "1" if plan.remove_children else "0", *ids]
                )
                made = [MOVED if c == 1 else remove_outcome(j, int(c)) for j, c in zip(ids, codes)]
            else:
                keys, _ = promote_call(q, "")
                codes = scripts.promote_batch(keys=keys, args=[q.base, *ids])
                made = [MOVED if c == 0 else promote_outcome(j, int(c)) for j, c in zip(ids, codes)]
        except redis.ResponseError as exc:
            made = [exc] * len(ids)
        if len(made) == len(results):
            results[:] = made
        else:
            for n, result in zip(positions, made):
                results[n] = result
    return results


def _redrive_batch(
    client: redis.Redis, plan: BulkPlan, items, positions: list[int], results: list, *, now_ms: int
) -> None:
    q = plan.queue
    read = client.pipeline(transaction=False)
    for n in positions:
        redrive_copy.read_pipelined(read, q, items[n][0])
    replies = read.execute() if positions else []
    pipe = client.pipeline(transaction=False)
    calls = []
    for k, n in enumerate(positions):
        job_id = items[n][0]
        copy = redrive_copy.copy_from_reads(replies[2 * k], replies[2 * k + 1], payload_field=plan.payload_field)
        if copy is None:
            results[n] = ActionResult(job_id, MISSING, f"Job {job_id} no longer exists.")
            continue
        refused = redrive.envelope_refusal(job_id, copy, dlq=q)
        if refused is not None:
            results[n] = refused
            continue
        source_name = _resolve_source(plan)
        if not source_name:
            results[n] = ActionResult(job_id, redrive.NO_SOURCE, f"No source queue found for job {job_id} of {q.name}.")
            continue
        source = QueueRef(q.connection, q.prefix, source_name)
        keys, args = redrive.redrive_call(dlq=q, job_id=job_id, source=source, copy=copy, now_ms=now_ms)
        redrive.REDRIVE(keys=keys, args=args, client=pipe)
        calls.append((n, job_id, source, copy))
    if calls:
        for (n, job_id, source, copy), reply in zip(calls, pipe.execute(raise_on_error=False)):
            results[n] = (
                reply
                if isinstance(reply, Exception)
                else redrive.redrive_outcome(job_id, reply, dlq=q, source=source, copy=copy, now_ms=now_ms)
            )
