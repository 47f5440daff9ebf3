"""Pages and htmx endpoints for acting on jobs: per-job and per-queue actions, choosing jobs
(checkboxes, filters, error groups), preview and confirm, background task progress, export
and the audit log. Each view checks the role (the action's own, from the registry), parses
its input object (``dashboard.actions.inputs``), calls ``dashboard.actions.services`` (which
audits) and renders a small result."""

from __future__ import annotations

import functools

from django.conf import settings
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_POST

from dashboard.accounts import scopes
from dashboard.accounts.auth import ADMIN, OPERATOR, audit_refusal, has_role, require, role_required
from dashboard.actions import dlq_envelopes, registry, triage
from dashboard.actions import services as operations
from dashboard.actions.exporting import export_response
from dashboard.actions.inputs import DEFAULT_RATE, BulkInput, Selection, minutes_from
from dashboard.actions.models import BulkTask
from dashboard.actions.toolbox import runners as toolbox_runners
from dashboard.audit import log as audit
from dashboard.audit.models import AuditEntry
from dashboard.browse import selectors as reads
from dashboard.connections.dead_letters import is_dead_letter_queue
from dashboard.connections.registry import get_redactor, get_registry
from dashboard.core.i18n import translate
from dashboard.live import channels as live
from dashboard.web import streaming
from dashboard.web.errors import Conflict, InvalidInput, page_errors
from dashboard.web.htmx import vary_on_htmx, wants_fragment
from queues.errors import JobNotFound, QueueNotFound
from queues.keys import QueueRef
from queues.script_versions import UnsupportedRelease

RESULT = "actions/action_result.html"


def result(request, *, ok: bool, message: str, status: int = 200, open_job=None):
    """The outcome of an action: a fragment for htmx (always 200, so htmx swaps it in and the
    user reads why), a small page otherwise (with a 4xx status when refused). ``open_job``:
    (queue, id) of the job the message speaks of, linked."""
    context = {"ok": ok, "message": translate(message), "open_job": open_job}
    if wants_fragment(request):
        return vary_on_htmx(render(request, RESULT + "#result", context))
    return vary_on_htmx(render(request, RESULT, context, status=status if not ok else 200))


def refusals(view):
    """Bad input and refusals become a clear message instead of an error page."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except InvalidInput as exc:
            audit_refusal(
                request.user, kind="validation", via="page", target=f"{request.method} {request.path}", message=str(exc)
            )
            return result(request, ok=False, message=str(exc), status=400)
        except Conflict as exc:
            return result(request, ok=False, message=str(exc), status=409)
        except UnsupportedRelease as exc:  # audited as refused by the service
            return result(request, ok=False, message=exc.message, status=409)
        except JobNotFound as exc:
            return result(request, ok=False, message=str(exc), status=404)

    return wrapper


def action_post(view):
    """An htmx/form POST of a registered action (CSRF by the middleware): the view checks the
    action's own role; unknown queues and Redis outages as error pages, refusals as messages."""
    return require_POST(page_errors(refusals(view)))


def operator_post(view):
    """Like ``action_post`` for the bulk views: operator role, not read-only."""
    return require_POST(role_required(OPERATOR, mutates_redis=True)(page_errors(refusals(view))))


@action_post
def job_action(request, connection, prefix, name, action, job_id):
    found = registry.authorized(request.user, scope=registry.JOB, name=action, queue=QueueRef(connection, prefix, name))
    queue = reads.resolve(request.user, connection, prefix, name)
    outcome = operations.perform(
        user=request.user, via="page", action=found, queue=queue, job_id=job_id, given=found.parse(request.POST)
    )
    # From a row of the queue page's list or a node of a flow tree: the message only.
    if outcome.ok and wants_fragment(request) and request.POST.get("shown_on") not in ("queue-list", "flow"):
        if request.POST.get("shown_on") == "edit-page":
            return edit_saved(request, queue=queue, job_id=job_id, outcome=outcome)
        return job_refreshed(request, queue=queue, job_id=job_id, outcome=outcome)
    return result(request, ok=outcome.ok, message=outcome.message, status=409, open_job=job_link(queue, outcome))


def job_link(queue, outcome) -> tuple | None:
    """The job an action's message speaks of, as (queue, id): where a redrive moved the job, or
    the job it added (an add, a duplicate); None for the others."""
    moved = getattr(outcome, "moved_to", None)
    if moved:
        return moved
    added = getattr(outcome, "new_job_id", None)
    return (queue, added) if added else None


def job_refreshed(request, *, queue, job_id: str, outcome):
    """A job action done from the job's page: the message, plus the job's state and the actions
    that apply now, swapped in out-of-band, so the page never goes on offering what no longer
    applies. A job that left the queue (a redrive moves it) says so and links to its copy."""
    read_at = live.read_stamp()
    try:
        job = reads.job_detail(queue, job_id)
    except JobNotFound:
        job = None
    context = {
        "read_at": read_at,  # the page keeps whichever of this and the monitor's message is later
        "ok": True,
        "message": translate(outcome.message),
        "queue": queue,
        "job": job,
        "live": job,
        "job_id": job_id,
        "open_job": job_link(queue, outcome),
        "oob": True,
        "is_dlq": is_dead_letter_queue(queue.name),
    }
    return vary_on_htmx(render(request, "actions/partials/job_refreshed.html", context))


def edit_saved(request, *, queue, job_id: str, outcome):
    """ "Save and retry" done on the edit page: the message, the page's data as now stored (the
    edited data) and its save form gone, so the page never shows what was replaced."""
    context = {"message": translate(outcome.message), "data": toolbox_runners.shown_data(queue, job_id)}
    return vary_on_htmx(render(request, "actions/partials/edit_saved.html", context))


@action_post
def queue_action(request, connection, prefix, name, action):
    found = registry.authorized(
        request.user, scope=registry.QUEUE, name=action, queue=QueueRef(connection, prefix, name)
    )
    queue = reads.resolve(request.user, connection, prefix, name)
    outcome = operations.perform(
        user=request.user, via="page", action=found, queue=queue, given=found.parse_confirmed(request.POST)
    )
    return result(request, ok=outcome.ok, message=outcome.message, status=409, open_job=job_link(queue, outcome))


@operator_post
def bulk_preview(request, connection, prefix, name):
    return preview_response(request, reads.resolve(request.user, connection, prefix, name))


@action_post
def dlq_envelope_confirm(request, connection, prefix, name):
    """An admin's "Use this shape for this queue" on a redrive preview: the ``set-dlq-envelope``
    action (its role, read-only refusal and audit), then the same preview again, now showing what
    the source queue will receive (the form carries the preview's selection)."""
    found = registry.authorized(
        request.user, scope=registry.QUEUE, name="set-dlq-envelope", queue=QueueRef(connection, prefix, name)
    )
    queue = reads.resolve(request.user, connection, prefix, name)
    outcome = operations.perform(
        user=request.user, via="page", action=found, queue=queue, given=found.parse(request.POST)
    )
    if not outcome.ok:
        return result(request, ok=False, message=outcome.message, status=409)
    return preview_response(request, queue, envelope_message=translate(outcome.message))


def preview_response(request, queue, *, envelope_message: str = ""):
    """The preview of a bulk form's POST (also after an envelope confirmation)."""
    triage.refuse_blind_retry(request.POST)
    given = BulkInput.from_params(request.POST, confirming=False)
    if given.action == "clean":
        # Clean is previewed like the bulk actions (same filter, by age) but runs at once.
        age = minutes_from(request.POST)
        chosen = Selection(state=given.selection.state, finished_to_ms=operations.now_ms() - age * 60_000)
        preview = operations.bulk_preview(queue=queue, action="discard", chosen=chosen)
        preview.action, preview.selection = "clean", chosen
        context = {"queue": queue, "preview": preview, "older_than_minutes": age}
    else:
        preview = operations.bulk_preview(queue=queue, action=given.action, chosen=given.selection, patch=given.patch)
        is_dlq = is_dead_letter_queue(queue.name)
        context = {
            "queue": queue,
            "preview": preview,
            "default_rate": int(DEFAULT_RATE),
            "is_dlq": is_dlq,
        }
        if is_dlq and given.action == "redrive":  # what the source queue will receive, and the envelope
            context["redrive"] = dlq_envelopes.redrive_sample(queue, [j.id for j in preview.sample])
            context["may_confirm_envelope"] = has_role(request.user, ADMIN, queue)
            context["envelope_message"] = envelope_message
    return render(request, "actions/bulk_preview.html", context)


@operator_post
def bulk_start(request, connection, prefix, name):
    queue = reads.resolve(request.user, connection, prefix, name)
    given = BulkInput.from_params(request.POST, confirming=True)
    task = operations.bulk_start(
        user=request.user,
        via="page",
        queue=queue,
        action=given.action,
        chosen=given.selection,
        reason=given.reason,
        rate=given.rate,
        reset_counters=given.reset_counters,
        patch=given.patch,
    )
    return render(request, "actions/task.html#task-panel", {"task": task})


def task_queue_of(task: BulkTask | None):
    return operations.task_queue(task) if task is not None else None


@require_GET
def task_list(request):
    """Bulk tasks, pending and running first, then the most recent."""
    tasks = operations.visible_tasks(request.user)
    active = tasks.filter(state__in=BulkTask.ACTIVE_STATES).order_by("pk")
    recent = tasks.exclude(state__in=BulkTask.ACTIVE_STATES).order_by("-pk")[:50]
    return render(request, "actions/tasks.html", {"active": active, "recent": recent})


@require_GET
def task_detail(request, task_id):
    task = get_object_or_404(operations.visible_tasks(request.user), pk=task_id)
    return render(
        request,
        "actions/task.html",
        {"task": task, "queue": operations.task_queue(task), "selection": Selection.from_stored(task.selection)},
    )


@require_POST
def task_cancel(request, task_id):
    # The operator role on the task's queue; writes nothing to Redis: allowed in read-only
    # mode, the emergency brake. A task on a queue outside the user's scope is not found.
    task = BulkTask.objects.filter(pk=task_id).first()
    try:
        require(request.user, role=OPERATOR, target=f"{request.method} {request.path}", queue=task_queue_of(task))
    except QueueNotFound:
        raise Http404 from None
    if task is None:
        raise Http404
    if not operations.task_cancel(user=request.user, via="page", task=task):
        return result(request, ok=False, message=f"Task {task.pk} has already {task.state}.", status=409)
    task.refresh_from_db()
    return render(request, "actions/task.html#task-progress", {"task": task})


@require_GET
@page_errors
def queue_error_groups(request, connection, prefix, name):
    queue = reads.resolve(request.user, connection, prefix, name)
    found = (
        get_registry()
        .jobs(connection)
        .error_groups(queue, scan_limit=settings.QUEUEWATCH_SCAN_SAMPLE, redactor=get_redactor())
    )
    return render(
        request,
        "actions/error_groups.html",
        {
            "queue": queue,
            "groups": found.groups,
            "found": found,
            "triaged": triage.triaged(found.groups),
            "is_dlq": is_dead_letter_queue(queue.name),
        },
    )


@require_GET
@page_errors
@refusals
def queue_export(request, connection, prefix, name):
    return export_response(request, connection, prefix, name)


@require_GET
def audit_log(request):
    rows = audit.filtered(request.GET, only=scopes.audit_filter(request.user))
    page = Paginator(rows, 50).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "actions/audit.html",
        {
            "page": page,
            "filters": request.GET,
            "query": query.urlencode(),
            "outcomes": [o for o, _ in AuditEntry.OUTCOMES],
        },
    )


@require_GET
@page_errors
def audit_csv(request):
    response = streaming.download(
        request,
        audit.csv_lines(audit.filtered(request.GET, only=scopes.audit_filter(request.user))),
        content_type="text/csv; charset=utf-8",
    )
    response["Content-Disposition"] = 'attachment; filename="queuewatch-audit.csv"'
    return response
