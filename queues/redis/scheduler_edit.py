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
from ..text import to_int, to_text
from .bullmq_scripts import as_function, lua_script

ENCODE = {
    "deduplication": "de",
    "failParentOnFailure": "fpof",
    "continueParentOnFailure": "cpof",
    "ignoreDependencyOnFailure": "idof",
    "removeDependencyOnFailure": "rdof",
    "keepLogs": "kl",
}
DECODE = {v: k for k, v in ENCODE.items()}


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
        opts={DECODE.get(k, k): v for k, v in (stored if isinstance(stored, dict) else {}).items()},
    )


def _encoded(opts: dict) -> dict:
    return {ENCODE.get(k, k): v for k, v in opts.items()}


def upsert_call(queue: QueueRef, spec: SchedulerSpec, *, now_ms: int) -> tuple[list[str], list]:
    """KEYS and ARGV of ``addJobScheduler-11`` as Node's ``JobScheduler.upsertJobScheduler``
    builds them for ``spec`` at ``now_ms``. Raises ``SchedulerError`` where Node would add
    nothing (end date passed, a pattern that never fires again)."""
    if spec.end_date and now_ms > spec.end_date:
        raise SchedulerError(_("The end date has passed: BullMQ would schedule nothing."))
    next_millis = None
    if spec.pattern:
        next_millis = cron.bullmq_next_millis(
            pattern=spec.pattern, tz=spec.tz or "UTC", now_ms=now_ms, start_ms=spec.start_date
        )
        if next_millis is None:
            raise SchedulerError(_("The pattern never fires again: BullMQ would schedule nothing."))
    repeat = {**spec.repeat_opts(), "count": 1}
    merged = {**spec.opts, "repeat": repeat, "timestamp": now_ms, "repeatJobKey": spec.scheduler_id}
    if next_millis is not None:  # an ``every`` scheduler's are left to the script, as Node leaves them
        merged.update(
            jobId=f"repeat:{spec.scheduler_id}:{next_millis}",
            delay=max(next_millis - now_ms, 0),
            prevMillis=next_millis,
        )
    scheduler_opts = {"name": spec.name, **{k: v for k, v in spec.repeat_opts().items()}}
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
        msgpack.packb(_encoded(spec.opts), use_bin_type=True),
        msgpack.packb(_encoded(merged), use_bin_type=True),
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
    client: redis.Redis, *, queue: QueueRef, spec: SchedulerSpec, now_ms: int | None = None
) -> SchedulerResult:
    """Upsert ``spec`` over the existing scheduler of that id, as Node's ``upsertJobScheduler``."""
    keys, args = upsert_call(queue, spec, now_ms=now_ms if now_ms is not None else int(time.time() * 1000))
    reply = EDIT(keys=keys, args=args, client=client)
    if isinstance(reply, int):
        return refusal(reply, spec.scheduler_id)
    job_id, delay = to_text(reply[0]), int(reply[1])
    return SchedulerResult(
        DONE, _("Scheduler {id} updated; its next job is {job_id}.", id=spec.scheduler_id, job_id=job_id), job_id, delay
    )


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
