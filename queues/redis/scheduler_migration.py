"""Migrating a legacy repeatable entry into a job scheduler, through BullMQ's own scripts.

A legacy entry (reference §6.2: the pre-hash key shape, which BullMQ 6 throws on, or a v5 hash
without ``ic``, which it adopts silently) becomes a job scheduler in one atomic step: the legacy
entry and its pending delayed iteration are removed (the iteration with ``removeJob-2``), and
``addJobScheduler-11`` creates the scheduler with the same schedule and the pending iteration's
data and options as its template. The schedule keeps its phase: a cron pattern's next run is
computed from now (the time the legacy entry would have run next), an ``every`` scheduler starts
at the legacy entry's next run (its ``startDate``). So it keeps firing once per slot, as a
scheduler. Editing and removing schedulers: ``queues.redis.scheduler_edit``.

Framework-free; ``SchedulerError`` carries a message for the user.
"""

from __future__ import annotations

import time

import redis

from ..keys import QueueRef
from ..messages import _
from ..safe_json import loads_or
from ..scheduler_edit import DONE, SchedulerError, SchedulerResult, check_spec
from ..scheduler_migration import NOT_LEGACY, TARGET_EXISTS, MigrationPlan, remaining_limit
from ..scheduler_template import TEMPLATE_OPTIONS
from ..scheduler_zone import stored_zone
from ..text import to_int, to_ms, to_text
from .bullmq_scripts import as_function, lua_script
from .scheduler_edit import decode_opts, refusal, upsert_call
from .schedulers import is_legacy_key_shape

# What an iteration job carries that is not part of the template: the iteration's own.
_ITERATION_OPTS = frozenset({"repeat", "jobId", "delay", "timestamp", "prevMillis", "repeatJobKey"})

MIGRATE = lua_script(
    as_function("remove_job", "removeJob-2.lua")
    + as_function("add_job_scheduler", "addJobScheduler-11.lua")
    + """
-- KEYS[1..11] addJobScheduler-11's keys; ARGV[1..9] its arguments (ARGV[3] the new id);
-- ARGV[10] the legacy member. Returns {code, ...}: {1, next job id, delay, pending removed},
-- {-104} the legacy entry is gone or no longer legacy, {-105} the new id is taken, or
-- {addJobScheduler's negative code}.
local repeatKey, member, prefix = KEYS[1], ARGV[10], ARGV[8]
local millis = redis.call("ZSCORE", repeatKey, member)
if not millis or redis.call("HEXISTS", repeatKey .. ":" .. member, "ic") == 1 then return {-104} end
if redis.call("ZSCORE", repeatKey, ARGV[3]) then return {-105} end
-- Its pending iteration: the delayed job due at the entry's next run whose rjk names it
-- (delayed scores are millis * 0x1000 + a sequence number).
local due = tonumber(millis)
local pending = {}
for _, id in ipairs(redis.call("ZRANGEBYSCORE", KEYS[2], due * 0x1000, (due + 1) * 0x1000 - 1)) do
  if redis.call("HGET", prefix .. id, "rjk") == member then pending[#pending + 1] = id end
end
redis.call("ZREM", repeatKey, member)
redis.call("DEL", repeatKey .. ":" .. member)
local removed = 0
for _, id in ipairs(pending) do
  if remove_job({prefix .. id, repeatKey}, {id, "1", prefix}) == 1 then removed = removed + 1 end
end
local added = add_job_scheduler({KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9],
                                 KEYS[10], KEYS[11]},
                                {ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9]})
if type(added) == "number" then return {added} end
return {1, added[1], added[2], removed}
"""
)


def _pending_iteration(client, queue: QueueRef, member: str, due: int) -> tuple[str, dict]:
    ids = client.zrangebyscore(queue.key("delayed"), due * 0x1000, (due + 1) * 0x1000 - 1)
    for raw in ids:
        job_id = to_text(raw)
        job = {to_text(k): to_text(v) for k, v in client.hgetall(queue.job_key(job_id)).items()}
        if job.get("rjk") == member:
            return job_id, job
    return "", {}


def _template_opts(stored: dict) -> dict:
    """The pending iteration's options that make the template: all but the iteration's own.
    One a scheduler's template cannot hold is refused, not dropped."""
    opts = decode_opts({k: v for k, v in stored.items() if k not in _ITERATION_OPTS})
    refused = sorted(set(opts) - set(TEMPLATE_OPTIONS))
    if refused:
        raise SchedulerError(
            _(
                "The legacy entry's jobs have option(s) a job scheduler's template cannot hold: {names}. "
                "Migrate it by hand (queue.upsertJobScheduler) to decide what replaces them.",
                names=", ".join(refused),
            )
        )
    return opts


def plan_migration(
    client: redis.Redis,
    *,
    queue: QueueRef,
    member: str,
    scheduler_id: str = "",
    now_ms: int | None = None,
    cron_tz: str = "",
) -> MigrationPlan:
    """Read legacy entry ``member`` and say what migrating it will do; ``SchedulerError`` if it
    is not a legacy entry (or is gone)."""
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    score = client.zscore(queue.key("repeat"), member)
    h = {to_text(k): to_text(v) for k, v in client.hgetall(queue.key("repeat:") + member).items()}
    if score is None or "ic" in h:
        raise SchedulerError(
            _(
                "{member} is not a legacy repeatable entry of this queue (gone, or already a job scheduler).",
                member=member,
            )
        )
    if h:
        layout, name, tz, spec_text = (
            "v5-hash",
            h.get("name", ""),
            h.get("tz", ""),
            h.get("pattern") or h.get("every", ""),
        )
        end_date, default_id = to_int(h.get("endDate")), h.get("name", "") or member
    elif is_legacy_key_shape(member):
        parts = member.split(":")
        layout, name, tz, spec_text, end_date = "key-shape", parts[0], parts[3], parts[4], to_int(parts[2])
        default_id = parts[1] or parts[0]
    else:
        raise SchedulerError(_("{member} has no definition Queuewatch can read; migrate it by hand.", member=member))
    due = to_ms(score)
    if due is None:  # a producer scored it ``inf``: no phase or pending iteration to carry over
        raise SchedulerError(
            _("{member} has no next run Queuewatch can read ({score}); migrate it by hand.", member=member, score=score)
        )
    pending_id, job = _pending_iteration(client, queue, member, due)
    stored = loads_or(job.get("opts", "{}"), {})
    stored = stored if isinstance(stored, dict) else {}
    repeat: dict = stored["repeat"] if isinstance(stored.get("repeat"), dict) else {}
    every = to_int(spec_text) if " " not in spec_text else None
    data = loads_or(job.get("data", "{}"), {})
    # The legacy iteration's repeat options hold what its hash does not: the limit (with the
    # count of iterations already made), the start date and an interval's offset.
    legacy_limit, done = to_int(repeat.get("limit")), to_int(repeat.get("count")) or 1
    offset = to_int(repeat.get("offset")) or 0
    if every:  # keep the phase: the first run when the legacy one is due, then every interval
        first = due + offset
        start_date, phase = (first if first > now_ms else None), first % every
    else:
        start_date, phase = to_int(repeat.get("startDate")), None
    spec = check_spec(
        scheduler_id=scheduler_id or default_id,
        name=job.get("name") or name or "repeat",
        pattern="" if every else spec_text,
        every=every,
        tz=tz,
        end_date=end_date or to_int(repeat.get("endDate")),
        start_date=start_date,
        limit=remaining_limit(legacy_limit, done=done, member=member),
        data=data,
        opts=_template_opts(stored),
        offset=phase or None,
    )
    return MigrationPlan(
        member=member,
        layout=layout,
        spec=spec,
        pending_job_id=pending_id,
        legacy_next=due,
        zone=stored_zone(pattern=spec.pattern, tz=spec.tz, score=due, configured=cron_tz),
        legacy_limit=legacy_limit,
        runs_done=done - 1 if legacy_limit is not None else None,
    )


def migrate_legacy(
    client: redis.Redis, *, queue: QueueRef, plan: MigrationPlan, now_ms: int | None = None
) -> SchedulerResult:
    """Replace the legacy entry by the planned scheduler, in one atomic step."""
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    keys, args = upsert_call(queue, plan.spec, now_ms=now_ms, zone=plan.zone)
    reply = MIGRATE(keys=keys, args=[*args, plan.member], client=client)
    code = int(reply[0])
    if code == -104:
        return SchedulerResult(
            NOT_LEGACY,
            _(
                "{member} is no longer a legacy entry (migrated or removed meanwhile); nothing was changed.",
                member=plan.member,
            ),
        )
    if code == -105:
        return SchedulerResult(
            TARGET_EXISTS,
            _(
                "A job scheduler {id} already exists; choose another id. Nothing was changed.",
                id=plan.spec.scheduler_id,
            ),
        )
    if code < 0:
        return refusal(code, plan.spec.scheduler_id)
    job_id, delay, removed = to_text(reply[1]), int(reply[2]), int(reply[3])
    return SchedulerResult(
        DONE,
        _(
            "Legacy entry migrated to job scheduler {id}; its next job is {job_id} "
            "({removed} legacy pending job removed).",
            id=plan.spec.scheduler_id,
            job_id=job_id,
            removed=removed,
        ),
        job_id,
        delay,
        removed,
    )
