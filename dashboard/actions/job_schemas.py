"""A queue's optional JSON Schema for its jobs' data: where it is stored
(``QueueSchema`` rows), the input and runners of the admin's ``set-schema`` and
``remove-schema`` actions (registered in ``dashboard.actions.registry``, so roles, read-only
mode, CSRF and the audit with before/after are the other actions'), and ``schema_for``, which
every write of job data asks (add, duplicate, edit-and-retry, bulk edit-and-retry). What a
schema may be and what data passes it: ``queues.job_schema``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.utils import timezone
from django.utils.translation import gettext as _

from dashboard.actions.inputs import ActionInput, is_form
from dashboard.actions.models import QueueSchema
from dashboard.core.i18n import translate
from dashboard.web.errors import InvalidInput
from queues import actions, job_schema
from queues.edit_retry import diff_lines
from queues.keys import QueueRef


def stored(queue: QueueRef) -> QueueSchema | None:
    return QueueSchema.objects.filter(connection=queue.connection, prefix=queue.prefix, queue=queue.name).first()


def schema_for(queue: QueueRef) -> dict | None:
    """The schema the queue's job data must pass, or None (no schema: anything goes)."""
    row = stored(queue)
    return row.schema if row else None


def refused(exc) -> InvalidInput:
    """A domain refusal (``InvalidJob``) as a 400, with the schema's reasons as ``errors``."""
    reasons = getattr(exc, "reasons", None)
    details = {"errors": [translate(r) for r in reasons]} if reasons else {}
    return InvalidInput(translate(exc.args[0]), **details)


@dataclass(frozen=True)
class SchemaInput(ActionInput):
    """``schema``: JSON text (the settings page's textarea, or a string in the API) or, in the
    API, the schema itself as a JSON object."""

    schema: dict | None = None

    @classmethod
    def fields_from(cls, params) -> dict:
        value = params.get("schema")
        try:
            if is_form(params) or isinstance(value, str):
                if not str(value or "").strip():
                    raise InvalidInput(_('Paste a JSON Schema, e.g. {"type": "object", "required": ["id"]}.'))
                return {"schema": job_schema.parse_schema(str(value))}
            return {"schema": job_schema.check_schema(value)}
        except job_schema.SchemaProblem as exc:
            raise InvalidInput(translate(exc.args[0])) from None

    def audit_details(self) -> dict:
        return {"schema_bytes": len(job_schema.canonical(self.schema))}


NO_SCHEMA = "no_schema"  # remove-schema on a queue without one


@dataclass
class SchemaResult:
    outcome: str
    message: str
    affected: int = 0
    audit: dict | None = None

    @property
    def ok(self) -> bool:
        return self.outcome == actions.DONE


def _change(before: dict | None, after: dict | None) -> dict:
    pretty = lambda v: v if v is None else json.loads(json.dumps(v))  # noqa: E731 (a plain JSON copy)
    return {
        "change": {
            "what": "schema",
            "before": pretty(before),
            "after": pretty(after),
            "diff": diff_lines(before or {}, after or {})[:400],
        }
    }


def set_schema(client, *, queue: QueueRef, given: SchemaInput, user=None) -> SchemaResult:
    """Store (or replace) the queue's schema. Writes nothing to the monitored Redis."""
    row = stored(queue)
    before = row.schema if row else None
    QueueSchema.objects.update_or_create(
        connection=queue.connection,
        prefix=queue.prefix,
        queue=queue.name,
        defaults={
            "schema": given.schema,
            "updated_at": timezone.now(),
            "updated_by": user if getattr(user, "pk", None) else None,
            "updated_by_name": getattr(user, "username", "") or "",
        },
    )
    message = _("Job schema replaced.") if row else _("Job schema set: new jobs' data must pass it.")
    return SchemaResult(actions.DONE, message, 1, audit=_change(before, given.schema))


def remove_schema(client, *, queue: QueueRef, given: ActionInput, user=None) -> SchemaResult:
    row = stored(queue)
    if row is None:  # refused, not "done": the admin meant to remove something that is not there
        return SchemaResult(NO_SCHEMA, _("This queue has no job schema: there is nothing to remove."), 0)
    before = row.schema
    row.delete()
    return SchemaResult(
        actions.DONE, _("Job schema removed: any JSON data is accepted again."), 1, audit=_change(before, None)
    )
