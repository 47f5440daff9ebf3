"""What a check returns (``CheckResult``), its severities and statuses, the thresholds the
checks judge by, and the worst-first order results are shown in."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .catalogue import CHECKS, Check

SEVERITIES = ("info", "warning", "critical")
SEVERITY_RANK = {"info": 1, "warning": 2, "critical": 3}
PASS, FAIL, UNKNOWN = "pass", "fail", "unknown"
STATUS_RANK = {FAIL: 0, UNKNOWN: 1, PASS: 2}


@dataclass
class Thresholds:
    memory_warning: float = 0.80  # used_memory / maxmemory
    memory_critical: float = 0.95
    finished_count: int = 10_000  # completed or failed set at least this large …
    finished_age_ms: int = 7 * 24 * 3600 * 1000  # … and its oldest job at least this old
    stalls_15m: int = 2  # stalls in the last 15 minutes that count as "repeated"
    idle_ms: int = 5 * 60 * 1000  # oldest waiting job this old with no activity: no workers
    long_transaction_ms: int = 5 * 60 * 1000  # PostgreSQL: a transaction open this long
    connections_warning: float = 0.80  # PostgreSQL: client connections / usable max_connections
    connections_critical: float = 0.95
    dead_rows_ratio: float = 0.20  # PostgreSQL: dead / live job rows …
    dead_rows_min: int = 50_000  # … once at least this many rows are dead


DEFAULT_THRESHOLDS = Thresholds()


@dataclass
class CheckResult:
    kind: str
    status: str  # pass / fail / unknown
    connection: str
    summary: str  # what was found, in plain words
    severity: str = ""  # defaults to the check's severity
    prefix: str = ""
    queue: str = ""
    details: dict = field(default_factory=dict)
    # The words every result of a kind shares (title, explanation, fix) are the catalogue's
    # (``check``), not fields: a stored report (orjson writes a result's fields) stays without
    # them, which at 10,000 queues were 39 of its 67 MB.

    def __post_init__(self):
        check = CHECKS.get(self.kind)
        if check is None:
            raise ValueError(
                f"unknown health check kind {self.kind!r}: a source kind declares its own with register_checks"
            )
        self.severity = self.severity or check.severity
        assert self.severity in SEVERITIES and self.status in STATUS_RANK

    @property
    def check(self) -> Check:
        return CHECKS[self.kind]

    @property
    def scope(self) -> str:
        return self.check.scope

    @property
    def title(self) -> str:
        return self.check.title

    @property
    def explanation(self) -> str:
        return self.check.explanation

    @property
    def fix(self) -> str:
        return self.check.fix

    @property
    def failed(self) -> bool:
        return self.status == FAIL

    def fails_at(self, severity: str) -> bool:
        """True when this result failed with at least ``severity``."""
        return self.failed and SEVERITY_RANK[self.severity] >= SEVERITY_RANK[severity]

    def as_dict(self) -> dict:
        return {
            "kind": self.kind,
            "scope": self.scope,
            "status": self.status,
            "severity": self.severity,
            "connection": self.connection,
            "prefix": self.prefix or None,
            "queue": self.queue or None,
            "title": self.title,
            "summary": self.summary,
            "explanation": self.explanation,
            "fix": self.fix,
            "details": self.details,
        }


def sort_key(r: CheckResult) -> tuple:
    """Worst first: failures by severity, then unknowns, then passes."""
    return (STATUS_RANK[r.status], -SEVERITY_RANK[r.severity], r.scope != "connection", r.prefix, r.queue, r.kind)


def worst_first(results: Iterable[CheckResult]) -> list[CheckResult]:
    return sorted(results, key=sort_key)
