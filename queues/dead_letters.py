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
from typing import Any

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
    envelopes: Mapping[str, Envelope] = field(default_factory=dict)  # dlq name -> its confirmed envelope

    def is_dead_letter(self, name: str) -> bool:
        return is_dead_letter(name, patterns=self.patterns, mapping=self.mapping)

    def source_of(self, name: str) -> str | None:
        return dlq_source(dlq_name=name, patterns=self.patterns, mapping=self.mapping)

    def envelope_of(self, name: str) -> Envelope | None:
        """The envelope configured or confirmed for ``name``; ``None``: nobody has said yet."""
        return self.envelopes.get(name)


# -- envelopes -------------------------------------------------------------------------------
# Applications often dead-letter a job as an *envelope* around its data
# (``{"source": "payments", "original_id": "42", "data": {...}, "failedReason": "..."}``): a
# redrive that copies the whole envelope gives the source's workers data they cannot read. Which
# field holds the original data is the operator's to say (``QUEUEWATCH_DLQ_MAP``, or an admin's
# confirmation of what ``detect_envelope`` proposes); the id and source fields are only shown.

DATA_FIELDS = ("data", "payload", "jobData", "job_data")
ID_FIELDS = ("original_id", "originalId", "jobId", "job_id")
SOURCE_FIELDS = ("source", "queue", "sourceQueue", "source_queue")
NO_ENVELOPE = "-"  # in QUEUEWATCH_DLQ_MAP: this queue's dead letters are the original data itself


@dataclass(frozen=True)
class Envelope:
    """Where a dead letter keeps the original job's data (and, if it says, its id and queue).
    ``data_field`` empty: the dead letter's data *is* the original data (no envelope)."""

    data_field: str = ""
    id_field: str = ""
    source_field: str = ""

    @property
    def unwraps(self) -> bool:
        return bool(self.data_field)

    def open(self, data: Any) -> tuple[Any, Any, Any]:
        """(original data, original id, source queue) of one dead letter's data; the whole data
        and ``None`` for what this envelope does not name or the data does not have."""
        if not isinstance(data, dict):
            return data, None, None
        inner = data.get(self.data_field, data) if self.data_field else data
        original_id = data.get(self.id_field) if self.id_field else None
        return inner, original_id, data.get(self.source_field) if self.source_field else None

    def as_map_value(self) -> str:
        """The part after the source queue in a ``QUEUEWATCH_DLQ_MAP`` entry."""
        parts = [self.data_field or NO_ENVELOPE, self.id_field, self.source_field]
        while parts and not parts[-1]:
            parts.pop()
        return ":".join(parts)


def parse_map_value(value: str) -> tuple[str, Envelope | None]:
    """A ``QUEUEWATCH_DLQ_MAP`` value: ``source`` or ``source:data_field[:id_field[:source_field]]``
    (``source:-``: no envelope). Returns (source queue, envelope or ``None`` when not said)."""
    source, sep, rest = value.partition(":")
    if not sep:
        return source.strip(), None
    data_field, id_field, source_field = ([p.strip() for p in rest.split(":")] + ["", "", ""])[:3]
    return source.strip(), Envelope("" if data_field == NO_ENVELOPE else data_field, id_field, source_field)


def detect_envelope(samples: Sequence[Any]) -> Envelope | None:
    """The envelope every sampled dead letter's data has: an object with a data field
    (``DATA_FIELDS``) beside an original id or source field (``ID_FIELDS``, ``SOURCE_FIELDS``),
    the same fields in each. ``None`` when there is no sample or no such common shape."""
    if not samples or not all(isinstance(s, dict) for s in samples):
        return None

    def common(names: Sequence[str]) -> str:
        return next((n for n in names if all(n in s for s in samples)), "")

    data_field, id_field, source_field = common(DATA_FIELDS), common(ID_FIELDS), common(SOURCE_FIELDS)
    if not data_field or not (id_field or source_field):
        return None
    return Envelope(data_field, id_field, source_field)
