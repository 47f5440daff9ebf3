"""Editing and removing job schedulers: the scheduler a caller asks for, checked as
``upsertJobScheduler`` would check it (``check_spec``), and what an edit or removal reports,
the same for every source kind. A Redis node runs them with BullMQ's own scripts:
``queues.redis.scheduler_edit``.

``SchedulerError`` carries a message for the user."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from . import cron
from .job_options import InvalidJob
from .messages import _
from .safe_json import loads_or
from .scheduler_template import TEMPLATE_OPTIONS, check_template
from .text import MAX_SAFE_INTEGER, MAX_TIMESTAMP_MS
from .whole_numbers import MAX_DURATION_MS, NotAWholeNumber, whole_number

DONE, MISSING, NOT_EDITABLE, COLLISION = "done", "missing", "not_editable", "collision"
MAX_ID = 1000


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
    # An ``every`` scheduler's phase within the interval (ms): BullMQ runs it at
    # ``k * every + offset``; kept when ``every`` changes, as Node's upsert keeps a given one.
    offset: int | None = None
    # The first run now rather than at the pattern's next time (a pattern only; not stored).
    immediately: bool = False

    def repeat_opts(self) -> dict:
        """The repeat options as a caller of ``upsertJobScheduler`` would give them."""
        out: dict = {"pattern": self.pattern} if self.pattern else {"every": self.every}
        for key, value in (
            ("tz", self.tz or None),
            ("startDate", self.start_date),
            ("endDate", self.end_date),
            ("limit", self.limit),
            ("offset", self.offset or None),
            ("immediately", self.immediately or None),
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
    offset=None,
    immediately=False,
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
    every = _bounded(every, "every", low=1, high=MAX_DURATION_MS)
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
    start_date = _bounded(start_date, "startDate", high=MAX_TIMESTAMP_MS)
    end_date = _bounded(end_date, "endDate", high=MAX_TIMESTAMP_MS)
    if start_date and end_date and end_date <= start_date:
        raise SchedulerError(_("'endDate' must come after 'startDate'."))
    limit = _bounded(limit, "limit", low=1)
    _check_phase(pattern=pattern, start_date=start_date, offset=offset, immediately=immediately)
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
        template = check_template(name=name, data=data, opts=opts)
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
        offset=offset or None,
        immediately=bool(immediately),
    )


def _bounded(value, name: str, *, low: int = 0, high: int = MAX_SAFE_INTEGER) -> int | None:
    """A repeat option's whole number (``None`` when not given), within its bounds."""
    if value is None:
        return None
    try:
        return whole_number(value, name, low=low, high=high)
    except NotAWholeNumber as exc:
        raise SchedulerError(str(exc)) from None


def _check_phase(*, pattern: str, start_date, offset, immediately) -> None:
    """``offset`` and ``immediately`` where BullMQ 6.7's ``upsertJobScheduler`` uses them: it
    drops an offset given with a pattern, throws on ``immediately`` with a ``startDate``, and
    ignores ``immediately`` with ``every`` (an interval's next run stays on its phase)."""
    _bounded(offset, "offset", high=MAX_DURATION_MS)
    if offset and pattern:
        raise SchedulerError(_("'offset' applies to an 'every' scheduler only: BullMQ ignores it with a cron pattern."))
    if not isinstance(immediately, bool):
        raise SchedulerError(_("'immediately' must be true or false."))
    if immediately and not pattern:
        raise SchedulerError(
            _("'immediately' applies to a cron pattern only: with 'every', BullMQ keeps the interval's phase.")
        )
    if immediately and start_date:
        raise SchedulerError(_("Both 'immediately' and 'startDate' are given: BullMQ refuses the two together."))


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
