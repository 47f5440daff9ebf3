"""The deployment's dead-letter settings, in one place: which queues are dead-letter queues and
where their jobs came from (``QUEUEWATCH_DLQ_PATTERNS``, ``QUEUEWATCH_DLQ_MAP``), and what a
dead letter's data looks like (its envelope: ``QUEUEWATCH_DLQ_MAP``'s ``dlq=source:data_field``
as the default, an admin's confirmation, a ``DeadLetterEnvelope`` row, over it). The rules
themselves live in ``queues.dead_letters``. Settings are read on every call, so tests that
override them see their values; ``rules()`` never reads the database (live code asks it every
tick), ``envelope_for`` does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone

from dashboard.connections.models import DeadLetterEnvelope
from dashboard.connections.registry import get_registry
from queues.dead_letters import DeadLetterRules, Envelope, detect_envelope, parse_map_value
from queues.keys import QueueRef

SAMPLE_SIZE = 5  # dead letters read to recognise an envelope


def rules() -> DeadLetterRules:
    mapping, envelopes = {}, {}
    for dlq, value in dict(settings.QUEUEWATCH_DLQ_MAP).items():
        source, envelope = parse_map_value(str(value))
        mapping[dlq] = source
        if envelope is not None:
            envelopes[dlq] = envelope
    return DeadLetterRules(patterns=tuple(settings.QUEUEWATCH_DLQ_PATTERNS), mapping=mapping, envelopes=envelopes)


def is_dead_letter_queue(name: str) -> bool:
    return rules().is_dead_letter(name)


@dataclass(frozen=True)
class EnvelopeSetting:
    """A dead-letter queue's envelope and who said so: ``"admin"`` (a confirmation), ``"map"``
    (``QUEUEWATCH_DLQ_MAP``) or ``""`` (nobody: the redrive copies the data as it is)."""

    envelope: Envelope | None
    said_by: str = ""
    confirmed_by: str = ""

    @property
    def payload_field(self) -> str | None:
        """The field a redrive unwraps, or ``None``."""
        return self.envelope.data_field if self.envelope and self.envelope.unwraps else None


def envelope_for(name: str) -> EnvelopeSetting:
    row = DeadLetterEnvelope.objects.filter(queue=name).select_related("confirmed_by").first()
    if row is not None:
        who = row.confirmed_by.get_username() if row.confirmed_by else ""
        return EnvelopeSetting(Envelope(row.data_field, row.id_field, row.source_field), "admin", who)
    configured = rules().envelope_of(name)
    return EnvelopeSetting(configured, "map") if configured is not None else EnvelopeSetting(None)


def confirm_envelope(name: str, envelope: Envelope, *, user=None) -> EnvelopeSetting:
    """An admin's word on the envelope of ``name``; it overrides ``QUEUEWATCH_DLQ_MAP``."""
    before = envelope_for(name)
    DeadLetterEnvelope.objects.update_or_create(
        queue=name,
        defaults={
            "data_field": envelope.data_field,
            "id_field": envelope.id_field,
            "source_field": envelope.source_field,
            "confirmed_at": timezone.now(),
            "confirmed_by": user if getattr(user, "pk", None) else None,
        },
    )
    return before


def sample_data(queue: QueueRef, job_ids: list[str]) -> list[tuple[str, object]]:
    """(id, parsed data) of the given dead letters (data that is not JSON as its text)."""
    jobs = get_registry().jobs(queue.connection)
    out: list[tuple[str, object]] = []
    for job_id in job_ids[:SAMPLE_SIZE]:
        raw = jobs.stored_data(queue, job_id)
        if raw is None:
            continue
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        try:
            out.append((job_id, json.loads(text)))
        except ValueError:
            out.append((job_id, text))
    return out


def detected_envelope(samples: list[tuple[str, object]]) -> Envelope | None:
    return detect_envelope([data for _id, data in samples])
