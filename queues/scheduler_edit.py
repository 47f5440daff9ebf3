"""Editing and removing job schedulers, through BullMQ's own scripts.

* **Edit** is what Node's ``Queue.upsertJobScheduler(id, repeat, template)`` does for an
  existing scheduler: the same ``addJobScheduler-11`` script with the same arguments (the next
  run of a cron pattern computed as cron-parser computes it: ``queues.cron.bullmq_next_millis``;
  an ``every`` scheduler's next run is computed by the script itself). A few lines of ours run
  before it, in the same atomic step, so an edit never *creates* a scheduler: the id must still
  be a BullMQ 6 scheduler (its hash has ``ic``), not gone, not a legacy entry.
* **Remove** is ``Queue.removeJobScheduler(id)``: ``removeJobScheduler-3``, unchanged.
* **Migrate** (a legacy repeatable entry into a scheduler) is ``queues.scheduler_migration``.

Framework-free; ``SchedulerError`` carries a message for the user.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import msgpack
import redis

from . import cron
from .bullmq_scripts import as_function, lua_script
from .job_options import InvalidJob, new_job
from .keys import QueueRef
from .messages import _, gettext_noop
from .safe_json import loads_or
from .text import to_int, to_text

DONE, MISSING, NOT_EDITABLE, COLLISION = "done", "missing", "not_editable", "collision"
MAX_ID = 1000
# Template options a scheduler takes (Node's JobSchedulerTemplateOptions: JobsOptions without
# jobId, repeat, delay and deduplication).
TEMPLATE_OPTIONS = ("priority", "attempts", "backoff", "removeOnComplete", "removeOnFail", "lifo")
ENCODE = {
    "deduplication": "de",
    "failParentOnFailure": "fpof",
    "continueParentOnFailure": "cpof",
    "ignoreDependencyOnFailure": "idof",
    "removeDependencyOnFailure": "rdof",
    "keepLogs": "kl",
}
DECODE = {v: k for k, v in ENCODE.items()}


class SchedulerError(ValueError):
    """A scheduler edit BullMQ would refuse or that could not work; the message says why."""


@dataclass(frozen=True)
class SchedulerSpec:
    """What ``upsertJobScheduler`` takes: the id, the repeat options and the job template."""

    scheduler_id: str
    name: str
    pattern: str = ""
    every: int | None = None
    tz: str = ""
    start_date: int | None = None  # ms since epoch
    end_date: int | None = None
    limit: int | None = None
    data_json: str = "{}"
    opts: dict = field(default_factory=dict)  # template options, BullMQ's names

    def repeat_opts(self) -> dict:
        """The repeat options as a caller of ``upsertJobScheduler`` would give them."""
        out: dict = {"pattern": self.pattern} if self.pattern else {"every": self.every}
        for key, value in (
            ("tz", self.tz or None),
            ("startDate", self.start_date),
            ("endDate", self.end_date),
            ("limit", self.limit),
        ):
            if value is not None:
                out[key] = value
        return out


def check_spec(
    *,
    scheduler_id,
    name,
    pattern="",
    every=None,
    tz="",
    start_date=None,
    end_date=None,
    limit=None,
    data=None,
    opts=None,
) -> SchedulerSpec:
    """Check a scheduler as ``upsertJobScheduler`` would (and a little more: a zone that exists,
    a pattern cron-parser can read, a template Queuewatch's add would accept)."""
    if not isinstance(scheduler_id, str) or not scheduler_id.strip() or len(scheduler_id) > MAX_ID:
        raise SchedulerError(_("The scheduler id must be a non-empty string of at most {max} characters.", max=MAX_ID))
    pattern = (pattern or "").strip()
    if pattern and every:
        raise SchedulerError(_("Both a pattern and 'every' are given: a scheduler has one or the other."))
    if not pattern and not every:
        raise SchedulerError(_("Give a cron pattern (e.g. \"0 3 * * *\") or 'every' (milliseconds)."))
    if every is not None and (isinstance(every, bool) or not isinstance(every, int) or every < 1):
        raise SchedulerError(_("'every' must be a whole number of milliseconds, 1 or more."))
    try:
        cron.zone(tz or "UTC")
        if pattern:
            fields = len(pattern.split())
            if fields not in (5, 6):
                raise cron.CronError(
                    _(
                        "“{pattern}” has {fields} fields; a pattern has 5, or 6 with seconds first.",
                        pattern=pattern,
                        fields=fields,
                    )
                )
            if cron.bullmq_next_millis(pattern=pattern, tz=tz or "UTC", now_ms=0) is None:
                raise cron.CronError(_("“{pattern}” never fires.", pattern=pattern))
    except cron.CronError as exc:
        raise SchedulerError(str(exc)) from None
    except (ValueError, KeyError):
        raise SchedulerError(_("“{pattern}” is not a valid cron pattern.", pattern=pattern)) from None
    for label, value in (("startDate", start_date), ("endDate", end_date)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise SchedulerError(_("'{label}' must be a time in milliseconds since 1970.", label=label))
    if start_date and end_date and end_date <= start_date:
        raise SchedulerError(_("'endDate' must come after 'startDate'."))
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise SchedulerError(_("'limit' must be a whole number, 1 or more."))
    opts = opts or {}
    if not isinstance(opts, dict):
        raise SchedulerError(_("The template's options must be a JSON object."))
    unknown = set(opts) - set(TEMPLATE_OPTIONS)
    if unknown:
        raise SchedulerError(
            _(
                "Unknown template option(s): {unknown}. A scheduler's template takes: {known}.",
                unknown=", ".join(sorted(unknown)),
                known=", ".join(TEMPLATE_OPTIONS),
            )
        )
    try:
        template = new_job(name=name, data=data, opts=opts)
    except InvalidJob as exc:
        raise SchedulerError(str(exc)) from None
    return SchedulerSpec(
        scheduler_id=scheduler_id,
        name=template.name,
        pattern=pattern,
        every=every or None,
        tz=tz or "",
        start_date=start_date,
        end_date=end_date,
        limit=limit,
        data_json=template.data_json,
        opts=template.opts,
    )


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


@dataclass(frozen=True)
class SchedulerResult:
    outcome: str
    message: str
    next_job_id: str = ""
    delay: int = 0
    pending_removed: int = 0

    @property
    def ok(self) -> bool:
        return self.outcome == DONE


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


def spec_as_dict(spec: SchedulerSpec) -> dict:
    """For the audit log and the API."""
    return {
        "id": spec.scheduler_id,
        "name": spec.name,
        **spec.repeat_opts(),
        "data": loads_or(spec.data_json, spec.data_json),
        "opts": spec.opts,
    }


def spec_json(spec: SchedulerSpec) -> str:
    return json.dumps(spec_as_dict(spec), sort_keys=True, ensure_ascii=False)
