"""The deployment's dead-letter rules (``QUEUEWATCH_DLQ_PATTERNS``, ``QUEUEWATCH_DLQ_MAP``) handed
to ``queues.dead_letters``, where the rules themselves live. Read on every call, so tests that
override settings see their values."""

from __future__ import annotations

from django.conf import settings

from queues.dead_letters import DeadLetterRules


def rules() -> DeadLetterRules:
    return DeadLetterRules(patterns=tuple(settings.QUEUEWATCH_DLQ_PATTERNS), mapping=dict(settings.QUEUEWATCH_DLQ_MAP))


def is_dead_letter_queue(name: str) -> bool:
    return rules().is_dead_letter(name)
