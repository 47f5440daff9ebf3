"""The scheduler actions of the operator toolbox: their inputs (from a form's ``QueryDict`` or
a JSON object, like every action input) and their runners (thin adapters over
``queues.scheduler_edit``). Registered in ``dashboard.actions.registry`` as QUEUE actions
(``actions/create-scheduler``, ``actions/edit-scheduler``, ``actions/run-scheduler``,
``actions/remove-scheduler``, ``actions/migrate-repeat``): the
scheduler or legacy entry is named in the input, so roles, read-only mode, CSRF and the audit
come from the registry like everywhere else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from dashboard.actions.inputs import ActionInput, ReasonedInput, flag, text
from dashboard.actions.job_schemas import refused, schema_for
from dashboard.actions.toolbox.inputs import is_form, json_field, redacted_json, whole
from dashboard.actions.toolbox.runners import ToolResult
from dashboard.actions.toolbox.runners import _added as added
from dashboard.connections.registry import get_redactor
from dashboard.web.errors import InvalidInput
from queues import scheduler_edit, scheduler_runs
from queues.job_options import InvalidJob
from queues.keys import QueueRef
from queues.sources.facets import commands_of, schedulers_of


def _number(params, name: str) -> int | None:
    value = whole(params, name) if is_form(params) else params.get(name)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise InvalidInput(_("'%(name)s' must be a whole number.") % {"name": name})
    return value


def _date(params, name: str) -> int | None:
    """``startDate``/``endDate`` in ms since 1970 (the API's and a form's), or a form's
    ``<name>_at`` (a date and time) read in the zone ``dates_tz`` names."""
    if not is_form(params) or text(params, name):
        return _number(params, name)
    try:
        return scheduler_runs.zoned_ms(text(params, name + "_at"), text(params, "dates_tz"))
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None


def spec_from(params) -> scheduler_edit.SchedulerSpec:
    """A scheduler from ``id``, ``name``, ``pattern`` or ``every``, ``tz``, ``startDate``,
    ``endDate`` (or, from a form, ``startDate_at``/``endDate_at`` in zone ``dates_tz``),
    ``limit``, ``offset``, ``immediately``, ``data`` and ``opts`` (the template's options,
    BullMQ's names)."""
    data = json_field(params, "data", what=_("The template data"))
    opts = json_field(params, "opts", what=_("The template options"))
    try:
        return scheduler_edit.check_spec(
            scheduler_id=text(params, "id"),
            name=text(params, "name"),
            pattern=text(params, "pattern"),
            every=_number(params, "every"),
            tz=text(params, "tz"),
            start_date=_date(params, "startDate"),
            end_date=_date(params, "endDate"),
            limit=_number(params, "limit"),
            data=data,
            opts=opts,
            offset=_number(params, "offset"),
            immediately=flag(params.get("immediately"), False),
        )
    except scheduler_edit.SchedulerError as exc:
        raise InvalidInput(str(exc)) from None


@dataclass(frozen=True)
class EditSchedulerInput(ActionInput):
    spec: Any = None

    @classmethod
    def fields_from(cls, params) -> dict:
        return {"spec": spec_from(params)}

    def audit_details(self) -> dict:
        return {"scheduler": self.spec.scheduler_id}


@dataclass(frozen=True)
class RunSchedulerInput(ActionInput):
    scheduler_id: str = ""

    @classmethod
    def fields_from(cls, params) -> dict:
        scheduler_id = text(params, "id")
        if not scheduler_id:
            raise InvalidInput(_("Name the scheduler to run ('id')."))
        return {"scheduler_id": scheduler_id}

    def audit_details(self) -> dict:
        return {"scheduler": self.scheduler_id}


@dataclass(frozen=True)
class RemoveSchedulerInput(ReasonedInput):
    scheduler_id: str = ""

    @classmethod
    def fields_from(cls, params) -> dict:
        scheduler_id = text(params, "id")
        if not scheduler_id:
            raise InvalidInput(_("Name the scheduler to remove ('id')."))
        return {"scheduler_id": scheduler_id}

    def audit_details(self) -> dict:
        return {"scheduler": self.scheduler_id}


@dataclass(frozen=True)
class MigrateRepeatInput(ActionInput):
    """``member``: the legacy entry (as listed on the schedulers page); ``id``: the new
    scheduler's id (empty: the legacy entry's job id or name)."""

    member: str = ""
    scheduler_id: str = ""

    @classmethod
    def fields_from(cls, params) -> dict:
        member = str(params.get("member") or "")
        if not member:
            raise InvalidInput(_("Name the legacy repeatable entry to migrate ('member')."))
        return {"member": member, "scheduler_id": text(params, "id")}

    def audit_details(self) -> dict:
        return {"legacy": self.member, "scheduler": self.scheduler_id}


def _spec_audit(spec) -> str:
    return redacted_json(scheduler_edit.spec_as_dict(spec), redactor=get_redactor())


def _result(done: scheduler_edit.SchedulerResult, **audit) -> ToolResult:
    body = {"next_job_id": done.next_job_id} if done.ok else {}
    return ToolResult(done.outcome, done.message, int(done.ok), audit=audit, body=body)


def edit_scheduler(source, *, queue: QueueRef, given) -> ToolResult:
    stored = schedulers_of(source)
    before = stored.spec(queue, scheduler_id=given.spec.scheduler_id)
    if before is None:
        return ToolResult(
            scheduler_edit.NOT_EDITABLE,
            _("There is no job scheduler %(id)s; nothing was changed.") % {"id": given.spec.scheduler_id},
        )
    try:
        done = stored.edit(queue, spec=given.spec)
    except scheduler_edit.SchedulerError as exc:
        raise InvalidInput(str(exc)) from None
    return _result(done, change={"before": _spec_audit(before), "after": _spec_audit(given.spec)})


def create_scheduler(source, *, queue: QueueRef, given) -> ToolResult:
    try:
        done = schedulers_of(source).create(queue, spec=given.spec)
    except scheduler_edit.SchedulerError as exc:
        raise InvalidInput(str(exc)) from None
    return _result(done, change={"before": None, "after": _spec_audit(given.spec)})


def run_scheduler(source, *, queue: QueueRef, given) -> ToolResult:
    """A one-off job from the scheduler's template (``queues.scheduler_runs.one_off``), added as
    any job is (BullMQ's own add scripts); the scheduler and its next run are left alone."""
    spec = schedulers_of(source).spec(queue, scheduler_id=given.scheduler_id)
    if spec is None:
        return ToolResult(
            scheduler_edit.NOT_EDITABLE,
            _("There is no job scheduler %(id)s; nothing was added.") % {"id": given.scheduler_id},
        )
    try:
        job = scheduler_runs.one_off(spec)
        outcome = commands_of(source).add(queue, job=job, schema=schema_for(queue))
    except InvalidJob as exc:
        raise refused(exc) from None
    result = added(outcome, new_job=job)
    if outcome.created:
        result.message = _("Scheduler %(id)s run now as job %(job)s; its next run is unchanged.") % {
            "id": given.scheduler_id,
            "job": outcome.job_id,
        }
    return result


def remove_scheduler(source, *, queue: QueueRef, given) -> ToolResult:
    stored = schedulers_of(source)
    before = stored.spec(queue, scheduler_id=given.scheduler_id)
    done = stored.remove(queue, scheduler_id=given.scheduler_id)
    return _result(done, change={"before": _spec_audit(before) if before else None, "after": None})


def migration_plan(source, *, queue: QueueRef, member: str, scheduler_id: str = ""):
    try:
        return schedulers_of(source).migration_plan(queue, member=member, scheduler_id=scheduler_id)
    except scheduler_edit.SchedulerError as exc:
        raise InvalidInput(str(exc)) from None


def migrate_repeat(source, *, queue: QueueRef, given) -> ToolResult:
    plan = migration_plan(source, queue=queue, member=given.member, scheduler_id=given.scheduler_id)
    try:
        done = schedulers_of(source).migrate(queue, plan=plan)
    except scheduler_edit.SchedulerError as exc:
        raise InvalidInput(str(exc)) from None
    return _result(
        done,
        change={
            "before": json.dumps({"legacy": plan.member, "layout": plan.layout, "pending_job": plan.pending_job_id}),
            "after": _spec_audit(plan.spec),
        },
    )
