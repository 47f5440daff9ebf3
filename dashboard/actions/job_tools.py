"""The job tools (change priority, change delay, move to failed) and the release of a
deduplication key: their inputs, read from a form's ``QueryDict`` or a JSON object like every
action input (``dashboard.actions.inputs``), and their runners, thin adapters over the
connection's ``job_tools`` and ``dedup`` facets (``queues.job_tools``, ``queues.dedup``).
Registered in ``dashboard.actions.registry``, so roles, read-only mode, CSRF and the audit come
from there like everywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext as _

from dashboard.actions.inputs import ActionInput, ReasonedInput, text
from dashboard.actions.runners import QueueActionResult
from dashboard.connections.registry import get_registry
from dashboard.core.i18n import translate
from dashboard.web.errors import InvalidInput
from queues import job_tools
from queues.errors import QueueNotFound
from queues.keys import QueueRef
from queues.sources.facets import dedup_of, job_tools_of
from queues.states import state_allows

# The delay's units a form offers, in milliseconds (the API's default unit is the millisecond).
UNITS = {"ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def _whole(params, name: str) -> int:
    value = params.get(name)
    if isinstance(value, bool) or value in (None, ""):
        raise InvalidInput(_("'%(name)s' must be a whole number.") % {"name": name})
    try:
        return int(str(value).strip())
    except ValueError:
        raise InvalidInput(_("'%(name)s' must be a whole number.") % {"name": name}) from None


@dataclass(frozen=True)
class PriorityInput(ActionInput):
    priority: int = 0

    @classmethod
    def fields_from(cls, params) -> dict:
        try:
            return {"priority": job_tools.check_priority(params.get("priority"))}
        except ValueError as exc:
            raise InvalidInput(translate(exc.args[0])) from None

    def audit_details(self) -> dict:
        return {"priority": self.priority}


@dataclass(frozen=True)
class DelayInput(ActionInput):
    """``delay`` (a whole number) in ``unit`` (``ms`` unless told: s, min, h, d) from now."""

    delay_ms: int = 0

    @classmethod
    def fields_from(cls, params) -> dict:
        unit = text(params, "unit") or "ms"
        if unit not in UNITS:
            raise InvalidInput(_("The unit must be one of: %(units)s.") % {"units": ", ".join(UNITS)})
        try:
            return {"delay_ms": job_tools.check_delay(_whole(params, "delay") * UNITS[unit])}
        except ValueError as exc:
            raise InvalidInput(translate(exc.args[0])) from None

    def audit_details(self) -> dict:
        return {"delay_ms": self.delay_ms}


class FailInput(ReasonedInput):
    """The reason is required: it becomes the job's ``failedReason`` (and the audit row's)."""


@dataclass(frozen=True)
class ReleaseDedupInput(ReasonedInput):
    dedup_id: str = ""
    owner: str = ""

    @classmethod
    def fields_from(cls, params) -> dict:
        dedup_id, owner = text(params, "dedup_id"), text(params, "owner")
        if not dedup_id or not owner:
            raise InvalidInput(
                _("Name the deduplication id ('dedup_id') and the job that holds it ('owner') to release it.")
            )
        return {"dedup_id": dedup_id, "owner": owner}

    def audit_details(self) -> dict:
        return {"dedup_id": self.dedup_id, "job_id": self.owner}


# --- runners ----------------------------------------------------------------------------------


def change_priority(source, *, queue: QueueRef, job_id: str, given: PriorityInput):
    return job_tools_of(source).change_priority(queue, job_id=job_id, priority=given.priority)


def change_delay(source, *, queue: QueueRef, job_id: str, given: DelayInput):
    return job_tools_of(source).change_delay(queue, job_id=job_id, delay_ms=given.delay_ms)


def move_to_failed(source, *, queue: QueueRef, job_id: str, given: FailInput):
    return job_tools_of(source).move_to_failed(queue, job_id=job_id, reason=given.reason)


def release_dedup(source, *, queue: QueueRef, given: ReleaseDedupInput) -> QueueActionResult:
    result = dedup_of(source).release(queue, dedup_id=given.dedup_id, owner=given.owner)
    return QueueActionResult(result.outcome, result.message, int(result.ok))


# --- where they are offered -------------------------------------------------------------------


def offers_tools(queue: QueueRef) -> bool:
    """Whether the queue's connection has built the job tools (PostgreSQL and Cluster: not yet)."""
    try:
        return get_registry().offers(queue.connection, "job_tools")
    except QueueNotFound:  # a connection no longer configured: nothing to offer
        return False


def offered_for(operation: str):
    """Offered on a job page when the job's state allows ``operation`` and the connection has
    built the tools."""

    def offered(where) -> bool:
        return state_allows(getattr(where.job, "state", ""), operation) and offers_tools(where.queue)

    return offered
