"""Failed jobs grouped by a normalised failure fingerprint.

"Connection to 10.0.0.7:5432 timed out after 3001 ms" and "... 10.0.0.9:5432 ... 2999 ms" are
one problem. ``fingerprint`` replaces the parts that vary between occurrences (numbers, ids,
UUIDs, hex, addresses, e-mails, URLs' query strings, quoted values, dates) with placeholders and
hashes the result; a Redis node counts its newest failed jobs per fingerprint with
``queues.redis.error_groups.error_groups``.

Only the first line of a failure reason is used: it is the error message; further lines are
stack frames or wrapped output that would split one error into many groups."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from .text import to_text

# Order matters: the specific shapes go first, so a UUID is not eaten as hex runs and numbers.
_RULES: tuple[tuple[re.Pattern, str], ...] = tuple(
    (re.compile(p, re.IGNORECASE), r)
    for p, r in (
        (r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "<uuid>"),
        (r"\b\d{4}-\d{2}-\d{2}[t ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?", "<time>"),
        (r"\b\d{4}-\d{2}-\d{2}\b", "<date>"),
        (r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b", "<email>"),
        (r"\b[a-z][a-z0-9+.-]*://[^\s\"'<>]+", "<url>"),
        (r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b", "<ip>"),
        (r"\[?\b(?:[0-9a-f]{1,4}:){2,7}[0-9a-f]{1,4}\b\]?(?::\d+)?", "<ip>"),
        (r"\b(?:[0-9a-f]{2}:){5}[0-9a-f]{2}\b", "<mac>"),
        (r"\b0x[0-9a-f]+\b", "<hex>"),
        (r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b", "<hex>"),
        (r"\"(?:[^\"\\]|\\.)*\"", '"<value>"'),
        (r"'(?:[^'\\]|\\.)*'", "'<value>'"),
        (r"`[^`]*`", "`<value>`"),
        (r"\b[a-z]+_[a-z0-9]*\d[a-z0-9]*\b", "<id>"),  # prefixed ids: cus_8f3K2, ord_123
        (r"(?<![a-z])[-+]?\d+(?:[.,]\d+)*(?![a-z])", "<n>"),
        (r"\b(?=[a-z0-9]*\d)[a-z0-9]{12,}\b", "<id>"),  # long mixed tokens (ids, hashes, keys)
    )
)
_SPACE = re.compile(r"\s+")


def normalize(reason: str) -> str:
    """The first line of a failure reason with its varying parts replaced by placeholders."""
    line = to_text(reason).strip().split("\n", 1)[0][:2000]
    for pattern, replacement in _RULES:
        line = pattern.sub(replacement, line)
    return _SPACE.sub(" ", line).strip()


def fingerprint(reason: str) -> str:
    """A short stable id of the normalised reason (12 hex characters)."""
    return hashlib.sha1(normalize(reason).encode("utf-8")).hexdigest()[:12]


@dataclass
class ErrorGroup:
    fingerprint: str
    normalized: str
    count: int
    first_seen_ms: int | None
    last_seen_ms: int | None
    sample_job_id: str
    sample_stack: str  # the last stack trace of the newest job in the group ("" if none)
    sample_reason: str = ""  # the newest job's reason, first line (what error triage classifies)
    # Failures in the last 5 minutes and in the 15 minutes before (error triage's retry outlook)
    last_5m: int = 0
    prior_15m: int = 0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


class ErrorGroups(list):
    """The groups (a list, biggest first) plus how much of the failed set was read."""

    def __init__(self, groups: list[ErrorGroup], *, scanned: int, total: int):
        super().__init__(groups)
        self.scanned = scanned  # failed jobs examined (the newest ones)
        self.total = total  # failed jobs in the set

    @property
    def groups(self) -> list[ErrorGroup]:
        return list(self)

    @property
    def complete(self) -> bool:
        return self.scanned >= self.total
