"""Error triage: is a failure worth retrying?

Each error group gets a class from its newest failure reason (first line, as grouped):

- *transient* — timeouts, connection resets, HTTP 429/502/503/504, lock contention: the cause
  passes, retrying helps once it has;
- *permanent* — ``UnrecoverableError``, validation errors, other HTTP 4xx, "not found",
  programming errors: the same input fails again, retrying wastes attempts;
- *unknown* — nothing matched.

Admins' rules (a regular expression and a class) are tried first, in their order, then the
built-in patterns. Every match runs bounded (``queues.bounded_regex``: the ``regex`` module, a
timeout) on at most ``MAX_INPUT`` characters, so a hostile pattern (``(x+x+)+y``) cannot hang a
page: a rule that times out is skipped for that reason, and ``validate_pattern`` refuses one
that times out on a pathological probe. Framework-free (no Django), no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import regex

from . import bounded_regex

TRANSIENT, PERMANENT, UNKNOWN = "transient", "permanent", "unknown"
CLASSES = (TRANSIENT, PERMANENT, UNKNOWN)
ADVICE = {
    TRANSIENT: "Transient: the cause usually passes (timeouts, resets, rate limits, lock contention). "
    "Retry once it has.",
    PERMANENT: "Permanent: the same input fails again (validation, 4xx, not found, UnrecoverableError). "
    "Fix the data or the code; retrying wastes attempts.",
    UNKNOWN: "Unknown: no built-in pattern or rule matched. Read the sample before retrying.",
}

MAX_PATTERN = 300  # characters in a user rule's pattern
MAX_INPUT = bounded_regex.PROBE_LENGTH  # characters of a reason a pattern is matched against (the grouped first line)

_FLAGS = regex.IGNORECASE
_STATUS = r"(?:status(?:\s*code)?|http(?:/\d(?:\.\d)?)?|code|response)\s*[:=]?\s*"

# (class, what it is, pattern), tried in this order: the first match decides. Status codes and
# UnrecoverableError first, as they are the most specific words in a message.
BUILT_IN: tuple[tuple[str, str, str], ...] = (
    (PERMANENT, "UnrecoverableError", r"\bUnrecoverableError\b"),
    (TRANSIENT, "HTTP 429 / 502 / 503 / 504", _STATUS + r"(?:429|50[234])\b"),
    (
        TRANSIENT,
        "rate limited or unavailable",
        r"too many requests|rate.?limit(?:ed|s)?\b|service unavailable|"
        r"bad gateway|gateway time-?out|temporarily unavailable",
    ),
    (PERMANENT, "HTTP 4xx", _STATUS + r"4(?!29)\d\d\b"),
    (TRANSIENT, "timeout", r"\btime[sd]?\s?out\b|\btimeout\b|ETIMEDOUT|ESOCKETTIMEDOUT|deadline exceeded"),
    (
        TRANSIENT,
        "connection reset or refused",
        r"ECONNRESET|ECONNREFUSED|ECONNABORTED|EPIPE|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN|socket hang up|"
        r"connection (?:was )?(?:reset|refused|closed|aborted|lost)|broken pipe",
    ),
    (
        TRANSIENT,
        "lock contention",
        r"deadlock|lock wait timeout|could not (?:obtain|acquire) (?:a )?lock|lock (?:is )?(?:already )?(?:held|taken)|"
        r"database is locked|SQLITE_BUSY|serialization failure|LockError|Missing lock",
    ),
    (PERMANENT, "validation", r"validation|\binvalid\b|is required\b|must be\b|malformed|unprocessable"),
    (PERMANENT, "client error", r"bad request|unauthori[sz]ed|forbidden|permission denied|access denied"),
    (PERMANENT, "not found", r"not found|does not exist|no such\b|unknown (?:user|customer|account|id)"),
    (
        PERMANENT,
        "programming error",
        r"\b(?:TypeError|ReferenceError|SyntaxError)\b|is not a function|"
        r"cannot read propert(?:y|ies) of (?:undefined|null)",
    ),
)


@dataclass(frozen=True)
class UserRule:
    pattern: str
    error_class: str
    label: str = ""  # shown as the reason of the class, e.g. "rule 3: payments gateway"


@dataclass(frozen=True)
class Triage:
    error_class: str
    matched_by: str  # "built-in: timeout", "rule: …", or "" for unknown

    @property
    def advice(self) -> str:
        return ADVICE[self.error_class]


def _search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches; False when it times out or does not compile."""
    try:
        return bounded_regex.search(pattern, text[:MAX_INPUT], flags=_FLAGS)
    except (regex.error, TimeoutError):
        return False


def first_line(reason: str) -> str:
    return (reason or "").strip().split("\n", 1)[0][:MAX_INPUT]


def classify(reason: str, *, user_rules=()) -> Triage:
    """The class of a failure reason: the first user rule that matches, else the first built-in."""
    line = first_line(reason)
    for rule in user_rules:
        if rule.error_class in CLASSES and _search(rule.pattern, line):
            return Triage(rule.error_class, f"rule: {rule.label or rule.pattern}")
    for error_class, what, pattern in BUILT_IN:
        if _search(pattern, line):
            return Triage(error_class, f"built-in: {what}")
    return Triage(UNKNOWN, "")


def validate_pattern(pattern: str) -> str | None:
    """What is wrong with a user rule's pattern, or None. Refuses empty, too long, invalid, and
    patterns that take longer than the timeout on a pathological probe (``queues.bounded_regex``)."""
    if not pattern or not pattern.strip():
        return "Enter a regular expression, e.g. payment gateway .* declined."
    return bounded_regex.problem(pattern, flags=_FLAGS, max_length=MAX_PATTERN)


@dataclass(frozen=True)
class RetryOutlook:
    """Whether retrying a group now is likely to help: its failure rate over the last 5 minutes
    is below half its rate over the 15 minutes before (the cause is passing)."""

    recent_per_min: float  # failures per minute, last 5 minutes
    before_per_min: float  # failures per minute, the 15 minutes before

    @property
    def likely_to_help(self) -> bool:
        return self.recent_per_min < self.before_per_min / 2

    @property
    def quiet(self) -> bool:
        return self.recent_per_min == 0 and self.before_per_min == 0


def retry_outlook(*, last_5m: int, prior_15m: int) -> RetryOutlook:
    return RetryOutlook(recent_per_min=last_5m / 5, before_per_min=prior_15m / 15)
