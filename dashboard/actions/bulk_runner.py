"""Runs confirmed bulk actions (``BulkTask`` rows) in the leading monitor process.

* Claiming, taking over and the heartbeat are the lease of ``dashboard.core.leased_runner``
  (a compare-and-swap on the row), so two monitors can never run one task, and a restarted
  monitor resumes what a killed one left.
* The domain engine (``queues.redis.bulk.run_bulk``) does the moving, oldest first, paced, and
  keeps its resumable cursor in the row through ``TaskStore``: after a crash it continues
  from the last saved cursor, and because every per-job move is atomic and self-guarding
  (a job already moved is skipped, a DLQ copy has a deterministic id) nothing is moved twice.
* A task stops when cancelled (what moved stays moved), when this process stops leading, or
  when another process took it over (its ``claimed_by`` changed). Read-only mode is an
  emergency brake: with ``QUEUEWATCH_READ_ONLY`` on, a running task is cancelled before its
  next batch, and a pending one before its first, with a message saying why.
* Progress is saved and published to the task's websocket group at most every
  ``PROGRESS_INTERVAL`` seconds, rendered once by ``fragments.task_progress``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from dashboard.accounts.auth import read_only
from dashboard.actions.inputs import Selection
from dashboard.actions.models import BulkTask
from dashboard.actions.services import ask_for_exact_read, bulk_plan, task_queue
from dashboard.audit import log as audit
from dashboard.audit.models import AuditEntry
from dashboard.connections.registry import Registry
from dashboard.core.db import db_retry
from dashboard.core.leased_runner import Interrupted, LeasedRunner
from dashboard.live import channels as live
from dashboard.live import fragments
from queues import bulk
from queues.errors import SourceUnavailable
from queues.messages import Joined, Message, as_data, from_data

log = logging.getLogger("queuewatch.bulk")

PROGRESS_INTERVAL = 0.5  # s between progress saves/publishes


class TaskStore:
    """The domain engine's ``ProgressStore``, kept in the task's row: the engine's resumable
    progress as JSON plus the counts as columns (for pages, the API and the audit). Every save
    is conditional on this runner still owning the running task, so a runner that lost it can
    never overwrite the new owner's cursor; it is told with ``Interrupted``."""

    def __init__(self, task: BulkTask, owner: str):
        self.task_id = task.pk
        self.owner = owner
        self.saved = dict(task.progress or {})

    def load(self) -> bulk.Progress | None:
        return bulk.Progress.from_dict(self.saved) if self.saved else None

    def save(self, progress: bulk.Progress) -> None:
        self.saved = progress.as_dict()
        updated = db_retry(
            lambda: BulkTask.objects.filter(pk=self.task_id, claimed_by=self.owner, state=BulkTask.RUNNING).update(
                progress=self.saved,
                heartbeat_at=timezone.now(),
                total=progress.total,
                moved=progress.moved,
                skipped=progress.skipped,
                failed=progress.failed,
                rate_now=round(progress.rate, 1),
            )
        )
        if not updated:
            raise Interrupted(f"task {self.task_id} is no longer ours")


class BulkRunner(LeasedRunner):
    model = BulkTask
    kind = "bulk"
    max_parallel = 4  # tasks running at once (on different queues: one per queue by constraint)

    def __init__(self, *, registry: Registry, publisher: live.Publisher, name: str, leading: Callable[[], bool]):
        super().__init__(name=name, leading=leading)
        self.registry = registry
        self.publisher = publisher

    # --- running --------------------------------------------------------------------------

    def run_task(self, task: BulkTask) -> None:
        queue = task_queue(task)
        last_publish = [0.0]

        def on_progress(progress: bulk.Progress) -> None:
            # The store already saved the counts; publish at most every PROGRESS_INTERVAL.
            if progress.state == bulk.RUNNING and time.monotonic() - last_publish[0] < PROGRESS_INTERVAL:
                return
            last_publish[0] = time.monotonic()
            db_retry(task.refresh_from_db)
            self.publish(task)

        braked = []

        def should_cancel() -> bool:
            if read_only():
                braked.append(True)
                return True
            return self.should_cancel(task.pk)

        try:
            final = self.registry.bulk(queue.connection).run(
                plan=plan_for(task),
                store=TaskStore(task, self.owner),
                should_cancel=should_cancel,
                on_progress=on_progress,
                count_limit=settings.QUEUEWATCH_SCAN_SAMPLE,
            )
            self.finish(task, final, note=_read_only_stop() if braked else "")
        except (Interrupted, DatabaseError, SourceUnavailable) as exc:
            # A busy database (SQLite under concurrent writers) or a Redis outage is not the
            # task's fault: leave it running with its saved progress; its heartbeat goes stale
            # and it is claimed again and resumed, exactly as after a crash.
            log.warning("bulk runner: task %s interrupted (%s); it stays resumable", task.pk, exc)
        except Exception as exc:  # the task fails with a message; the runner carries on
            log.exception("bulk runner: task %s failed", task.pk)
            self.finish(task, None, error=f"{exc.__class__.__name__}: {exc}")

    def finish(self, task: BulkTask, final: bulk.Progress | None, *, error: str = "", note: str = "") -> None:
        """Close the task and write its audit row in one transaction: both or neither (if the
        database refuses, the task stays running and is resumed, finding itself finished).
        ``note`` says why a task was stopped (shown like an error, without failing it)."""
        cancelled = final is not None and final.state == bulk.CANCELLED
        state = BulkTask.FAILED if error else BulkTask.CANCELLED if cancelled else BulkTask.DONE
        skipped_by = ", ".join(f"{n} {why}" for why, n in sorted((final.skipped_by if final else {}).items()))
        # A redrive says what its copies kept of the dead letters (ids, deduplication ids, ...).
        kept_by = ", ".join(f"{n} {what}" for what, n in sorted((final.kept_by if final else {}).items()))

        def close() -> bool:
            with transaction.atomic():
                closing = dict(state=state, finished_at=timezone.now(), error=(error or note)[:2000])
                if note and final is not None:  # kept with its message id: the page shows it in the reader's language
                    closing["progress"] = {**final.as_dict(), "note": as_data(Message(note))}
                if not BulkTask.objects.filter(pk=task.pk, claimed_by=self.owner, state=BulkTask.RUNNING).update(
                    **closing
                ):
                    return False
                task.refresh_from_db()
                outcome = (
                    AuditEntry.ERROR if error else AuditEntry.PARTIAL if (cancelled or task.failed) else AuditEntry.OK
                )
                audit.record(
                    user=task.created_by,
                    via="task",
                    action=f"bulk.{task.action}",
                    queue=task_queue(task),
                    selection={
                        **task.selection,
                        **({"skipped_by": skipped_by} if skipped_by else {}),
                        **({"kept_by": kept_by} if kept_by else {}),
                    },
                    reason=task.reason,
                    affected=task.moved,
                    outcome=outcome,
                    task=task,
                    message=closing_message(task, state, final, error=error, note=note),
                )
                return True

        if db_retry(close):
            self.publish(task)
        if task.moved:
            ask_for_exact_read(task_queue(task))  # e.g. a whole set retried or removed: exact at once

    def publish(self, task: BulkTask) -> None:
        try:
            self.publisher.publish(live.task_group(task.pk), *fragments.task_progress(task))
        except Exception:  # progress display must never stop the work
            log.warning("bulk runner: publishing progress of task %s failed", task.pk, exc_info=True)


def _read_only_stop() -> str:
    # English in the task's error (the API and the audit log); the page translates the note.
    return gettext_noop(
        "Stopped: Queuewatch is in read-only mode (QUEUEWATCH_READ_ONLY). What moved stays moved; "
        "start the task again once read-only mode is off."
    )


def plan_for(task: BulkTask) -> bulk.BulkPlan:
    return bulk_plan(
        queue=task_queue(task),
        action=task.action,
        chosen=Selection.from_stored(task.selection),
        before_ms=task.before_ms,
        rate=task.rate,
        reset_counters=task.reset_counters,
        patch=task.patch,
    )


# What a finished task's audit row says, per closing state, with and without a known total.
_CLOSING = {
    (BulkTask.DONE, True): gettext_noop(
        "Task {task} done: moved {moved}, skipped {skipped}, failed {failed} of {total}."
    ),
    (BulkTask.DONE, False): gettext_noop("Task {task} done: moved {moved}, skipped {skipped}, failed {failed}."),
    (BulkTask.CANCELLED, True): gettext_noop(
        "Task {task} cancelled: moved {moved}, skipped {skipped}, failed {failed} of {total}."
    ),
    (BulkTask.CANCELLED, False): gettext_noop(
        "Task {task} cancelled: moved {moved}, skipped {skipped}, failed {failed}."
    ),
    (BulkTask.FAILED, True): gettext_noop(
        "Task {task} failed: moved {moved}, skipped {skipped}, failed {failed} of {total}."
    ),
    (BulkTask.FAILED, False): gettext_noop("Task {task} failed: moved {moved}, skipped {skipped}, failed {failed}."),
}


def closing_message(task: BulkTask, state: str, final: bulk.Progress | None, *, error: str, note: str) -> Joined:
    """The audit row's message, kept with its message ids so the log shows it in the reader's
    language: the counts, then the first refusals that say why, then the error or the note.
    (How many were skipped or kept, by reason, goes in the row's details.)"""
    counts = dict(task=task.pk, moved=task.moved, skipped=task.skipped, failed=task.failed)
    if task.total is not None:
        counts["total"] = task.total
    parts: list = [Message(_CLOSING[(state, task.total is not None)], **counts)]
    parts.extend(from_data(refusal) for refusal in (final.refusals if final else ()))
    if error:
        parts.append(error)  # an unexpected exception's own text, as raised
    elif note:
        parts.append(Message(note))
    return Joined(parts, " ")
