"""Running stored tasks in the leading monitor under a lease: the one home of claiming, taking
over and releasing task rows (bulk actions, background searches).

A task model has ``state`` (pending, running and final states), ``cancel_requested``,
``claimed_by``, ``heartbeat_at`` and ``started_at``. Claiming is a compare-and-swap on the row
(``state`` pending → running, or a running row whose heartbeat went stale because the process
that ran it died), so two monitors can never run one task, and a restarted monitor resumes what
a killed one left. A runner keeps the lease by ``heartbeat`` (before every batch or step); it
stops without finishing the task when it is stopping, no longer leads, or was taken over
(``Interrupted``), so the next leader resumes it from its last saved progress.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

from django.db import close_old_connections
from django.utils import timezone

from dashboard.core.db import db_retry

log = logging.getLogger("queuewatch.tasks")

POLL_INTERVAL = 1.0  # s between looks for new tasks
# A task whose runner sent no heartbeat (one per batch) for this long is taken over. Only the
# leader runs tasks, and a new leader exists only after the old lock (5 s) lapsed, so this
# mainly guards against a frozen old leader; its late writes are refused by claimed_by anyway.
STALE_AFTER = 5.0
PENDING, RUNNING = "pending", "running"


class Interrupted(Exception):
    """Stop running this task but leave it resumable: shutting down, leadership lost, or the
    task was taken over by another runner."""


class LeasedRunner:
    """Claims rows of ``model`` and runs each in a thread of its own (``run_task``), at most
    ``max_parallel`` at once, only while ``leading()``."""

    model: ClassVar[Any]
    kind: ClassVar[str] = "task"  # for thread names and logs
    max_parallel: ClassVar[int] = 4

    def __init__(self, *, name: str, leading: Callable[[], bool]):
        self.owner = f"{name}:{uuid.uuid4().hex[:8]}"  # unique per process start
        self.leading = leading
        self.stop_event = threading.Event()
        self.running: dict[int, threading.Thread] = {}
        self.thread = threading.Thread(target=self._loop, name=f"{self.kind}-runner", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self.stop_event.set()
        self.thread.join(timeout)
        for t in list(self.running.values()):
            t.join(timeout)
        try:
            # Interrupted tasks stay "running" with their saved progress; mark them stale at once
            # so the next leader resumes them without waiting STALE_AFTER.
            self.model.objects.filter(claimed_by=self.owner, state=RUNNING).update(
                heartbeat_at=dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
            )
        except Exception:
            log.warning(
                "%s runner: could not release interrupted tasks; they resume after %s s", self.kind, STALE_AFTER
            )
        finally:
            close_old_connections()

    def run_task(self, task) -> None:
        raise NotImplementedError

    # --- claiming -------------------------------------------------------------------------

    def _loop(self) -> None:
        while not self.stop_event.is_set():
            try:
                self.running = {pk: t for pk, t in self.running.items() if t.is_alive()}
                if len(self.running) < self.max_parallel and self.leading():
                    task = self.claim_next()
                    if task is not None:
                        t = threading.Thread(target=self._run, args=(task,), name=f"{self.kind}-{task.pk}", daemon=True)
                        self.running[task.pk] = t
                        t.start()
                        continue  # look for more at once
            except Exception:  # a bug or a database hiccup must not end the runner
                log.exception("%s runner: claiming failed; retrying", self.kind)
            finally:
                close_old_connections()
            self.stop_event.wait(POLL_INTERVAL)

    def _run(self, task) -> None:
        try:
            self.run_task(task)
        finally:
            close_old_connections()

    def claim_next(self):
        rows = self.model.objects
        now = timezone.now()
        stale = now - dt.timedelta(seconds=STALE_AFTER)
        for task in rows.filter(state=PENDING).order_by("pk")[:10]:
            if rows.filter(pk=task.pk, state=PENDING, cancel_requested=False).update(
                state=RUNNING, claimed_by=self.owner, heartbeat_at=now, started_at=now
            ):
                return rows.get(pk=task.pk)
        # A running task whose runner died (killed monitor, lost leadership): take it over.
        for task in (
            rows.filter(state=RUNNING, heartbeat_at__lt=stale).exclude(pk__in=list(self.running)).order_by("pk")[:10]
        ):
            if rows.filter(
                pk=task.pk, state=RUNNING, claimed_by=task.claimed_by, heartbeat_at=task.heartbeat_at
            ).update(claimed_by=self.owner, heartbeat_at=now):
                log.info("%s runner: resuming task %s left by %s", self.kind, task.pk, task.claimed_by or "?")
                return rows.get(pk=task.pk)
        return None

    # --- the lease while running --------------------------------------------------------------

    def mine(self, task_id: int):
        """The task's row while this runner holds it (for conditional updates)."""
        return self.model.objects.filter(pk=task_id, claimed_by=self.owner, state=RUNNING)

    def should_cancel(self, task_id: int) -> bool:
        """Checked before every batch or step; also the task's heartbeat. A cancel request ends
        the task. Shutting down, lost leadership or a takeover raise ``Interrupted`` instead, so
        the task is not marked cancelled and the next leader resumes it."""
        if self.stop_event.is_set() or not self.leading():
            raise Interrupted("this monitor is stopping or no longer leads")
        if not db_retry(lambda: self.mine(task_id).update(heartbeat_at=timezone.now())):
            raise Interrupted("taken over by another runner")
        return db_retry(self.model.objects.filter(pk=task_id, cancel_requested=True).exists)
