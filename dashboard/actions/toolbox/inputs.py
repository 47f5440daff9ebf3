"""Inputs of the operator toolbox's actions (add, duplicate, edit-and-retry, queue settings,
drain, obliterate), read from a form's ``QueryDict`` or a JSON object like every other
action input (``dashboard.actions.inputs``). BullMQ's own rules for a job live in
``queues.job_options``; these classes only turn form fields into that shape and its refusals
into ``InvalidInput``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from dashboard.actions.inputs import (
    ActionInput,
    ReasonedInput,
    flag,
    is_form,
    json_field,
    merge_patch_from,
    reset_counters_from,
    text,
)
from dashboard.web.errors import InvalidInput
from queues.job_options import InvalidJob, NewJob, new_job
from queues.text import MAX_SAFE_INTEGER
from queues.whole_numbers import MAX_DURATION_MS, NotAWholeNumber, whole_number_text


def whole(params, name: str) -> int | None:
    """A form's number field: empty means not given."""
    try:
        return whole_number_text(text(params, name), name)
    except NotAWholeNumber:
        raise InvalidInput(_("'%(name)s' must be a whole number.") % {"name": name}) from None


def _keep_option(value: str):
    if value in ("", None):
        return None
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    try:
        return whole_number_text(value, "removeOnComplete/removeOnFail")
    except NotAWholeNumber:
        raise InvalidInput(_("removeOnComplete/removeOnFail: write true, false or a number of jobs to keep.")) from None


def opts_from_form(params) -> dict:
    """The add form's fields as BullMQ options (each field named after its option)."""
    opts: dict = {}
    for name in ("delay", "priority", "attempts"):
        value = whole(params, name)
        if value is not None:
            opts[name] = value
    backoff_type, backoff_delay = text(params, "backoff_type"), whole(params, "backoff_delay")
    if backoff_type:
        opts["backoff"] = {"type": backoff_type, **({"delay": backoff_delay} if backoff_delay is not None else {})}
        jitter = text(params, "backoff_jitter")
        if jitter:
            try:
                opts["backoff"]["jitter"] = float(jitter)
            except ValueError:
                raise InvalidInput(_("'backoff_jitter' must be a number between 0 and 1.")) from None
    if text(params, "jobId"):
        opts["jobId"] = text(params, "jobId")
    if text(params, "deduplication_id"):
        ttl = whole(params, "deduplication_ttl")
        opts["deduplication"] = {"id": text(params, "deduplication_id"), **({"ttl": ttl} if ttl is not None else {})}
        for name in ("reschedule", "keepLastIfActive"):  # BullMQ 6.7's (queues.job_options)
            if flag(params.get(f"deduplication_{name}"), False):
                opts["deduplication"][name] = True
    for name in ("removeOnComplete", "removeOnFail"):
        keep = _keep_option(text(params, name))
        if keep is not None:
            opts[name] = keep
    if flag(params.get("lifo"), False):
        opts["lifo"] = True
    return opts


@dataclass(frozen=True)
class AddJobInput(ActionInput):
    """``{"name", "data", "opts"}`` (API, BullMQ's option names) or the add form's fields."""

    job: NewJob | None = None

    @classmethod
    def fields_from(cls, params) -> dict:
        data = json_field(params, "data", what=_("The data"))
        opts = opts_from_form(params) if is_form(params) else params.get("opts")
        try:
            return {"job": new_job(name=params.get("name"), data=data, opts=opts)}
        except InvalidJob as exc:
            raise InvalidInput(str(exc)) from None

    def audit_details(self) -> dict:
        return {"name": self.job.name, "opts": self.job.opts}


@dataclass(frozen=True)
class EditRetryInput(ActionInput):
    """A JSON merge patch (RFC 7386) for a failed job's data; ``expected`` is the fingerprint of
    the data the preview was made from (the page sends it; a changed job is then refused)."""

    patch: Any = None
    expected: str = ""
    reset_counters: bool = True

    @classmethod
    def fields_from(cls, params) -> dict:
        return {
            "patch": merge_patch_from(params),
            "expected": text(params, "expected")[:64],
            "reset_counters": reset_counters_from(params),
        }

    def audit_details(self) -> dict:
        return {"patch_keys": sorted(self.patch)[:50], "reset_counters": self.reset_counters}


@dataclass(frozen=True)
class ConcurrencyInput(ActionInput):
    concurrency: int = 1

    @classmethod
    def fields_from(cls, params) -> dict:
        value = whole(params, "concurrency") if is_form(params) else params.get("concurrency")
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SAFE_INTEGER:
            raise InvalidInput(_("Global concurrency must be a whole number, 1 or more."))
        return {"concurrency": value}

    def audit_details(self) -> dict:
        return {"concurrency": self.concurrency}


@dataclass(frozen=True)
class RateLimitInput(ActionInput):
    max: int = 1
    duration: int = 1000

    @classmethod
    def fields_from(cls, params) -> dict:
        found = {}
        for name in ("max", "duration"):
            value = whole(params, name) if is_form(params) else params.get(name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SAFE_INTEGER:
                raise InvalidInput(_("A rate limit is 'max' jobs per 'duration' ms, both whole numbers, 1 or more."))
            found[name] = value
        return found

    def audit_details(self) -> dict:
        return {"max": self.max, "duration": self.duration}


@dataclass(frozen=True)
class RateLimitNowInput(ReasonedInput):
    """``Queue.rateLimit(ms)``: hold every worker of the queue for ``ms``."""

    ms: int = 1000

    @classmethod
    def fields_from(cls, params) -> dict:
        value = whole(params, "ms") if is_form(params) else params.get("ms")
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DURATION_MS:
            raise InvalidInput(_("'ms' must be a whole number of milliseconds, 1 or more."))
        return {"ms": value}

    def audit_details(self) -> dict:
        return {"ms": self.ms}


@dataclass(frozen=True)
class DrainInput(ReasonedInput):
    delayed: bool = False

    @classmethod
    def fields_from(cls, params) -> dict:
        return {"delayed": flag(params.get("delayed"), False)}

    def audit_details(self) -> dict:
        return {"delayed": self.delayed}


@dataclass(frozen=True)
class ObliterateInput(ReasonedInput):
    """``confirm`` must repeat the queue's name (checked by the runner, which knows the queue)."""

    confirm: str = ""

    @classmethod
    def fields_from(cls, params) -> dict:
        confirm = text(params, "confirm")
        if not confirm:
            raise InvalidInput(_("Type the queue's name to confirm: obliterate deletes the queue and every job in it."))
        return {"confirm": confirm}


def redacted_json(value: Any, *, redactor) -> str:
    """A value for the audit log, secrets redacted (the log keeps a big one as its size, digest
    and excerpt: ``dashboard.audit.bounds``)."""
    return json.dumps(redactor.value(value), ensure_ascii=False, sort_keys=True)
