"""Pages and htmx endpoints for acting on jobs: per-job and per-queue actions, choosing jobs
(checkboxes, filters, error groups), preview and confirm, background task progress, export
and the audit log. Each view checks the role, parses input, calls ``dashboard.actions.services``
(which audits) and renders a small result."""

from __future__ import annotations

import datetime as dt
import functools

from django.core.paginator import Paginator
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_POST

from dashboard.actions import audit
from dashboard.actions import services as operations
from dashboard.browse import selectors as reads
from dashboard.errors import page_errors
from dashboard.htmx import vary_on_htmx, wants_fragment
from dashboard.actions.models import AuditEntry, BulkTask
from dashboard.registry import get_redactor, get_registry, redis_errors
from dashboard.accounts.roles import OPERATOR, VIEWER, role_required
from dashboard.live.rates import is_dead_letter_queue
from queues import error_groups, export
from queues.errors import JobNotFound

RESULT = "actions/action_result.html"


def result(request, *, ok: bool, message: str, status: int = 200):
    """The outcome of an action: a fragment for htmx (always 200, so htmx swaps it in and the
    user reads why), a small page otherwise (with a 4xx status when refused)."""
    context = {"ok": ok, "message": message}
    if wants_fragment(request):
        return vary_on_htmx(render(request, RESULT + "#result", context))
    return vary_on_htmx(render(request, RESULT, context, status=status if not ok else 200))


def refusals(view):
    """Bad input and refusals become a clear message instead of an error page."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except operations.ActionRefused as exc:
            return result(request, ok=False, message=str(exc), status=400)
        except JobNotFound as exc:
            return result(request, ok=False, message=str(exc), status=404)

    return wrapper


def operator_post(view):
    """An htmx/form POST that changes the monitored Redis: operator role, not read-only (CSRF
    by the middleware), unknown queues and Redis outages as error pages, refusals as messages."""
    return require_POST(role_required(OPERATOR, mutates_redis=True)(page_errors(refusals(view))))


@operator_post
def job_action(request, connection, prefix, name, action, job_id):
    queue = reads.resolve(connection, prefix, name)
    reason = request.POST.get("reason", "")
    if action in ("discard", "redrive"):  # destructive or moving across queues: say why
        reason = operations.clean_reason(reason)
    outcome = operations.job_action(user=request.user, via="page", queue=queue, job_id=job_id, action=action,
                                    reset_counters=request.POST.get("keep_counters") != "1", reason=reason.strip())
    return result(request, ok=outcome.ok, message=outcome.message, status=409)


@operator_post
def queue_action(request, connection, prefix, name, action):
    queue = reads.resolve(connection, prefix, name)
    reason = request.POST.get("reason", "").strip()
    older_than_ms = None
    if action == "clean":
        reason = operations.clean_reason(reason)
        older_than_ms = minutes_param(request.POST.get("older_than_minutes")) * 60_000
    outcome = operations.queue_action(user=request.user, via="page", queue=queue, action=action,
                                      state=request.POST.get("state", ""), older_than_ms=older_than_ms, reason=reason)
    return result(request, ok=outcome.ok, message=outcome.message, status=409)


def minutes_param(value) -> int:
    try:
        minutes = int(str(value).strip())
    except (TypeError, ValueError):
        raise operations.ActionRefused("The age must be a whole number of minutes.") from None
    if minutes < 0:
        raise operations.ActionRefused("The age must be 0 minutes or more.")
    return minutes


def chosen_from(request) -> operations.Selection:
    """The selection of a bulk form: ticked ids, unless "all matching this filter" was pressed."""
    chosen = operations.Selection.from_params(request.POST)
    if request.POST.get("scope") == "matching":
        chosen.ids = []
    elif request.POST.get("scope") == "selected" and not chosen.ids:
        raise operations.ActionRefused("No jobs are ticked. Tick some, or choose “all matching this filter”.")
    return chosen


@operator_post
def bulk_preview(request, connection, prefix, name):
    queue = reads.resolve(connection, prefix, name)
    action = request.POST.get("action", "")
    chosen = chosen_from(request)
    if action == "clean":
        # Clean is previewed like the bulk actions (same filter, by age) but runs at once.
        age = minutes_param(request.POST.get("older_than_minutes"))
        chosen = operations.Selection(state=chosen.state, finished_to_ms=operations.now_ms() - age * 60_000)
        preview = operations.bulk_preview(queue=queue, action="discard", chosen=chosen)
        preview.action, preview.selection = "clean", chosen
        context = {"queue": queue, "preview": preview, "older_than_minutes": age}
    else:
        preview = operations.bulk_preview(queue=queue, action=action, chosen=chosen)
        context = {"queue": queue, "preview": preview, "default_rate": int(operations.DEFAULT_RATE),
                   "is_dlq": is_dead_letter_queue(queue.name)}
    return render(request, "actions/bulk_preview.html", context)


@operator_post
def bulk_start(request, connection, prefix, name):
    queue = reads.resolve(connection, prefix, name)
    task = operations.bulk_start(
        user=request.user, via="page", queue=queue, action=request.POST.get("action", ""),
        chosen=operations.Selection.from_params(request.POST), reason=request.POST.get("reason", ""),
        rate=operations.parse_rate(request.POST.get("rate")), reset_counters=request.POST.get("keep_counters") != "1")
    return render(request, "actions/task.html#task-panel", {"task": task})


@require_GET
def task_list(request):
    """Bulk tasks, pending and running first, then the most recent."""
    active = BulkTask.objects.filter(state__in=BulkTask.ACTIVE_STATES).order_by("pk")
    recent = BulkTask.objects.exclude(state__in=BulkTask.ACTIVE_STATES).order_by("-pk")[:50]
    return render(request, "actions/tasks.html", {"active": active, "recent": recent})


@require_GET
@role_required(VIEWER)
def task_detail(request, task_id):
    task = get_object_or_404(BulkTask, pk=task_id)
    return render(request, "actions/task.html", {"task": task, "queue": operations.task_queue(task),
                                         "selection": operations.Selection.from_stored(task.selection)})


@require_POST
@role_required(OPERATOR, mutates_redis=True)
def task_cancel(request, task_id):
    task = get_object_or_404(BulkTask, pk=task_id)
    if not operations.task_cancel(user=request.user, via="page", task=task):
        return result(request, ok=False, message=f"Task {task.pk} has already {task.state}.", status=409)
    task.refresh_from_db()
    return render(request, "actions/task.html#task-progress", {"task": task})


@require_GET
@page_errors
def queue_error_groups(request, connection, prefix, name):
    queue = reads.resolve(connection, prefix, name)
    with redis_errors(connection):
        found = error_groups.error_groups(get_registry().client(connection), queue=queue)
    return render(request, "actions/error_groups.html", {"queue": queue, "groups": found.groups, "found": found,
                                                 "is_dlq": is_dead_letter_queue(queue.name)})


EXPORT_FORMATS = {"jsonl": ("application/x-ndjson; charset=utf-8", export.iter_jobs_jsonl),
                  "csv": ("text/csv; charset=utf-8", export.iter_jobs_csv)}


def export_response(request, connection: str, prefix: str, name: str) -> StreamingHttpResponse:
    """Jobs matching the query's filter (failed by default), streamed (memory stays flat however
    many jobs) and redacted. Shared by the page and the API."""
    queue = reads.resolve(connection, prefix, name)
    fmt = request.GET.get("format", "jsonl")
    if fmt not in EXPORT_FORMATS:
        raise operations.ActionRefused("Export format must be 'jsonl' or 'csv'.")
    chosen = operations.Selection.from_params(request.GET)
    content_type, writer = EXPORT_FORMATS[fmt]
    client = get_registry().client(connection)
    lines = writer(client, queue=queue, filt=chosen.job_filter(), before_ms=operations.now_ms(), redactor=get_redactor())
    response = StreamingHttpResponse(lines, content_type=content_type)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in queue.name)[:80]
    response["Content-Disposition"] = f'attachment; filename="{safe}-{chosen.state}-{stamp}.{fmt}"'
    return response


@require_GET
@page_errors
@refusals
def queue_export(request, connection, prefix, name):
    return export_response(request, connection, prefix, name)


@require_GET
def audit_log(request):
    rows = audit.filtered(request.GET)
    page = Paginator(rows, 50).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "actions/audit.html", {"page": page, "filters": request.GET, "query": query.urlencode(),
                                          "outcomes": [o for o, _ in AuditEntry.OUTCOMES]})


@require_GET
def audit_csv(request):
    response = StreamingHttpResponse(audit.csv_lines(audit.filtered(request.GET)), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="queuewatch-audit.csv"'
    return response
