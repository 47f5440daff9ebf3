"""Application dead-letter queues: which queues are ones, and where their jobs came from.

BullMQ has no dead-letter queue of its own; applications move jobs that failed for good into
a queue of their own naming (``orders-dlq``). Two questions follow, answered here and nowhere
else: *is this queue a dead-letter queue?* (pages show its growth as "dead letters", offer
"redrive to source") and *which queue did this dead letter come from?* (the redrive target).

Both read the same rules: an explicit ``mapping`` (``{"graveyard": "orders"}``) and name
``patterns`` with one ``*`` (``*-dlq``: ``orders-dlq`` came from ``orders``). The dashboard
builds ``DeadLetterRules`` from its settings (``dashboard.dead_letters``); no Django here.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

DEFAULT_DLQ_PATTERNS = ("*-dlq", "*.dlq", "*_dlq")
SOURCE_FIELDS = ("source", "sourceQueue", "source_queue", "queue")


def is_dead_letter(name: str, *, patterns: Sequence[str] = DEFAULT_DLQ_PATTERNS,
                   mapping: Mapping[str, str] | None = None) -> bool:
    """Whether ``name`` is an application dead-letter queue: mapped explicitly, or matching a pattern."""
    return bool(mapping and name in mapping) or any(fnmatch.fnmatchcase(name, p) for p in patterns)


def dlq_source(*, dlq_name: str, patterns: Sequence[str] = DEFAULT_DLQ_PATTERNS,
               mapping: Mapping[str, str] | None = None, job_data: Any = None,
               source_fields: Sequence[str] = SOURCE_FIELDS) -> str | None:
    """The source queue of a dead-letter job, or ``None`` if it cannot be told.

    Precedence: a data field naming the source (``source`` etc., the most specific: one DLQ
    may collect several sources), then the explicit ``mapping`` (``{"graveyard": "orders"}``),
    then a name pattern: ``orders-dlq`` with ``*-dlq`` gives ``orders`` (the part ``*`` matched).
    """
    if isinstance(job_data, dict):
        for name in source_fields:
            value = job_data.get(name)
            if isinstance(value, str) and value.strip() and ":" not in value:
                return value.strip()
    if mapping and dlq_name in mapping:
        return mapping[dlq_name]
    for pattern in patterns:
        if pattern.count("*") == 1 and fnmatch.fnmatchcase(dlq_name, pattern):
            head, tail = pattern.split("*")
            source = dlq_name[len(head): len(dlq_name) - len(tail)]
            if source:
                return source
    return None


@dataclass(frozen=True)
class DeadLetterRules:
    """One deployment's rules, so callers cannot pass the patterns of one and the mapping of another."""

    patterns: tuple[str, ...] = DEFAULT_DLQ_PATTERNS
    mapping: Mapping[str, str] = field(default_factory=dict)

    def is_dead_letter(self, name: str) -> bool:
        return is_dead_letter(name, patterns=self.patterns, mapping=self.mapping)

    def source_of(self, name: str, job_data: Any = None) -> str | None:
        return dlq_source(dlq_name=name, patterns=self.patterns, mapping=self.mapping, job_data=job_data)
