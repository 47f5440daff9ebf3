"""Jobs as every source kind returns them: light summaries for lists, full details for the job
page, and the parsing of a stored job's fields into them.

Job hashes are written by other programs and may be malformed: missing fields, non-JSON
``data``/``opts``, binary bytes, huge payloads. Every parse here degrades to showing the raw
text rather than raising. A Redis node reads them with ``queues.redis.jobs``."""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field, replace
from typing import Any

from .keys import QueueRef
from .messages import _
from .redact import Redactor
from .safe_json import parse_json
from .stalls import STALLED_LIMIT_REASON
from .stored_opts import ENCODE, TELEMETRY, options_from_stored
from .text import finite, first_line, to_int, to_ms, to_text

log = logging.getLogger(__name__)

# Fields a list row needs. Deliberately excludes data, returnvalue, stacktrace and progress
# (which may be megabytes); failedReason is included but only its first line is kept.
LOG_TAIL = 500  # log lines shown on a job page (the newest)
LIST_CAP = 1000  # children listed per kind on the job page
CHILD_OUTCOME_CAP = 300  # characters of a child's return value or failure reason on its parent's page


def child_outcome(raw: str, redactor: Redactor) -> str:
    """A child's return value or failure reason as its parent's page lists it: redacted, short."""
    text = redactor.text(raw)
    return text if len(text) <= CHILD_OUTCOME_CAP else text[: CHILD_OUTCOME_CAP - 1] + "…"


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
    # ``stackTraceLimit``: BullMQ keeps only that many of the newest stack traces (None: all).
    stack_trace_limit: int | None = None
    # What this job's failure does to its flow parent (``PARENT_FAILURE_RULES``); "" by default:
    # the parent waits on, the child staying among its pending dependencies.
    parent_failure_rule: str = ""
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


# A child's flags, in the order ``moveChildFromDependenciesIfNeeded`` tests them (the first one
# set decides), each as Redis stores it in the options (``optsEncodeMap``) and by its own name,
# as BullMQ's PostgreSQL backend stores it.
PARENT_FAILURE_RULES = (
    ("fpof", "failParentOnFailure", "fail"),  # recorded in the parent's :unsuccessful, fails it
    ("cpof", "continueParentOnFailure", "continue"),  # recorded in :failed, the parent runs now
    ("idof", "ignoreDependencyOnFailure", "ignore"),  # recorded in :failed, the parent runs when done
    ("rdof", "removeDependencyOnFailure", "remove"),  # dropped from the parent, not recorded
)


def parent_failure_rule(opts: Any) -> str:
    if isinstance(opts, dict):
        for short, name, rule in PARENT_FAILURE_RULES:
            if opts.get(short) is True or opts.get(name) is True:
                return rule
    return ""


def stack_trace_limit(opts: Any) -> int | None:
    """The ``stackTraceLimit`` option, which ``Job.updateStacktrace`` applies (0 keeps none)."""
    if isinstance(opts, dict) and not isinstance(opts.get("stackTraceLimit"), bool):
        return to_int(opts.get("stackTraceLimit"))
    return None


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
        stack_trace_limit=stack_trace_limit(opts),
        parent_failure_rule=parent_failure_rule(opts),
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

    @property
    def number(self) -> float | None:
        """The value when it is a plain finite number (numeric ``progress``: a bar), else None."""
        if not self.is_json or self.truncated:
            return None
        try:
            value = float(self.text)
        except ValueError:
            return None
        return value if math.isfinite(value) else None

    @property
    def percent(self) -> float | None:
        """``number`` held to 0–100, for a progress bar (BullMQ leaves the scale to the worker;
        0–100 is its documented convention)."""
        value = self.number
        return None if value is None else min(100.0, max(0.0, value))


def options_payload(raw: str, *, cap: int, redactor: Redactor) -> Payload:
    """A job's stored options as the page shows them: under their real names, as Node's
    ``Job.optsFromJSON`` reads them (``queues.stored_opts``); raw text when not a JSON object."""
    ok, value = parse_json(raw)
    if ok and isinstance(value, dict) and len(raw.encode("utf-8", errors="replace")) <= cap:
        raw = json.dumps(options_from_stored(value), ensure_ascii=False)
    return prepare_payload(raw, cap=cap, redactor=redactor)


def parent_flags(raw_parent: str) -> tuple[str, ...] | None:
    """The failure flags of a job's ``parent`` field under their real names (``None``: no parent
    field, or not a JSON object)."""
    ok, value = parse_json(raw_parent)
    if not ok or not isinstance(value, dict):
        return None
    return tuple(name for flag, name, _rule in PARENT_FAILURE_RULES if value.get(flag) is True)


def telemetry_metadata(raw_opts: str) -> str:
    """The trace context a producer stored with the job (opts ``tm``), as text ("" when none)."""
    ok, value = parse_json(raw_opts)
    if not ok or not isinstance(value, dict) or value.get(TELEMETRY["metadata"]) is None:
        return ""
    found = value[TELEMETRY["metadata"]]
    return found if isinstance(found, str) else json.dumps(found, ensure_ascii=False)


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
    # A parent's children by what BullMQ recorded (``Job.getDependencies``): still pending, done
    # (with their return value), failed but ignored or continued past (``:failed``, with their
    # reason), and failed so as to fail the parent (``:unsuccessful``).
    children_pending: list[str] = field(default_factory=list)
    children_processed: list[str] = field(default_factory=list)
    children_ignored: list[str] = field(default_factory=list)
    children_failed: list[str] = field(default_factory=list)
    # child key -> its return value (processed) or failure reason (ignored, failed), redacted
    # and cut to ``CHILD_OUTCOME_CAP`` characters.
    child_outcomes: dict[str, str] = field(default_factory=dict)
    processed_by: str = ""
    # Set on a parent by BullMQ 6.7 when a child of its flow could not be attached (a job with
    # the child's id already existed under another parent); the parent is released without it.
    flow_attachment_failed: bool = False
    # The deduplication key of ``summary.dedup_id`` (``de:<id>``): the job id it holds (None: the
    # key is gone, the next add with that id goes through) and its time to live in ms (None: no
    # TTL, held until the owner finishes). ``dedup_read`` is False where the kind does not read it.
    dedup_read: bool = False
    dedup_owner: str | None = None
    dedup_ttl_ms: int | None = None
    telemetry_metadata: str = ""  # opts ``tm``: the trace context a producer propagated
    # The flags in the job's ``parent`` field (``{"id", "queueKey", "fpof": true…}``), under their
    # real names: what BullMQ's moveToFinished acts on when the job fails (its options only
    # record them). None: the job has no parent field (or the kind does not read it).
    parent_flags: tuple[str, ...] | None = None

    @property
    def failure_rule(self) -> str:
        """What this job's failure does to its parent, from the ``parent`` field's flags when it
        has one (BullMQ's own source), else from the options (``PARENT_FAILURE_RULES``)."""
        if self.parent_flags is None:
            return self.summary.parent_failure_rule
        encoded = {ENCODE[name]: True for name in self.parent_flags}
        return parent_failure_rule(encoded)

    @property
    def dedup_held_by_self(self) -> bool:
        return self.dedup_owner == self.id

    @property
    def failed_by_stall_limit(self) -> bool:
        return self.failed_reason == STALLED_LIMIT_REASON

    @property
    def unsuccessful_children(self) -> int:
        """Children recorded in ``:unsuccessful``: while any is, a worker cannot complete this job."""
        return len(self.children_failed)

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
    # Children recorded in ``:unsuccessful`` (the retry form warns: the job would fail again).
    unsuccessful_children: int = 0

    @property
    def failed_by_stall_limit(self) -> bool:
        return self.failed_reason == STALLED_LIMIT_REASON

    def timeline(self) -> list[tuple[str, int]]:
        return job_timeline(self.summary, self.state)
