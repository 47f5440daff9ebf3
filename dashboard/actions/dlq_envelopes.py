"""The admin's ``set-dlq-envelope`` action: confirm (or correct) which field of a dead-letter
queue's jobs holds the original data, and which its id and source queue (registered in
``dashboard.actions.registry``, so roles, read-only mode, CSRF and the audit are the other
actions'). Where the setting is kept and read: ``dashboard.connections.dead_letters``; what the
redrive preview shows of it: ``redrive_sample``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.utils.translation import gettext as _

from dashboard.actions.inputs import ActionInput
from dashboard.connections import dead_letters
from dashboard.connections.registry import get_redactor
from dashboard.web.errors import InvalidInput
from queues import actions
from queues.dead_letters import Envelope
from queues.keys import QueueRef

FIELD_MAX = 200


def _field(params, name: str) -> str:
    value = str(params.get(name) or "").strip()
    if len(value) > FIELD_MAX:
        raise InvalidInput(_("A field name is at most %(n)d characters.") % {"n": FIELD_MAX})
    return value


@dataclass(frozen=True)
class EnvelopeInput(ActionInput):
    """``data_field`` empty: the dead letters' data is the original data (no envelope)."""

    data_field: str = ""
    id_field: str = ""
    source_field: str = ""

    @classmethod
    def fields_from(cls, params) -> dict:
        return {name: _field(params, name) for name in ("data_field", "id_field", "source_field")}

    def audit_details(self) -> dict:
        return {"data_field": self.data_field, "id_field": self.id_field, "source_field": self.source_field}


@dataclass
class EnvelopeResult:
    outcome: str
    message: str
    affected: int = 0
    audit: dict | None = None

    @property
    def ok(self) -> bool:
        return self.outcome == actions.DONE


def set_envelope(client, *, queue: QueueRef, given: EnvelopeInput, user=None) -> EnvelopeResult:
    """Store the admin's word. Writes nothing to the monitored Redis."""
    if not dead_letters.is_dead_letter_queue(queue.name):
        raise InvalidInput(_("'%(name)s' is not a dead-letter queue.") % {"name": queue.name})
    envelope = Envelope(given.data_field, given.id_field, given.source_field)
    before = dead_letters.confirm_envelope(queue.name, envelope, user=user)
    message = (
        _("Confirmed: a redrive copies the %(field)s field of each dead letter's data into the source queue.")
        % {"field": envelope.data_field}
        if envelope.unwraps
        else _("Confirmed: a redrive copies each dead letter's data as it is into the source queue.")
    )
    was = before.envelope.as_map_value() if before.envelope else None
    return EnvelopeResult(actions.DONE, message, 1, audit={"change": {"before": was, "after": envelope.as_map_value()}})


@dataclass(frozen=True)
class RedriveSample:
    """What the redrive preview shows of one sampled dead letter: what the source queue will
    receive (redacted JSON text) and, if its envelope says, the original job's id and queue."""

    job_id: str
    receives: str
    original_id: object = None
    original_source: object = None
    missing: bool = False  # the envelope's data field is absent: the task leaves it where it is


@dataclass(frozen=True)
class RedrivePlan:
    source: str | None
    setting: dead_letters.EnvelopeSetting
    detected: Envelope | None  # what the sample looks like, when nobody has said yet or it differs
    samples: list[RedriveSample]


def redrive_sample(queue: QueueRef, job_ids: list[str]) -> RedrivePlan:
    setting = dead_letters.envelope_for(queue.name)
    data = dead_letters.sample_data(queue, job_ids)
    detected = dead_letters.detected_envelope(data)
    envelope = setting.envelope or Envelope()
    redact = get_redactor().value
    samples = []
    for job_id, value in data:
        inner, original_id, original_source = envelope.open(value)
        missing = envelope.unwraps and not (isinstance(value, dict) and envelope.data_field in value)
        text = json.dumps(redact(inner), ensure_ascii=False, indent=1)[:2000]
        samples.append(RedriveSample(job_id, text, original_id, original_source, missing))
    return RedrivePlan(
        source=dead_letters.rules().source_of(queue.name),
        setting=setting,
        detected=detected if detected != setting.envelope else None,
        samples=samples[:1] if samples else [],
    )
