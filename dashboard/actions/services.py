"""Every mutation of the monitored Redis, for pages and the API alike.

``perform`` runs one registered action (``dashboard.actions.registry``) on its validated input
(``dashboard.actions.inputs``) and writes the audit row, whatever the outcome. Views and API
handlers only look the action up (which checks its role), parse input and render the result.

Bulk actions are not run here: ``bulk_start`` fixes the target set (``before_ms`` = now, the
moment of confirmation), stores a ``BulkTask`` row and the monitor runs it in the background
(``dashboard.actions.bulk_runner``).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext

from dashboard.accounts import scopes
from dashboard.accounts.auth import audit_refusal
from dashboard.actions import edit_limits, job_schemas, registry, runners
from dashboard.actions.inputs import Selection, reason_from
from dashboard.actions.models import BulkTask
from dashboard.actions.preview_growth import Growth, growth_of, sample_diffs
from dashboard.audit import log as audit
from dashboard.audit.models import AuditEntry
from dashboard.connections import dead_letters
from dashboard.connections.registry import get_redactor, get_registry
from dashboard.core import dash_redis
from dashboard.core.dash_redis import DashboardRedisError
from dashboard.web.errors import Conflict, InvalidInput
from queues import bulk
from queues.errors import SourceUnavailable
from queues.keys import QueueRef
from queues.messages import _
from queues.script_versions import UnsupportedRelease

BULK_ACTIONS = bulk.ACTIONS
SAMPLE_SIZE = 10


def now_ms() -> int:
    return int(time.time() * 1000)


# --- single jobs and queues ---------------------------------------------------------------


@contextmanager
def audited_failure(**entry):
    """An ``error`` audit row for an attempt the connection could not carry out (its facets
    raise ``SourceUnavailable``): the log records attempts that failed, not only those that worked."""
    try:
        yield
    except SourceUnavailable as exc:
        audit.record(**entry, outcome=AuditEntry.ERROR, message=str(exc))
        raise
    except UnsupportedRelease as exc:  # a newer BullMQ wrote the queue: refused, nothing changed
        audit.record(**entry, outcome=AuditEntry.REFUSED, message=str(exc))
        raise


def perform(*, user, via: str, action: registry.Action, queue: QueueRef, given, job_id: str | None = None):
    """Run ``action`` with its validated input ``given`` and audit it. Returns the runner's
    result (``ok``, ``outcome``, ``message``)."""
    source = get_registry().source(queue.connection)
    entry = dict(
        user=user,
        via=via,
        action=action.audit_label,
        queue=queue,
        reason=given.reason,
        job_ids=[job_id] if action.scope == registry.JOB else [],
        selection=given.audit_details(),
    )
    extra = {"user": user} if action.needs_user else {}
    require_destination(user, queue=queue, action=action.name)
    with audited_failure(**entry):
        if action.scope == registry.JOB:
            result = action.run(source, queue=queue, job_id=job_id, given=given, **extra)
        else:
            result = action.run(source, queue=queue, given=given, **extra)
    # A result may add to the row's details what only running it could know: the before and
    # after of an edit, the id a job was added under (dashboard.actions.toolbox.runners).
    entry["selection"] = {**entry["selection"], **(getattr(result, "audit", None) or {})}
    audit.record(
        **entry,
        affected=runners.affected_by(result),
        outcome=AuditEntry.OK if result.ok else AuditEntry.REFUSED,
        message=result.message,
    )
    if result.ok:
        ask_for_exact_read(queue, parents_elsewhere=action.releases_parents)
    return result


FLOW_ACTIONS = ("remove-child-dependency", "remove-unprocessed")


def require_destination(user, *, queue: QueueRef, action: str) -> None:
    """A redrive writes into the dead-letter queue's source queue: the operator role is needed
    there too (a grant on the dead-letter queue alone does not reach another team's queue)."""
    if not scopes.is_scoped(user):  # also: no user (the CLI, the system)
        return
    if action in FLOW_ACTIONS:
        # BullMQ's scripts change the flow's jobs in other queues (the parent, the children's
        # children), which a grant on this queue alone does not reach.
        why = gettext("This action changes jobs of the flow in other queues: it needs a role on every queue.")
        audit_refusal(user, kind="scope", target=f"{action} {queue.name}", message=why)
        raise PermissionDenied(why)
    if action != "redrive":
        return
    destination = runners.redrive_source(queue=queue)
    if scopes.role_on(user, destination) not in ("operator", "admin"):
        why = gettext("A redrive moves these jobs into a queue outside your scope.")
        audit_refusal(user, kind="scope", target=f"redrive {queue.name}", message=why)
        raise PermissionDenied(why)


def ask_for_exact_read(queue: QueueRef, *, parents_elsewhere: bool = False) -> None:
    """Live figures exact at once after a change made here, even one BullMQ emits no event for
    (drain, obliterate, clean...): the leading monitor reads the queue (docs/live-truth.md).
    ``parents_elsewhere``: the change may have moved flow parents of other queues out of
    waiting-children without an event; the monitor reads those queues too."""
    try:
        dash_redis.request_exact_read(dash_redis.dashboard_redis(), queue, parents_elsewhere=parents_elsewhere)
    except DashboardRedisError:
        pass  # the change is made; its figures settle at the next snapshot instead


def job_action(*, user, via: str, queue: QueueRef, job_id: str, action: str, **params):
    """A job action by name, its input given as keyword arguments (validated like a form's)."""
    found = registry.lookup(registry.JOB, action)
    return perform(user=user, via=via, action=found, queue=queue, job_id=job_id, given=found.parse(params))


def queue_action(*, user, via: str, queue: QueueRef, action: str, **params):
    """A queue action by name, its input given as keyword arguments (validated like a form's)."""
    found = registry.lookup(registry.QUEUE, action)
    return perform(user=user, via=via, action=found, queue=queue, given=found.parse(params))


# --- bulk: choose, preview, start, cancel ---------------------------------------------------


@dataclass
class BulkPreview:
    action: str
    selection: Selection
    count: int
    sample: list  # JobSummary
    patch: dict | None = None
    diffs: list | None = None  # edit-retry: [(job id, redacted diff lines)] of the sample, from the stored data
    complete: bool = True  # False: only the first ``examined`` of the state's ``in_state`` jobs were read
    examined: int = 0
    in_state: int | None = None
    growth: Growth | None = None  # edit-retry: what the patch adds to the jobs' data


def bulk_preview(*, queue: QueueRef, action: str, chosen: Selection, patch: dict | None = None) -> BulkPreview:
    """How many jobs the action would touch right now, and a sample of them (for an edit, the
    diff the patch makes to each sample job's stored data; nothing is written)."""
    _check_bulk(queue=queue, action=action, chosen=chosen, patch=patch)
    jobs = get_registry().jobs(queue.connection)
    if chosen.ids:
        found = BulkPreview(
            action, chosen, len(chosen.ids), jobs.summaries(queue, chosen.ids[:SAMPLE_SIZE], redactor=get_redactor())
        )
    else:
        # At most QUEUEWATCH_SCAN_SAMPLE jobs examined: a request never reads a whole big
        # state (the task itself goes through all of it).
        seen = jobs.preview(
            queue,
            filt=chosen.job_filter(),
            before_ms=now_ms(),
            sample=SAMPLE_SIZE,
            limit=settings.QUEUEWATCH_SCAN_SAMPLE,
            redactor=get_redactor(),
        )
        found = BulkPreview(
            action,
            chosen,
            seen.count,
            list(seen.sample),
            complete=seen.complete,
            examined=seen.scanned,
            in_state=seen.in_state,
        )
    if patch is not None:
        bounds = edit_limits.bounds()
        found.patch = patch
        found.diffs, per_job = sample_diffs(
            jobs, queue, [j.id for j in found.sample], patch, schema=job_schemas.schema_for(queue), bounds=bounds
        )
        found.growth = growth_of(found, per_job, bounds)
    return found


def _check_bulk(*, queue: QueueRef, action: str, chosen: Selection, patch: dict | None = None) -> None:
    if action not in BULK_ACTIONS:
        raise InvalidInput(f"Unknown bulk action '{action}'. Choose one of: {', '.join(BULK_ACTIONS)}.")
    bulk_plan(
        queue=queue, action=action, chosen=chosen, before_ms=now_ms(), rate=None, reset_counters=True, patch=patch
    )


def bulk_plan(
    *,
    queue: QueueRef,
    action: str,
    chosen: Selection,
    before_ms: int,
    rate: float | None,
    reset_counters: bool,
    patch: dict | None = None,
) -> bulk.BulkPlan:
    """The domain engine's plan (which jobs, fixed at ``before_ms``; what to do; how fast).
    "Redrive" on a dead-letter queue moves its jobs to their source queue; on any other queue
    it is the failed-set redrive: retry with the counters reset. An edit's plan carries the
    queue's job schema as it is when the plan is made (a task resumed after the schema changed
    checks the rest of its jobs against the new one)."""
    rules, bounds = dead_letters.rules(), edit_limits.bounds()
    dlq_move = action == "redrive" and rules.is_dead_letter(queue.name)
    try:
        return bulk.BulkPlan(
            queue=queue,
            action="retry" if action == "redrive" and not dlq_move else action,
            before_ms=before_ms,
            rate=rate,
            filt=None if chosen.ids else chosen.job_filter(),
            job_ids=tuple(chosen.ids) if chosen.ids else None,
            reset_counters=True if action == "redrive" else reset_counters,
            dlq_patterns=rules.patterns,
            dlq_mapping=tuple(rules.mapping.items()),
            payload_field=dead_letters.envelope_for(queue.name).payload_field if dlq_move else None,
            patch=patch,
            schema=job_schemas.schema_for(queue) if patch is not None else None,
            max_job_growth=bounds.per_job if patch is not None else None,
            max_task_growth=bounds.per_task if patch is not None else None,
        )
    except ValueError as exc:  # the domain's own check of a plan (state the action cannot act on…)
        raise InvalidInput(str(exc)) from None


class TaskAlreadyRunning(Conflict):
    def __init__(self, task: BulkTask | None):
        self.task = task
        super().__init__(
            "Another bulk task is already pending or running on this queue"
            + (f" (task {task.pk}, {task.action})" if task else "")
            + "; wait for it or cancel it first.",
            task=task.pk if task else None,
        )


def bulk_start(
    *,
    user,
    via: str,
    queue: QueueRef,
    action: str,
    chosen: Selection,
    reason: str,
    rate: float | None,
    reset_counters: bool = True,
    patch: dict | None = None,
) -> BulkTask:
    """Confirm a bulk action: the target set is fixed now (jobs that fail after this moment are
    not swept in), and the monitor runs it. At most one active task per queue. An edit's audit
    row keeps the patch and what it does to a sample of the jobs' stored data (redacted)."""
    _check_bulk(queue=queue, action=action, chosen=chosen, patch=patch)
    require_destination(user, queue=queue, action=action)
    change = {}
    if patch is not None:
        preview = bulk_preview(queue=queue, action=action, chosen=chosen, patch=patch)
        if preview.growth is not None and preview.growth.refusal:
            raise InvalidInput(preview.growth.refusal)
        change = {
            "patch": get_redactor().value(patch),
            "growth": {k: preview.growth.as_dict()[k] for k in ("largest", "jobs", "total")} if preview.growth else {},
            "change": {
                "diff": [line for job_id, lines in preview.diffs for line in (f"@@ job {job_id}", *lines)][:400]
            },
        }
    reason = reason_from({"reason": reason}, required=True)
    try:
        with transaction.atomic():
            task = BulkTask.objects.create(
                created_by=user if getattr(user, "pk", None) else None,
                action=action,
                connection=queue.connection,
                prefix=queue.prefix,
                queue=queue.name,
                selection=chosen.as_dict(),
                before_ms=now_ms(),
                rate=rate,
                reset_counters=reset_counters,
                reason=reason,
                patch=patch,
            )
    except IntegrityError:
        running = BulkTask.objects.filter(
            connection=queue.connection, prefix=queue.prefix, queue=queue.name, state__in=BulkTask.ACTIVE_STATES
        ).first()
        raise TaskAlreadyRunning(running) from None
    audit.record(
        user=user,
        via=via,
        action=f"bulk.{action}",
        queue=queue,
        job_ids=chosen.ids,
        selection={
            **chosen.as_dict(),
            "before_ms": task.before_ms,
            "rate": rate,
            **({"reset_counters": reset_counters} if action == "retry" else {}),
            **change,
        },
        reason=reason,
        outcome=AuditEntry.STARTED,
        # Which jobs is in the row's details (named in each reader's language), not in the text.
        message=_("Task {task} queued.", task=task.pk),
        task=task,
    )
    return task


def task_cancel(*, user, via: str, task: BulkTask) -> bool:
    """Ask the runner to stop (what moved stays moved). A task not yet claimed stops at once."""
    if task.finished:
        return False
    BulkTask.objects.filter(pk=task.pk).update(cancel_requested=True)
    stopped_now = BulkTask.objects.filter(pk=task.pk, state=BulkTask.PENDING).update(
        state=BulkTask.CANCELLED, finished_at=timezone.now()
    )
    audit.record(
        user=user,
        via=via,
        action="bulk.cancel",
        queue=task_queue(task),
        reason="",
        task=task,
        outcome=AuditEntry.OK,
        affected=0,
        message=(
            _("Cancel requested for task {task} before it started.", task=task.pk)
            if stopped_now
            else _("Cancel requested for task {task}.", task=task.pk)
        ),
    )
    return True


def task_queue(task: BulkTask) -> QueueRef:
    return QueueRef(task.connection, task.prefix, task.queue)


def visible_tasks(user):
    """Bulk tasks on the queues ``user`` may see (``dashboard.accounts.scopes``)."""
    rows = BulkTask.objects.all()
    only = scopes.queue_filter(user)
    return rows if only is None else rows.filter(only)
