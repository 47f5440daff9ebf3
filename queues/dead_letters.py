"""Application dead-letter queues: which queues are ones, and where their jobs came from.

BullMQ has no dead-letter queue of its own; applications move jobs that failed for good into
a queue of their own naming (``orders-dlq``). Two questions follow, answered here and nowhere
else: *is this queue a dead-letter queue?* (pages show its growth as "dead letters", offer
"redrive to source") and *which queue did this dead letter come from?* (the redrive target: from configuration only,
never from the job's data).

Both read the same rules: an explicit ``mapping`` (``{"graveyard": "orders"}``) and name
``patterns`` with one ``*`` (``*-dlq``: ``orders-dlq`` came from ``orders``). The dashboard
builds ``DeadLetterRules`` from its settings (``dashboard.connections.dead_letters``); no Django here.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

DEFAULT_DLQ_PATTERNS = ("*-dlq", "*.dlq", "*_dlq")


def is_dead_letter(
    name: str, *, patterns: Sequence[str] = DEFAULT_DLQ_PATTERNS, mapping: Mapping[str, str] | None = None
) -> bool:
    """Whether ``name`` is an application dead-letter queue: mapped explicitly, or matching a pattern."""
    return bool(mapping and name in mapping) or any(fnmatch.fnmatchcase(name, p) for p in patterns)


def dlq_source(
    *, dlq_name: str, patterns: Sequence[str] = DEFAULT_DLQ_PATTERNS, mapping: Mapping[str, str] | None = None
) -> str | None:
    """The source queue of a dead-letter queue, or ``None`` if it cannot be told.

    The operator's configuration decides, never the job: the explicit ``mapping``
    (``{"graveyard": "orders"}``) first, then a name pattern: ``orders-dlq`` with ``*-dlq``
    gives ``orders`` (the part ``*`` matched). Job data (a ``source`` field, say) is written by
    producers we do not control and must not choose where an action writes. A name with ``:``
    is never a queue. The redrive script also refuses a target queue that does not exist.
    """
    source = mapping.get(dlq_name) if mapping else None
    if source is None:
        for pattern in patterns:
            if pattern.count("*") == 1 and fnmatch.fnmatchcase(dlq_name, pattern):
                head, tail = pattern.split("*")
                source = dlq_name[len(head) : len(dlq_name) - len(tail)] or None
                if source:
                    break
    return source if source and ":" not in source else None


@dataclass(frozen=True)
class DeadLetterRules:
    """One deployment's rules, so callers cannot pass the patterns of one and the mapping of another."""

    patterns: tuple[str, ...] = DEFAULT_DLQ_PATTERNS
    mapping: Mapping[str, str] = field(default_factory=dict)

    def is_dead_letter(self, name: str) -> bool:
        return is_dead_letter(name, patterns=self.patterns, mapping=self.mapping)

    def source_of(self, name: str) -> str | None:
        return dlq_source(dlq_name=name, patterns=self.patterns, mapping=self.mapping)
