"""One validated input object per action, parsed from a plain mapping: a form's ``QueryDict``
(pages) or a JSON object (API). Pages and API call the same ``from_params``, so which actions
need a reason, how an age or a rate is read and what a selection may hold are written once.
Bad input raises ``InvalidInput`` with a message meant for the user (400).

Field names are the API's; the page forms use the same names, plus the ``keep_counters``
checkbox (a ticked box can only send a value, so it says the opposite of ``reset_counters``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, ClassVar

from django.utils.translation import gettext, ngettext

from dashboard.actions import edit_limits
from dashboard.core.i18n import translate
from dashboard.core.labels import label
from dashboard.web.errors import InvalidInput
from queues import edit_growth, selection
from queues.job_add import parse_data
from queues.job_options import InvalidJob
from queues.states import CLEANABLE_STATES, SELECTABLE_STATES

MAX_REASON = 2000
MAX_SELECTED_IDS = 10_000
DEFAULT_RATE = 100.0  # jobs per second when the form leaves the pace empty
MAX_RATE = 100_000
CLEAN_LIMIT = 10_000  # jobs removed by one clean at most


# --- single fields ---------------------------------------------------------------------------


def text(params, name: str) -> str:
    return str(params.get(name) or "").strip()


def flag(value, default: bool) -> bool:
    """A yes/no field: JSON booleans, or "1"/"true"/"yes"/"on" from forms and query strings."""
    if value in (None, ""):
        return default
    return value is True or str(value).lower() in ("1", "true", "yes", "on")


def reason_from(params, *, required: bool) -> str:
    reason = text(params, "reason")
    if required and not reason:
        raise InvalidInput(
            gettext("Say why (the reason goes into the audit log): it is required for bulk and destructive actions.")
        )
    return reason[:MAX_REASON]


def reset_counters_from(params) -> bool:
    """Retry resets attempt and stall counters unless told not to (``reset_counters: false``,
    or the page's ``keep_counters`` box)."""
    return flag(params.get("reset_counters"), True) and not flag(params.get("keep_counters"), False)


def minutes_from(params, name: str = "older_than_minutes") -> int:
    try:
        minutes = int(str(params.get(name)).strip())
    except (TypeError, ValueError):
        raise InvalidInput(
            gettext("The age ('%(name)s') must be a whole number of minutes.") % {"name": name}
        ) from None
    if minutes < 0:
        raise InvalidInput(gettext("The age must be 0 minutes or more."))
    return minutes


def rate_from(value) -> float | None:
    """Jobs per second: empty means the default, 0 or "unpaced" means as fast as possible."""
    if value in (None, ""):
        return DEFAULT_RATE
    if str(value).strip().lower() in ("0", "unpaced", "none"):
        return None
    try:
        rate = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(gettext("The rate must be a number of jobs per second (or 'unpaced').")) from None
    if not 0 < rate <= MAX_RATE:
        raise InvalidInput(gettext("The rate must be between 0 and 100,000 jobs per second."))
    return rate


def _time_param(value, name: str) -> int | None:
    if value in (None, ""):
        return None
    try:
        when = dt.datetime.fromisoformat(str(value).strip())
    except ValueError:
        raise InvalidInput(
            gettext("'%(name)s' must be a date and time like 2026-01-31T14:00 (UTC).") % {"name": name}
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


def _iso_param(ms: int | None) -> str:
    """The form value that ``_time_param`` reads back to the same millisecond."""
    if ms is None:
        return ""
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="milliseconds")


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


# --- per-job and per-queue actions -----------------------------------------------------------


@dataclass(frozen=True)
class ActionInput:
    """The input of an action that needs nothing but an optional reason. A subclass adds its
    fields (read in ``fields_from``), says whether a reason is required, and what of its input
    the audit row keeps (``audit_details``)."""

    reason: str = ""
    needs_reason: ClassVar[bool] = False

    @classmethod
    def from_params(cls, params) -> ActionInput:
        return cls(reason=reason_from(params, required=cls.needs_reason), **cls.fields_from(params))

    @classmethod
    def fields_from(cls, params) -> dict:
        return {}

    def audit_details(self) -> dict:
        return {}


class ReasonedInput(ActionInput):
    """Destructive actions, and moves across queues: say why."""

    needs_reason = True


@dataclass(frozen=True)
class RetryInput(ActionInput):
    reset_counters: bool = True

    @classmethod
    def fields_from(cls, params) -> dict:
        return {"reset_counters": reset_counters_from(params)}

    def audit_details(self) -> dict:
        return {"reset_counters": self.reset_counters}


@dataclass(frozen=True)
class CleanInput(ActionInput):
    state: str = ""
    older_than_ms: int = 0
    limit: int = CLEAN_LIMIT
    needs_reason = True

    @classmethod
    def fields_from(cls, params) -> dict:
        older_than_ms = minutes_from(params) * 60_000
        state = text(params, "state")
        if state not in CLEANABLE_STATES:
            raise InvalidInput(
                gettext("Jobs in state '%(state)s' cannot be cleaned. Choose one of: %(states)s.")
                % {"state": state, "states": ", ".join(CLEANABLE_STATES)}
            )
        return {"state": state, "older_than_ms": older_than_ms}

    def audit_details(self) -> dict:
        return {"state": self.state, "older_than_ms": self.older_than_ms, "limit": self.limit}


# --- bulk actions ----------------------------------------------------------------------------


@dataclass
class Selection:
    """What a bulk action acts on: explicit job ids (checkboxes), or every job matching a
    filter (which includes an error group's fingerprint)."""

    ids: list[str] = field(default_factory=list)
    state: str = "failed"
    name: str = ""
    reason_contains: str = ""
    finished_from_ms: int | None = None
    finished_to_ms: int | None = None
    fingerprint: str = ""
    name_contains: str = ""  # the queue page's filter: a part of the job name, any case

    @classmethod
    def from_params(cls, params) -> Selection:
        """From form fields or JSON: ``ids`` (a list), or ``state``, ``name``, ``name_contains``, ``reason_contains``,
        ``finished_from`` / ``finished_to`` (ISO date-times, UTC) and ``fingerprint``."""
        ids = params.getlist("ids") if hasattr(params, "getlist") else params.get("ids") or []
        if not isinstance(ids, list):
            raise InvalidInput(gettext("'ids' must be a list of job ids."))
        ids = [str(i) for i in ids if str(i).strip()]
        if len(ids) > MAX_SELECTED_IDS:
            raise InvalidInput(
                gettext("At most %(n)d jobs can be selected one by one; use a filter instead.")
                % {"n": MAX_SELECTED_IDS}
            )
        state = str(params.get("state") or "failed")
        if state not in SELECTABLE_STATES:
            raise InvalidInput(
                gettext("Unknown state '%(state)s'. Choose one of: %(states)s.")
                % {"state": state, "states": ", ".join(SELECTABLE_STATES)}
            )
        return cls(
            ids=ids,
            state=state,
            name=text(params, "name")[:200],
            reason_contains=text(params, "reason_contains")[:500],
            finished_from_ms=_time_param(params.get("finished_from"), "finished_from"),
            finished_to_ms=_time_param(params.get("finished_to"), "finished_to"),
            fingerprint=text(params, "fingerprint")[:64],
            name_contains=text(params, "name_contains")[:200],
        )

    @classmethod
    def chosen_from(cls, params) -> Selection:
        """A bulk form's selection: the ticked ids, unless ``scope`` is "matching" or the queue
        page's "all N matching" box (``all_matching``) is ticked (all jobs matching the filter);
        "selected" with nothing ticked is refused."""
        chosen = cls.from_params(params)
        if params.get("scope") == "matching" or flag(params.get("all_matching"), False):
            chosen.ids = []
        elif params.get("scope") == "selected" and not chosen.ids:
            raise InvalidInput(gettext("No jobs are ticked. Tick some, or choose “all matching this filter”."))
        return chosen

    @classmethod
    def from_stored(cls, stored: dict) -> Selection:
        return cls(**{k: v for k, v in stored.items() if k in cls.__dataclass_fields__})

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v not in (None, "", [])}

    @property
    def finished_from_iso(self) -> str:
        return _iso_param(self.finished_from_ms)

    @property
    def finished_to_iso(self) -> str:
        return _iso_param(self.finished_to_ms)

    def job_filter(self) -> selection.JobFilter:
        try:  # empty fields do not filter (JobFilter's None)
            return selection.JobFilter(
                state=self.state,
                name=self.name or None,
                reason_contains=self.reason_contains or None,
                finished_from_ms=self.finished_from_ms,
                finished_to_ms=self.finished_to_ms,
                fingerprint=self.fingerprint or None,
                name_contains=self.name_contains or None,
            )
        except ValueError as exc:  # the domain's own check of a filter's consistency
            raise InvalidInput(str(exc)) from None

    def describe(self) -> str:
        """The selection in words, in the active language."""
        if self.ids:
            return ngettext("%(n)d selected job", "%(n)d selected jobs", len(self.ids)) % {"n": len(self.ids)}
        parts = [gettext("all %(state)s jobs") % {"state": label(self.state)}]
        if self.fingerprint:
            parts.append(gettext("in error group %(group)s") % {"group": self.fingerprint})
        if self.name:
            parts.append(gettext("named “%(name)s”") % {"name": self.name})
        if self.name_contains:
            parts.append(gettext("whose name contains “%(text)s”") % {"text": self.name_contains})
        if self.reason_contains:
            parts.append(gettext("whose failure reason contains “%(text)s”") % {"text": self.reason_contains})
        if self.finished_from_ms:
            parts.append(gettext("finished from %(time)s") % {"time": _iso(self.finished_from_ms)})
        if self.finished_to_ms:
            parts.append(gettext("finished before %(time)s") % {"time": _iso(self.finished_to_ms)})
        return " ".join(parts)


def is_form(params) -> bool:
    return hasattr(params, "getlist")


def json_field(params, name: str, *, what: str) -> Any:
    """A value that is JSON text in a form and a JSON value in an API body."""
    value = params.get(name)
    if not is_form(params):
        return value
    try:
        return parse_data(str(value or ""))
    except InvalidJob as exc:
        raise InvalidInput(str(exc).replace("The data", what)) from None


def merge_patch_from(params) -> dict:
    """A JSON merge patch (RFC 7386) for jobs' data: a non-empty object, at most
    ``QUEUEWATCH_EDIT_MAX_PATCH_BYTES`` as compact JSON, whether typed into a form or sent to
    the API (a form's text is measured before it is parsed)."""
    bounds, too_big = edit_limits.bounds(), None
    typed = str(params.get("patch") or "") if is_form(params) else ""
    # A typed patch far too long is not even parsed (indentation may make one a few times its
    # compact size, which is what is bounded).
    if bounds.patch is not None and len(typed) > 4 * bounds.patch:
        too_big = edit_growth.patch_refusal(None, bounds, size=edit_growth.text_bytes(typed))
    else:
        patch = json_field(params, "patch", what=gettext("The patch"))
        too_big = edit_growth.patch_refusal(patch, bounds)
    if too_big is not None:
        raise InvalidInput(translate(too_big))
    if not isinstance(patch, dict) or not patch:
        raise InvalidInput(
            gettext(
                "The patch must be a non-empty JSON object (a JSON merge patch: keys to set, "
                'null to remove a key), e.g. {"email": "fixed@example.com"}.'
            )
        )
    return patch


@dataclass(frozen=True)
class BulkInput:
    """A bulk action: which action, on which jobs; once confirmed also why, how fast and
    (for retry) whether counters are reset. Previews need no reason."""

    action: str
    selection: Selection
    reason: str = ""
    rate: float | None = DEFAULT_RATE
    reset_counters: bool = True
    patch: dict | None = None  # edit-retry: the JSON merge patch for each job's stored data

    @classmethod
    def from_params(cls, params, *, confirming: bool) -> BulkInput:
        action = text(params, "action")
        return cls(
            action=action,
            selection=Selection.chosen_from(params),
            reason=reason_from(params, required=confirming),
            rate=rate_from(params.get("rate")),
            reset_counters=reset_counters_from(params),
            patch=merge_patch_from(params) if action == "edit-retry" else None,
        )
