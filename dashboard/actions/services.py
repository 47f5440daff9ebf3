"""Every mutation of the monitored Redis, for pages and the API alike.

Each function resolves the queue's client, calls one framework-free action from ``queues/``
(which uses BullMQ's own scripts), and writes the audit row, whatever the outcome. Views and
API handlers only parse input, check the role (``dashboard.accounts.roles``) and render the result.

Bulk actions are not run here: ``bulk_start`` fixes the target set (``before_ms`` = now, the
moment of confirmation), stores a ``BulkTask`` row and the monitor runs it in the background
(``dashboard.actions.bulk_runner``).
"""

from __future__ import annotations

import datetime as dt
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from dashboard.actions import audit
from dashboard.actions.models import AuditEntry, BulkTask
from dashboard.registry import get_registry, redis_errors
from dashboard.live.rates import is_dead_letter_queue
from queues import actions, selection
from queues import bulk
from queues.errors import RedisUnavailable
from queues.jobs import read_summaries
from queues.keys import QueueRef

JOB_ACTIONS = ("retry", "discard", "promote", "redrive")
QUEUE_ACTIONS = ("pause", "resume", "clean")
BULK_ACTIONS = ("retry", "discard", "promote", "redrive")
CLEANABLE_STATES = ("completed", "failed")
FILTER_STATES = selection.SELECTABLE_STATES
MAX_SELECTED_IDS = 10_000
MAX_REASON = 2000
DEFAULT_RATE = 100.0
SAMPLE_SIZE = 10


class ActionRefused(ValueError):
    """Input the action cannot run with; the message is shown to the user as is."""


def now_ms() -> int:
    return int(time.time() * 1000)


def client_for(queue: QueueRef):
    return get_registry().client(queue.connection)


# --- single jobs and queues ---------------------------------------------------------------


@contextmanager
def audited_failure(**entry):
    """Redis errors as ``RedisUnavailable`` (a clear message), and an ``error`` audit row for
    the attempt: the log records attempts that failed, not only those that worked."""
    try:
        with redis_errors(entry["queue"].connection):
            yield
    except RedisUnavailable as exc:
        audit.record(**entry, outcome=AuditEntry.ERROR, message=str(exc))
        raise


def dlq_source_of(*, queue: QueueRef) -> str | None:
    """The source queue of a dead-letter queue (explicit mapping or name pattern; never a job's
    data), or None when ``queue`` is not an application DLQ."""
    return actions.dlq_source(dlq_name=queue.name, patterns=settings.QUEUEWATCH_DLQ_PATTERNS,
                              mapping=settings.QUEUEWATCH_DLQ_MAP)


def job_action(*, user, via: str, queue: QueueRef, job_id: str, action: str, reset_counters: bool = True,
               reason: str = "") -> "actions.ActionResult":
    if action not in JOB_ACTIONS:
        raise ActionRefused(f"Unknown job action '{action}'. Choose one of: {', '.join(JOB_ACTIONS)}.")
    client = client_for(queue)
    with audited_failure(user=user, via=via, action=f"job.{action}", queue=queue, job_ids=[job_id], reason=reason):
        if action == "retry":
            result = actions.job_retry(client, queue=queue, job_id=job_id, reset_counters=reset_counters)
        elif action == "discard":
            result = actions.job_discard(client, queue=queue, job_id=job_id)
        elif action == "promote":
            result = actions.job_promote(client, queue=queue, job_id=job_id)
        else:
            source = _redrive_source(client, queue=queue, job_id=job_id)
            result = actions.job_redrive_to_source(client, dlq=queue, job_id=job_id, source=source)
    ok = result.ok
    audit.record(user=user, via=via, action=f"job.{action}", queue=queue, job_ids=[job_id], reason=reason,
                 selection={"reset_counters": reset_counters} if action == "retry" else {},
                 affected=int(ok), outcome=AuditEntry.OK if ok else AuditEntry.REFUSED, message=result.message)
    return result


def _redrive_source(client, *, queue: QueueRef, job_id: str) -> QueueRef:
    name = dlq_source_of(queue=queue)
    if not name:
        raise ActionRefused(f"'{queue.name}' is not a dead-letter queue with a known source queue "
                            "(see QUEUEWATCH_DLQ_PATTERNS and QUEUEWATCH_DLQ_MAP), so there is nowhere to redrive to.")
    return QueueRef(queue.connection, queue.prefix, name)


@dataclass
class QueueActionResult:
    outcome: str  # as ActionResult's: "done" or why not
    message: str
    affected: int = 0

    @property
    def ok(self) -> bool:
        return self.outcome == actions.DONE


def queue_action(*, user, via: str, queue: QueueRef, action: str, state: str = "", older_than_ms: int | None = None,
                 limit: int = 10_000, reason: str = "") -> QueueActionResult:
    if action not in QUEUE_ACTIONS:
        raise ActionRefused(f"Unknown queue action '{action}'. Choose one of: {', '.join(QUEUE_ACTIONS)}.")
    client = client_for(queue)
    details: dict = {}
    if action == "clean":
        if state not in CLEANABLE_STATES:
            raise ActionRefused("Clean removes completed or failed jobs: choose one of those states.")
        if older_than_ms is None or older_than_ms < 0:
            raise ActionRefused("Give the age (in minutes, 0 or more) of the oldest jobs to keep.")
        details = {"state": state, "older_than_ms": older_than_ms, "limit": limit}
        with audited_failure(user=user, via=via, action="queue.clean", queue=queue, selection=details, reason=reason):
            count = actions.queue_clean(client, queue=queue, state=state, older_than_ms=older_than_ms, limit=limit)
        result = QueueActionResult(actions.DONE, f"Removed {count} {state} job{'s' if count != 1 else ''} older than "
                                         f"{older_than_ms // 60000} min.", count)
    else:
        with audited_failure(user=user, via=via, action=f"queue.{action}", queue=queue, reason=reason):
            actions.queue_pause(client, queue=queue, paused=action == "pause")
        result = QueueActionResult(actions.DONE, "Queue paused: workers finish their active jobs and take no new ones."
                                   if action == "pause" else "Queue resumed: workers take jobs again.", 1)
    audit.record(user=user, via=via, action=f"queue.{action}", queue=queue, selection=details, reason=reason,
                 affected=result.affected, outcome=AuditEntry.OK if result.ok else AuditEntry.REFUSED,
                 message=result.message)
    return result


# --- bulk: choose, preview, start, cancel ---------------------------------------------------


@dataclass
class Selection:
    """What a bulk action acts on: explicit job ids (checkboxes), or every job matching a
    filter (which includes an error group's fingerprint)."""

    ids: list[str] = field(default_factory=list)
    state: str = "failed"
    name: str = ""
    reason_contains: str = ""
    finished_from_ms: int | None = None
    finished_to_ms: int | None = None
    fingerprint: str = ""

    @classmethod
    def from_params(cls, params) -> "Selection":
        """From form fields or JSON: ``ids`` (a list), or ``state``, ``name``, ``reason_contains``,
        ``finished_from`` / ``finished_to`` (ISO date-times, UTC) and ``fingerprint``."""
        ids = params.getlist("ids") if hasattr(params, "getlist") else params.get("ids") or []
        if not isinstance(ids, list):
            raise ActionRefused("'ids' must be a list of job ids.")
        ids = [str(i) for i in ids if str(i).strip()]
        if len(ids) > MAX_SELECTED_IDS:
            raise ActionRefused(f"At most {MAX_SELECTED_IDS} jobs can be selected one by one; use a filter instead.")
        state = str(params.get("state") or "failed")
        if state not in FILTER_STATES:
            raise ActionRefused(f"Unknown state '{state}'. Choose one of: {', '.join(FILTER_STATES)}.")
        return cls(ids=ids, state=state, name=str(params.get("name") or "").strip()[:200],
                   reason_contains=str(params.get("reason_contains") or "").strip()[:500],
                   finished_from_ms=_time_param(params.get("finished_from"), "finished_from"),
                   finished_to_ms=_time_param(params.get("finished_to"), "finished_to"),
                   fingerprint=str(params.get("fingerprint") or "").strip()[:64])

    @classmethod
    def from_stored(cls, stored: dict) -> "Selection":
        return cls(**{k: v for k, v in stored.items() if k in cls.__dataclass_fields__})

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v not in (None, "", [])}

    @property
    def finished_from_iso(self) -> str:
        return _iso_param(self.finished_from_ms)

    @property
    def finished_to_iso(self) -> str:
        return _iso_param(self.finished_to_ms)

    def job_filter(self) -> "selection.JobFilter":
        try:  # empty fields do not filter (JobFilter's None)
            return selection.JobFilter(state=self.state, name=self.name or None,
                                       reason_contains=self.reason_contains or None,
                                       finished_from_ms=self.finished_from_ms, finished_to_ms=self.finished_to_ms,
                                       fingerprint=self.fingerprint or None)
        except ValueError as exc:
            raise ActionRefused(str(exc)) from None

    def describe(self) -> str:
        if self.ids:
            return f"{len(self.ids)} selected job{'s' if len(self.ids) != 1 else ''}"
        parts = [f"all {self.state} jobs"]
        if self.fingerprint:
            parts.append(f"in error group {self.fingerprint}")
        if self.name:
            parts.append(f"named “{self.name}”")
        if self.reason_contains:
            parts.append(f"whose failure reason contains “{self.reason_contains}”")
        if self.finished_from_ms:
            parts.append(f"finished from {_iso(self.finished_from_ms)}")
        if self.finished_to_ms:
            parts.append(f"finished before {_iso(self.finished_to_ms)}")
        return " ".join(parts)


def _time_param(value, name: str) -> int | None:
    if value in (None, ""):
        return None
    try:
        when = dt.datetime.fromisoformat(str(value).strip())
    except ValueError:
        raise ActionRefused(f"'{name}' must be a date and time like 2026-01-31T14:00 (UTC).") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return int(when.timestamp() * 1000)


def _iso_param(ms: int | None) -> str:
    """The form value that ``_time_param`` reads back to the same millisecond."""
    if ms is None:
        return ""
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).isoformat(timespec="milliseconds")


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


@dataclass
class BulkPreview:
    action: str
    selection: Selection
    count: int
    sample: list  # JobSummary


def bulk_preview(*, queue: QueueRef, action: str, chosen: Selection) -> BulkPreview:
    """How many jobs the action would touch right now, and a sample of them."""
    _check_bulk(queue=queue, action=action, chosen=chosen)
    client = client_for(queue)
    with redis_errors(queue.connection):
        if chosen.ids:
            sample = read_summaries(client, queue, chosen.ids[:SAMPLE_SIZE])
            return BulkPreview(action, chosen, len(chosen.ids), sample)
        found = selection.preview(client, queue=queue, filt=chosen.job_filter(), before_ms=now_ms(), sample=SAMPLE_SIZE)
    return BulkPreview(action, chosen, found.count, list(found.sample))


def _check_bulk(*, queue: QueueRef, action: str, chosen: Selection) -> None:
    if action not in BULK_ACTIONS:
        raise ActionRefused(f"Unknown bulk action '{action}'. Choose one of: {', '.join(BULK_ACTIONS)}.")
    bulk_plan(queue=queue, action=action, chosen=chosen, before_ms=now_ms(), rate=None, reset_counters=True)


def bulk_plan(*, queue: QueueRef, action: str, chosen: Selection, before_ms: int, rate: float | None,
              reset_counters: bool) -> "bulk.BulkPlan":
    """The domain engine's plan (which jobs, fixed at ``before_ms``; what to do; how fast).
    "Redrive" on a dead-letter queue moves its jobs to their source queue; on any other queue
    it is the failed-set redrive: retry with the counters reset."""
    dlq_move = action == "redrive" and is_dead_letter_queue(queue.name)
    try:
        return bulk.BulkPlan(
            queue=queue, action="retry" if action == "redrive" and not dlq_move else action, before_ms=before_ms,
            rate=rate, filt=None if chosen.ids else chosen.job_filter(),
            job_ids=tuple(chosen.ids) if chosen.ids else None,
            reset_counters=True if action == "redrive" else reset_counters,
            dlq_patterns=tuple(settings.QUEUEWATCH_DLQ_PATTERNS), dlq_mapping=tuple(settings.QUEUEWATCH_DLQ_MAP.items()))
    except ValueError as exc:
        raise ActionRefused(str(exc)) from None


def parse_rate(value) -> float | None:
    """Jobs per second: empty means the default, 0 or "unpaced" means as fast as possible."""
    if value in (None, ""):
        return DEFAULT_RATE
    if str(value).strip().lower() in ("0", "unpaced", "none"):
        return None
    try:
        rate = float(value)
    except (TypeError, ValueError):
        raise ActionRefused("The rate must be a number of jobs per second (or 'unpaced').") from None
    if not 0 < rate <= 100_000:
        raise ActionRefused("The rate must be between 0 and 100,000 jobs per second.")
    return rate


def clean_reason(value) -> str:
    reason = str(value or "").strip()
    if not reason:
        raise ActionRefused("Say why (the reason goes into the audit log): it is required for bulk and destructive actions.")
    return reason[:MAX_REASON]


class TaskAlreadyRunning(ActionRefused):
    def __init__(self, task: BulkTask | None):
        self.task = task
        super().__init__("Another bulk task is already pending or running on this queue"
                         + (f" (task {task.pk}, {task.action})" if task else "") + "; wait for it or cancel it first.")


def bulk_start(*, user, via: str, queue: QueueRef, action: str, chosen: Selection, reason: str,
               rate: float | None, reset_counters: bool = True) -> BulkTask:
    """Confirm a bulk action: the target set is fixed now (jobs that fail after this moment are
    not swept in), and the monitor runs it. At most one active task per queue."""
    _check_bulk(queue=queue, action=action, chosen=chosen)
    reason = clean_reason(reason)
    try:
        with transaction.atomic():
            task = BulkTask.objects.create(
                created_by=user if getattr(user, "pk", None) else None, action=action, connection=queue.connection,
                prefix=queue.prefix, queue=queue.name, selection=chosen.as_dict(), before_ms=now_ms(), rate=rate,
                reset_counters=reset_counters, reason=reason)
    except IntegrityError:
        running = BulkTask.objects.filter(connection=queue.connection, prefix=queue.prefix, queue=queue.name,
                                          state__in=BulkTask.ACTIVE_STATES).first()
        raise TaskAlreadyRunning(running) from None
    audit.record(user=user, via=via, action=f"bulk.{action}", queue=queue, job_ids=chosen.ids,
                 selection={**chosen.as_dict(), "before_ms": task.before_ms, "rate": rate,
                            **({"reset_counters": reset_counters} if action == "retry" else {})},
                 reason=reason, outcome=AuditEntry.STARTED, message=f"Task {task.pk} queued: {chosen.describe()}.",
                 task=task)
    return task


def task_cancel(*, user, via: str, task: BulkTask) -> bool:
    """Ask the runner to stop (what moved stays moved). A task not yet claimed stops at once."""
    if task.finished:
        return False
    BulkTask.objects.filter(pk=task.pk).update(cancel_requested=True)
    stopped_now = BulkTask.objects.filter(pk=task.pk, state=BulkTask.PENDING).update(
        state=BulkTask.CANCELLED, finished_at=timezone.now())
    audit.record(user=user, via=via, action="bulk.cancel", queue=task_queue(task), reason="", task=task,
                 outcome=AuditEntry.OK, affected=0,
                 message=f"Cancel requested for task {task.pk}" + (" before it started." if stopped_now else "."))
    return True


def task_queue(task: BulkTask) -> QueueRef:
    return QueueRef(task.connection, task.prefix, task.queue)
