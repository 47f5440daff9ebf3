"""JSON API v1 for every action: the same operations, roles, read-only switch and audit as
the pages. POST with a JSON (or form-encoded) body.

Bearer-token calls carry no cookies, so they are exempt from CSRF; a call authenticated by a
session cookie instead must pass Django's CSRF check like any form post. Refusals are JSON:
401 unauthenticated, 403 wrong role / read-only / CSRF, 400 bad input, 404 unknown queue or job,
409 a conflicting state (already running, locked job…), 503 Redis unreachable.
"""

from __future__ import annotations

import functools
import json

from django.http import QueryDict
from django.middleware.csrf import CsrfViewMiddleware
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from dashboard.actions import services as operations
from dashboard.browse import selectors as reads
from dashboard.browse.api import api_auth
from dashboard.errors import JsonResponse, api_errors
from dashboard.actions.models import BulkTask
from dashboard.accounts.roles import OPERATOR, has_role, read_only
from dashboard.actions.views import export_response


def _forbidden(message: str) -> JsonResponse:
    return JsonResponse({"error": "forbidden", "message": message}, status=403)


def api_mutation(view):
    """POST only; bearer token or session (+CSRF); operator role; refused in read-only mode;
    bad input as 400 JSON."""

    @csrf_exempt  # checked below for cookie sessions only
    @api_auth  # before the method check: anonymous callers get 401 whatever the method
    @require_POST
    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.headers.get("Authorization", "").startswith("Bearer "):
            refusal = CsrfViewMiddleware(lambda r: None).process_view(request, None, (), {})
            if refusal is not None:
                return _forbidden("CSRF check failed: send the X-CSRFToken header, or use a bearer token.")
        if not has_role(request.user, OPERATOR):
            return _forbidden("This needs the operator role.")
        if read_only():
            return _forbidden("Queuewatch is in read-only mode (QUEUEWATCH_READ_ONLY).")
        try:
            request.body_params = body_params(request)
            return api_errors(view)(request, *args, **kwargs)
        except operations.ActionRefused as exc:
            return JsonResponse({"error": "bad_request", "message": str(exc)}, status=400)

    return wrapper


def body_params(request):
    """The POST body as a mapping: JSON objects as they are, forms as a QueryDict."""
    if request.content_type == "application/json":
        try:
            data = json.loads(request.body or b"{}")
        except ValueError:
            raise operations.ActionRefused("The body is not valid JSON.") from None
        if not isinstance(data, dict):
            raise operations.ActionRefused("The body must be a JSON object.")
        return data
    return request.POST if request.POST else QueryDict()


def flag(value, default: bool) -> bool:
    if value in (None, ""):
        return default
    return value is True or str(value).lower() in ("1", "true", "yes", "on")


@api_mutation
def job_action(request, connection, prefix, name, action, job_id):
    queue = reads.resolve(connection, prefix, name)
    params = request.body_params
    reason = params.get("reason") or ""
    if action in ("discard", "redrive"):
        reason = operations.clean_reason(reason)
    result = operations.job_action(user=request.user, via="api", queue=queue, job_id=job_id, action=action,
                                   reset_counters=flag(params.get("reset_counters"), True), reason=str(reason).strip())
    body = {"job_id": result.job_id, "outcome": result.outcome, "message": result.message}
    return JsonResponse(body, status=200 if result.ok else 409)


@api_mutation
def queue_action(request, connection, prefix, name, action):
    queue = reads.resolve(connection, prefix, name)
    params = request.body_params
    reason = str(params.get("reason") or "").strip()
    older_than_ms = None
    if action == "clean":
        reason = operations.clean_reason(reason)
        try:
            older_than_ms = int(params.get("older_than_minutes")) * 60_000
        except (TypeError, ValueError):
            raise operations.ActionRefused("'older_than_minutes' must be a whole number of minutes.") from None
    result = operations.queue_action(user=request.user, via="api", queue=queue, action=action,
                                     state=str(params.get("state") or ""), older_than_ms=older_than_ms, reason=reason)
    return JsonResponse({"outcome": result.outcome, "message": result.message, "affected": result.affected},
                        status=200 if result.ok else 409)


@api_mutation
def bulk_preview(request, connection, prefix, name):
    queue = reads.resolve(connection, prefix, name)
    params = request.body_params
    preview = operations.bulk_preview(queue=queue, action=str(params.get("action") or ""),
                                      chosen=operations.Selection.from_params(params))
    return JsonResponse({"action": preview.action, "selection": preview.selection.as_dict(), "count": preview.count,
                         "sample": [j.as_dict() for j in preview.sample]})


@api_mutation
def bulk_start(request, connection, prefix, name):
    queue = reads.resolve(connection, prefix, name)
    params = request.body_params
    try:
        task = operations.bulk_start(
            user=request.user, via="api", queue=queue, action=str(params.get("action") or ""),
            chosen=operations.Selection.from_params(params), reason=params.get("reason") or "",
            rate=operations.parse_rate(params.get("rate")), reset_counters=flag(params.get("reset_counters"), True))
    except operations.TaskAlreadyRunning as exc:
        return JsonResponse({"error": "conflict", "message": str(exc), "task": exc.task.pk if exc.task else None}, status=409)
    return JsonResponse(task_body(task), status=202)


@require_GET
@api_auth
@api_errors
def export(request, connection, prefix, name):
    """The page's export (``views_actions.export_response``) for scripts: bearer token, JSON errors."""
    return export_response(request, connection, prefix, name)


def _no_task(task_id) -> JsonResponse:
    return JsonResponse({"error": "not_found", "message": f"No bulk task {task_id}."}, status=404)


@require_GET
@api_auth
def task_detail(request, task_id):
    task = BulkTask.objects.filter(pk=task_id).first()
    return JsonResponse(task_body(task)) if task else _no_task(task_id)


@api_mutation
def task_cancel(request, task_id):
    task = BulkTask.objects.filter(pk=task_id).first()
    if task is None:
        return _no_task(task_id)
    if not operations.task_cancel(user=request.user, via="api", task=task):
        return JsonResponse({"error": "conflict", "message": f"Task {task.pk} has already {task.state}."}, status=409)
    task.refresh_from_db()
    return JsonResponse(task_body(task))


def task_body(task: BulkTask) -> dict:
    return {
        "id": task.pk, "action": task.action, "connection": task.connection, "prefix": task.prefix,
        "queue": task.queue, "selection": task.selection, "before_ms": task.before_ms, "rate": task.rate,
        "state": task.state, "cancel_requested": task.cancel_requested, "total": task.total, "moved": task.moved,
        "skipped": task.skipped, "failed": task.failed, "remaining": task.remaining, "rate_now": task.rate_now,
        "eta_s": task.eta_s, "percent": task.percent, "error": task.error or None,
    }
