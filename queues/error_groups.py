"""Failed jobs grouped by a normalised failure fingerprint.

"Connection to 10.0.0.7:5432 timed out after 3001 ms" and "... 10.0.0.9:5432 ... 2999 ms" are
one problem. ``fingerprint`` replaces the parts that vary between occurrences (numbers, ids,
UUIDs, hex, addresses, e-mails, URLs' query strings, quoted values, dates) with placeholders and
hashes the result; a Redis node counts its newest failed jobs per fingerprint with
``queues.redis.error_groups.error_groups``. A quoted word that names something (a key, a field,
a template: ``KeyError: 'customer'``) is kept: it is what tells one error from another.

Only the first line of a failure reason is used: it is the error message; further lines are
stack frames or wrapped output that would split one error into many groups."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from .redact import Redactor
from .text import to_text

# A quoted name (letters, "_", ".", "-"; no digits, spaces or placeholders) is kept; any other
# quoted text is a value that varies between occurrences.
_NAME = re.compile(r"[a-z_][a-z_.-]{0,63}", re.IGNORECASE)
_QUOTED = "<quoted>"  # the replacement marker of the quote rules (see _quoted_value)

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
        (r"\"(?:[^\"\\]|\\.)*\"", _QUOTED),
        (r"'(?:[^'\\]|\\.)*'", _QUOTED),
        (r"`[^`]*`", _QUOTED),
        (r"\b[a-z]+_[a-z0-9]*\d[a-z0-9]*\b", "<id>"),  # prefixed ids: cus_8f3K2, ord_123
        (r"(?<![a-z])[-+]?\d+(?:[.,]\d+)*(?![a-z])", "<n>"),
        (r"\b(?=[a-z0-9]*\d)[a-z0-9]{12,}\b", "<id>"),  # long mixed tokens (ids, hashes, keys)
    )
)
_SPACE = re.compile(r"\s+")


def _quoted_value(match: re.Match, *, keep_names: bool) -> str:
    text = match.group(0)
    mark, inner = text[0], text[1:-1]
    return text if keep_names and _NAME.fullmatch(inner) else f"{mark}<value>{mark}"


def _normalize(reason: str, *, keep_names: bool) -> str:
    line = to_text(reason).strip().split("\n", 1)[0][:2000]
    for pattern, replacement in _RULES:
        if replacement == _QUOTED:
            line = pattern.sub(lambda m: _quoted_value(m, keep_names=keep_names), line)
        else:
            line = pattern.sub(replacement, line)
    return _SPACE.sub(" ", line).strip()


def normalize(reason: str) -> str:
    """The first line of a failure reason with its varying parts replaced by placeholders."""
    return _normalize(reason, keep_names=True)


def _hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


def fingerprint(reason: str) -> str:
    """A short stable id of the normalised reason (12 hex characters). Salted ("2") so that it
    never equals the id an older Queuewatch gave another group (see ``matches_fingerprint``)."""
    return _hash("2\n" + normalize(reason))


def _legacy_fingerprint(reason: str) -> str:
    # Before quoted names were kept every quoted part was a value; bulk tasks store the group id
    # they were started with (BulkTask.selection), and links carry it.
    return _hash(_normalize(reason, keep_names=False))


def matches_fingerprint(reason: str, wanted: str) -> bool:
    """Whether ``reason`` is in error group ``wanted``: a current id, or one an older version
    gave (a bulk task resumed after an upgrade still sweeps the group it was started on)."""
    return wanted in (fingerprint(reason), _legacy_fingerprint(reason))


def headline(reason: str, stack: str) -> str:
    """What a group is called: its normalised reason, or the last line of its stack trace when
    that says more. Python's ``str(KeyError('customer'))`` is ``'customer'`` while its traceback
    ends ``KeyError: 'customer'``; a failure without a reason has only its stack trace."""
    first = to_text(reason).strip().split("\n", 1)[0]
    last = next((line.strip() for line in reversed(to_text(stack).splitlines()) if line.strip()), "")
    if last and (not first or last.endswith(": " + first)):
        return normalize(last)
    return normalize(reason)


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

    def attach_stack(self, stack: str) -> None:
        """The sample's stack trace, which may name the error better than its reason."""
        self.sample_stack = stack
        self.normalized = headline(self.sample_reason, stack)

    def redact(self, redactor: Redactor) -> None:
        """Redact what the group shows (its sample reason and stack) and name it again from
        them. Called after grouping: the fingerprint stays that of the stored reason, which is
        what a bulk action "by fingerprint" recomputes from each job, so the group and the
        action keep agreeing. The name is normalised from the redacted sample, not redacted
        after normalising: normalising first can cut a secret from what marks it (a bearer
        token's head becomes ``<id>``, and the rest no longer follows ``Bearer``)."""
        self.sample_reason = redactor.text(self.sample_reason)
        self.sample_stack = redactor.text(self.sample_stack)
        self.normalized = headline(self.sample_reason, self.sample_stack)

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

    def redacted(self, redactor: Redactor) -> ErrorGroups:
        for g in self:
            g.redact(redactor)
        return self
