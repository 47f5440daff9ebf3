"""Jobs as every source kind returns them: light summaries for lists, full details for the job
page, and the parsing of a stored job's fields into them.

Job hashes are written by other programs and may be malformed: missing fields, non-JSON
``data``/``opts``, binary bytes, huge payloads. Every parse here degrades to showing the raw
text rather than raising. A Redis node reads them with ``queues.redis.jobs``."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field, replace
from typing import Any

from .keys import QueueRef
from .messages import _
from .redact import Redactor
from .safe_json import parse_json
from .stalls import STALLED_LIMIT_REASON
from .text import finite, first_line, to_int, to_ms, to_text

log = logging.getLogger(__name__)

# Fields a list row needs. Deliberately excludes data, returnvalue, stacktrace and progress
# (which may be megabytes); failedReason is included but only its first line is kept.
LOG_TAIL = 500  # log lines shown on a job page (the newest)
LIST_CAP = 1000  # children listed per kind on the job page

SUMMARY_FIELDS = (
    "name",
    "timestamp",
    "processedOn",
    "finishedOn",
    "atm",
    "attemptsMade",
    "ats",
    "stc",
    "opts",
    "delay",
    "priority",
    "failedReason",
    "rjk",
    "deid",
    "parentKey",
    "defa",
)


@dataclass
class JobSummary:
    id: str
    exists: bool
    name: str = ""
    timestamp: int | None = None
    processed_on: int | None = None
    finished_on: int | None = None
    attempts_made: int = 0
    attempts_started: int = 0
    attempts_allowed: int = 1
    stalled_count: int = 0
    delay: int = 0
    priority: int = 0
    failed_reason: str = ""
    scheduler_id: str = ""
    dedup_id: str = ""
    parent_key: str = ""
    deferred_failure: str = ""
    score: float | None = None  # delayed: due time encoded; prioritized: priority encoded
    # Fields that hold a value we could not read (``1e400``, ``inf``, text where a number
    # belongs, an impossible time): shown as unreadable, never raised.
    unreadable: tuple[str, ...] = ()

    @property
    def due_at(self) -> int | None:
        """For delayed jobs: when the job becomes due (score = due_ms * 4096 + seq)."""
        score = finite(self.score)
        return to_ms(score // 4096) if score is not None else None

    def redacted(self, redactor: Redactor) -> JobSummary:
        """The summary as shown: its free text (the failure reason, the failure a stall will
        raise) redacted, since a worker's error message may quote a password or a URL with one.
        Sources return summaries for display through this; selection and error grouping read
        the stored reasons themselves, so filters and fingerprints stay on the raw text."""
        return replace(
            self, failed_reason=redactor.text(self.failed_reason), deferred_failure=redactor.text(self.deferred_failure)
        )

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "name": self.name,
            "timestamp": self.timestamp,
            "processedOn": self.processed_on,
            "finishedOn": self.finished_on,
            "attemptsMade": self.attempts_made,
            "attemptsStarted": self.attempts_started,
            "attempts": self.attempts_allowed,
            "stalledCounter": self.stalled_count,
            "priority": self.priority,
            "delay": self.delay,
            "failedReason": self.failed_reason,
            "exists": self.exists,
        }


def attempts_allowed(opts: Any) -> int:
    """BullMQ stores ``attempts`` in opts; 0 or missing means a single try."""
    if isinstance(opts, dict):
        n = to_int(opts.get("attempts") if not isinstance(opts.get("attempts"), bool) else None, 0)
        return max(1, n or 0)
    return 1


TIME_FIELDS = ("timestamp", "processedOn", "finishedOn")
COUNT_FIELDS = ("atm", "attemptsMade", "ats", "stc", "delay", "priority")


def _unreadable_fields(f: dict) -> tuple[str, ...]:
    """Numeric fields that hold something (not missing, not empty) we cannot read."""
    bad = [n for n in TIME_FIELDS if f[n] not in (None, b"", "") and to_ms(f[n]) is None]
    bad += [n for n in COUNT_FIELDS if f[n] not in (None, b"", "") and to_int(f[n]) is None]
    return tuple(bad)


def summary_from_fields(job_id: str, values: list[bytes | None], score: float | None = None) -> JobSummary:
    f = dict(zip(SUMMARY_FIELDS, values))
    if all(v is None for v in values):
        return JobSummary(id=job_id, exists=False, score=finite(score))
    opts_raw = to_text(f["opts"], "{}")
    _, opts = parse_json(opts_raw) if len(opts_raw) < 65536 else (False, None)
    unreadable = _unreadable_fields(f)
    if score is not None and finite(score) is None:
        unreadable += ("score",)
    return JobSummary(
        id=job_id,
        exists=True,
        name=to_text(f["name"]),
        timestamp=to_ms(f["timestamp"]),
        processed_on=to_ms(f["processedOn"]),
        finished_on=to_ms(f["finishedOn"]),
        attempts_made=to_int(f["atm"]) or to_int(f["attemptsMade"]) or 0,
        attempts_started=to_int(f["ats"], 0),
        attempts_allowed=attempts_allowed(opts),
        stalled_count=to_int(f["stc"], 0),
        delay=to_int(f["delay"], 0),
        priority=to_int(f["priority"], 0),
        failed_reason=first_line(to_text(f["failedReason"])),
        scheduler_id=to_text(f["rjk"]),
        dedup_id=to_text(f["deid"]),
        parent_key=to_text(f["parentKey"]),
        deferred_failure=to_text(f["defa"]),
        score=finite(score),
        unreadable=unreadable,
    )


def summary_or_unreadable(job_id: str, values: list[bytes | None], score: float | None = None) -> JobSummary:
    """``summary_from_fields``, isolated: whatever a hostile hash does to the parsing above,
    it costs only its own row, which lists as unreadable."""
    try:
        return summary_from_fields(job_id, values, score)
    except Exception:  # noqa: BLE001 - one job must never take its list down
        log.warning("job %r could not be read; listed as unreadable", job_id[:200], exc_info=True)
        return JobSummary(id=job_id, exists=True, unreadable=("job",))


# ---------------------------------------------------------------------------------------------
# Full details


@dataclass
class Payload:
    """A JSON-ish field prepared for display: pretty, redacted, maybe truncated."""

    text: str
    size: int
    truncated: bool
    is_json: bool

    @property
    def present(self) -> bool:
        return self.size > 0


def prepare_payload(raw: str, *, cap: int, redactor: Redactor) -> Payload:
    size = len(raw.encode("utf-8", errors="replace"))
    if size > cap:
        # Too big to parse and pretty-print for a page: show the head of the raw text only,
        # redacted as text. The full value is available through the download link.
        head = raw[:cap]
        return Payload(text=redactor.text(head), size=size, truncated=True, is_json=False)
    ok, value = parse_json(raw)
    if ok:
        pretty = json.dumps(redactor.value(value), indent=2, ensure_ascii=False, sort_keys=False)
        return Payload(text=pretty, size=size, truncated=False, is_json=True)
    return Payload(text=redactor.text(raw), size=size, truncated=False, is_json=False)


@dataclass
class JobDetail:
    queue: QueueRef
    id: str
    state: str
    summary: JobSummary
    data: Payload
    opts: Payload
    returnvalue: Payload
    progress: Payload
    failed_reason: str
    stacktrace: list[str]
    logs: list[str]
    logs_total: int
    parent: str  # full key of the parent job, or ""
    children_pending: list[str] = field(default_factory=list)
    children_processed: list[str] = field(default_factory=list)
    children_failed: list[str] = field(default_factory=list)
    processed_by: str = ""

    @property
    def failed_by_stall_limit(self) -> bool:
        return self.failed_reason == STALLED_LIMIT_REASON

    def timeline(self) -> list[tuple[str, int]]:
        return job_timeline(self.summary, self.state)


def job_timeline(s: JobSummary, state: str) -> list[tuple[str, int]]:
    """(label, ms timestamp) entries in time order."""
    events = []
    if s.timestamp:
        events.append((_("created"), s.timestamp))
    if s.delay and s.timestamp and state == "delayed" and s.due_at:
        events.append((_("due"), s.due_at))
    if s.processed_on:
        events.append((_("started (last attempt)"), s.processed_on))
    if s.finished_on:
        finished = {"completed": _("finished (completed)"), "failed": _("finished (failed)")}.get(state, _("finished"))
        events.append((finished, s.finished_on))
    return sorted(events, key=lambda e: e[1])


@dataclass
class JobLive:
    """What the job page updates live: state, attempts, progress, the tail of the logs."""

    queue: QueueRef
    id: str
    state: str
    summary: JobSummary
    progress: Payload
    logs: list[str]
    logs_total: int
    failed_reason: str = ""  # in full (the summary keeps its first line); no stack traces: too big for every tick

    @property
    def failed_by_stall_limit(self) -> bool:
        return self.failed_reason == STALLED_LIMIT_REASON

    def timeline(self) -> list[tuple[str, int]]:
        return job_timeline(self.summary, self.state)
