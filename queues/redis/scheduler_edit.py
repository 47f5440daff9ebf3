"""Editing and removing job schedulers, through BullMQ's own scripts.

* **Edit** is what Node's ``Queue.upsertJobScheduler(id, repeat, template)`` does for an
  existing scheduler: the same ``addJobScheduler-11`` script with the same arguments (the next
  run of a cron pattern computed as cron-parser computes it: ``queues.cron.bullmq_next_millis``;
  an ``every`` scheduler's next run is computed by the script itself). A few lines of ours run
  before it, in the same atomic step, so an edit never *creates* a scheduler: the id must still
  be a BullMQ 6 scheduler (its hash has ``ic``), not gone, not a legacy entry.
* **Remove** is ``Queue.removeJobScheduler(id)``: ``removeJobScheduler-3``, unchanged.
* **Migrate** (a legacy repeatable entry into a scheduler) is ``queues.redis.scheduler_migration``.

Framework-free; ``SchedulerError`` carries a message for the user.
"""

from __future__ import annotations

import time

import msgpack
import redis

from .. import cron
from ..keys import QueueRef
from ..messages import _, gettext_noop
from ..safe_json import loads_or
from ..scheduler_edit import (
    COLLISION,
    DONE,
    MISSING,
    NOT_EDITABLE,
    SchedulerError,
    SchedulerResult,
    SchedulerSpec,
)
from ..scheduler_zone import PatternZone, upsert_zone
from ..stored_opts import decode_opts, encode_opts
from ..text import to_int, to_ms, to_text
from . import replies
from .bullmq_scripts import as_function, lua_script


def read_spec(client: redis.Redis, *, queue: QueueRef, scheduler_id: str) -> SchedulerSpec | None:
    """A BullMQ 6 scheduler's definition as stored (for the edit form); ``None`` if there is none."""
    h = {to_text(k): to_text(v) for k, v in client.hgetall(queue.key("repeat:") + scheduler_id).items()}
    if "ic" not in h or client.zscore(queue.key("repeat"), scheduler_id) is None:
        return None
    stored = loads_or(h.get("opts", "{}"), {})
    return SchedulerSpec(
        scheduler_id=scheduler_id,
        name=h.get("name", ""),
        pattern=h.get("pattern", ""),
        every=to_int(h.get("every")),
        tz=h.get("tz", ""),
        start_date=to_int(h.get("startDate")),
        end_date=to_int(h.get("endDate")),
        limit=to_int(h.get("limit")),
        data_json=h.get("data", "{}"),
        opts=decode_opts(stored if isinstance(stored, dict) else {}),
        offset=to_int(h.get("offset")) if h.get("every") else None,
    )


def stored_zone_evidence(client: redis.Redis, queue: QueueRef, scheduler_id: str) -> tuple[str, str, int | None]:
    """(pattern, tz, score) the id holds now: what ``upsert_zone`` infers the workers' zone from."""
    fields = client.hmget(queue.key("repeat:") + scheduler_id, "pattern", "tz")
    pattern, tz = (to_text(v) if v is not None else "" for v in fields)
    score = client.zscore(queue.key("repeat"), scheduler_id)
    return pattern, tz, to_ms(score)


def upsert_call(
    queue: QueueRef, spec: SchedulerSpec, *, now_ms: int, zone: PatternZone | None = None
) -> tuple[list[str], list]:
    """KEYS and ARGV of ``addJobScheduler-11`` as Node's ``JobScheduler.upsertJobScheduler``
    builds them for ``spec`` at ``now_ms``, a pattern read in ``zone`` (``queues.scheduler_zone``;
    by default the spec's own). Raises ``SchedulerError`` where Node would add nothing (end date
    passed, a pattern that never fires again)."""
    if spec.end_date and now_ms > spec.end_date:
        raise SchedulerError(_("The end date has passed: BullMQ would schedule nothing."))
    next_millis = None
    if spec.pattern:
        zone = zone or upsert_zone(pattern=spec.pattern, tz=spec.tz, configured="", stored=None)
        next_millis = (
            now_ms
            if spec.immediately  # defaultRepeatStrategy: Date.now()
            else cron.bullmq_next_millis(
                pattern=spec.pattern, tz=zone.name if zone else "UTC", now_ms=now_ms, start_ms=spec.start_date
            )
        )
        if next_millis is None:
            raise SchedulerError(_("The pattern never fires again: BullMQ would schedule nothing."))
    # ``immediately`` decides the first run only: Node stores it nowhere.
    given = {k: v for k, v in spec.repeat_opts().items() if k != "immediately"}
    repeat = {**given, "count": 1}
    merged = {**spec.opts, "repeat": repeat, "timestamp": now_ms, "repeatJobKey": spec.scheduler_id}
    if next_millis is not None:  # an ``every`` scheduler's are left to the script, as Node leaves them
        merged.update(
            jobId=f"repeat:{spec.scheduler_id}:{next_millis}",
            delay=max(next_millis - now_ms, 0),
            prevMillis=next_millis,
        )
    scheduler_opts = {"name": spec.name, **given}
    keys = [
        queue.key(k)
        for k in (
            "repeat",
            "delayed",
            "wait",
            "paused",
            "meta",
            "prioritized",
            "marker",
            "id",
            "events",
            "pc",
            "active",
        )
    ]
    args = [
        next_millis if next_millis is not None else now_ms,
        msgpack.packb(scheduler_opts, use_bin_type=True),
        spec.scheduler_id,
        spec.data_json,
        msgpack.packb(encode_opts(spec.opts), use_bin_type=True),
        msgpack.packb(encode_opts(merged), use_bin_type=True),
        now_ms,
        queue.base,
        "",
    ]
    return keys, args


EDIT = lua_script(
    as_function("add_job_scheduler", "addJobScheduler-11.lua")
    + """
-- KEYS/ARGV exactly as addJobScheduler-11. -102: no such scheduler; -103: it is a legacy entry
-- (no iteration count), to be migrated rather than edited.
if not redis.call("ZSCORE", KEYS[1], ARGV[3]) then return -102 end
if redis.call("HEXISTS", KEYS[1] .. ":" .. ARGV[3], "ic") == 0 then return -103 end
return add_job_scheduler(KEYS, ARGV)
"""
)

CREATE = lua_script(
    as_function("add_job_scheduler", "addJobScheduler-11.lua")
    + """
-- KEYS/ARGV exactly as addJobScheduler-11. -104: the id is taken (a scheduler or a legacy
-- entry): a create never replaces one, an edit does.
if redis.call("ZSCORE", KEYS[1], ARGV[3]) or redis.call("EXISTS", KEYS[1] .. ":" .. ARGV[3]) == 1 then
  return -104
end
return add_job_scheduler(KEYS, ARGV)
"""
)

REMOVE = lua_script(
    as_function("remove_job_scheduler", "removeJobScheduler-3.lua")
    + """
-- KEYS/ARGV exactly as removeJobScheduler-3; -103 refuses a legacy entry (migrate it instead:
-- removing it here would leave its pending job without a schedule, silently).
if redis.call("HEXISTS", KEYS[1] .. ":" .. ARGV[1], "ic") == 0 and redis.call("ZSCORE", KEYS[1], ARGV[1]) then
  return -103
end
return remove_job_scheduler(KEYS, ARGV)
"""
)


# Message ids, filled in (and so marked for translation) by ``refusal``.
_REFUSED = {
    -102: (NOT_EDITABLE, gettext_noop("There is no job scheduler {id} (removed meanwhile?); nothing was changed.")),
    -103: (NOT_EDITABLE, gettext_noop("{id} is a legacy repeatable entry, not a job scheduler: migrate it first.")),
    -104: (
        NOT_EDITABLE,
        gettext_noop(
            "There is already a job scheduler or repeatable entry {id}: edit it instead; nothing was changed."
        ),
    ),
    -10: (
        COLLISION,
        gettext_noop(
            "BullMQ refused: the next iteration {id} would run at is already taken by the "
            "iteration being processed now. Try again when it has finished."
        ),
    ),
    -11: (COLLISION, gettext_noop("BullMQ refused: every slot for the next iterations is busy.")),
}


def refusal(code: int, scheduler_id: str) -> SchedulerResult:
    if code not in _REFUSED:
        return SchedulerResult("refused", _("BullMQ refused (code {code}).", code=code))
    outcome, msgid = _REFUSED[code]
    return SchedulerResult(outcome, _(msgid, id=scheduler_id))


def edit_scheduler(
    client: redis.Redis, *, queue: QueueRef, spec: SchedulerSpec, now_ms: int | None = None, cron_tz: str = ""
) -> SchedulerResult:
    """Upsert ``spec`` over the existing scheduler of that id, as Node's ``upsertJobScheduler``.
    A pattern without a zone runs in the workers' zone: ``cron_tz`` if configured, else the one
    the stored next run shows (``queues.scheduler_zone``)."""
    zone = upsert_zone(
        pattern=spec.pattern,
        tz=spec.tz,
        configured=cron_tz,
        stored=stored_zone_evidence(client, queue, spec.scheduler_id),
    )
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    keys, args = upsert_call(queue, spec, now_ms=now_ms, zone=zone)
    reply = EDIT(keys=keys, args=args, client=client)
    if isinstance(reply, int):
        return refusal(reply, spec.scheduler_id)
    job_id, delay = to_text(reply[0]), int(reply[1])
    return SchedulerResult(
        DONE, _("Scheduler {id} updated; its next job is {job_id}.", id=spec.scheduler_id, job_id=job_id), job_id, delay
    )


def create_scheduler(
    client: redis.Redis, *, queue: QueueRef, spec: SchedulerSpec, now_ms: int | None = None, cron_tz: str = ""
) -> SchedulerResult:
    """Node's ``upsertJobScheduler`` for an id the queue does not hold yet (refused if it does).
    A pattern without a zone runs in the workers' zone: ``cron_tz`` if configured, else the one
    another zone-less scheduler's stored next run shows (``queue_zone_evidence``)."""
    zone = upsert_zone(pattern=spec.pattern, tz=spec.tz, configured=cron_tz, stored=queue_zone_evidence(client, queue))
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    keys, args = upsert_call(queue, spec, now_ms=now_ms, zone=zone)
    reply = CREATE(keys=keys, args=args, client=client)
    if isinstance(reply, int):
        return refusal(reply, spec.scheduler_id)
    job_id, delay = to_text(reply[0]), int(reply[1])
    message = _("Scheduler {id} created; its first job is {job_id}.", id=spec.scheduler_id, job_id=job_id)
    return SchedulerResult(DONE, message, job_id, delay)


EVIDENCE_SCAN = 200  # schedulers looked through for a zone-less pattern's stored next run


def queue_zone_evidence(client: redis.Redis, queue: QueueRef) -> tuple[str, str, int | None] | None:
    """(pattern, "", score) of a zone-less cron scheduler of the queue, among its first
    ``EVIDENCE_SCAN``: the workers computed that score in their zone, which a new zone-less
    pattern will run in too. ``None`` when the queue has none."""
    members = replies.scored(client.zrange(queue.key("repeat"), 0, EVIDENCE_SCAN - 1, withscores=True))
    pipe = client.pipeline(transaction=False)
    for member, _score in members:
        pipe.hmget(queue.key("repeat:") + to_text(member), "pattern", "tz", "ic")
    for (_member, score), (pattern, tz, ic) in zip(members, pipe.execute() if members else []):
        if pattern and not tz and ic is not None and to_ms(score) is not None:
            return to_text(pattern), "", to_ms(score)
    return None


def remove_scheduler(client: redis.Redis, *, queue: QueueRef, scheduler_id: str) -> SchedulerResult:
    """``Queue.removeJobScheduler(id)``: the scheduler and its pending delayed iteration."""
    code = REMOVE(
        keys=[queue.key("repeat"), queue.key("delayed"), queue.key("events")],
        args=[scheduler_id, queue.base],
        client=client,
    )
    if code == 0:
        return SchedulerResult(
            DONE,
            _(
                "Scheduler {id} removed, with its next delayed job. An iteration already "
                "waiting or running still runs once.",
                id=scheduler_id,
            ),
        )
    if code == 1:
        return SchedulerResult(MISSING, _("There is no job scheduler {id}; nothing was removed.", id=scheduler_id))
    return refusal(int(code), scheduler_id)
