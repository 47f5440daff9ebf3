"""JSON API v1 for every action: the same operations, roles, read-only switch and audit as
the pages. POST with a JSON (or form-encoded) body.

Bearer-token calls carry no cookies, so they are exempt from CSRF; a call authenticated by a
session cookie instead must pass Django's CSRF check like any form post. Refusals are JSON:
401 unauthenticated, 403 wrong role / read-only / CSRF, 400 bad input, 404 unknown queue or job,
409 a conflicting state (already running, locked job…), 503 a connection (or the dashboard Redis) unreachable.
"""

from __future__ import annotations

from django.views.decorators.http import require_GET

from dashboard.accounts.api_calls import api_post, body_params
from dashboard.accounts.auth import OPERATOR, api_auth, api_role_required, require
from dashboard.actions import registry, runners
from dashboard.actions import services as operations
from dashboard.actions.exporting import export_response
from dashboard.actions.inputs import BulkInput
from dashboard.actions.models import BulkTask
from dashboard.actions.views import task_queue_of
from dashboard.browse import selectors as reads
from dashboard.connections.registry import get_redactor
from dashboard.web.errors import JsonResponse, api_errors
from queues.errors import QueueNotFound
from queues.keys import QueueRef
from queues.messages import from_data


def api_mutation(view):
    """``api_post`` for the bulk endpoints: operator role, refused in read-only mode."""
    return api_post(api_role_required(OPERATOR, mutates_redis=True)(view))


@api_post
def job_action(request, connection, prefix, name, action, job_id):
    found = registry.authorized(request.user, scope=registry.JOB, name=action, queue=QueueRef(connection, prefix, name))
    queue = reads.resolve(request.user, connection, prefix, name)
    result = operations.perform(
        user=request.user, via="api", action=found, queue=queue, job_id=job_id, given=found.parse(body_params(request))
    )
    body = {"job_id": job_id, "outcome": result.outcome, "message": result.message}
    if getattr(result, "kept", ()):  # a redrive: what the copy kept of the dead letter
        body["kept"] = list(result.kept)
    return JsonResponse(body, status=200 if result.ok else 409)


@api_post
def queue_action(request, connection, prefix, name, action):
    found = registry.authorized(
        request.user, scope=registry.QUEUE, name=action, queue=QueueRef(connection, prefix, name)
    )
    queue = reads.resolve(request.user, connection, prefix, name)
    result = operations.perform(
        user=request.user, via="api", action=found, queue=queue, given=found.parse(body_params(request))
    )
    return JsonResponse(
        {"outcome": result.outcome, "message": result.message, "affected": runners.affected_by(result)},
        status=200 if result.ok else 409,
    )


@api_mutation
def bulk_preview(request, connection, prefix, name):
    queue = reads.resolve(request.user, connection, prefix, name)
    given = BulkInput.from_params(body_params(request), confirming=False)
    preview = operations.bulk_preview(queue=queue, action=given.action, chosen=given.selection, patch=given.patch)
    body = {
        "action": preview.action,
        "selection": preview.selection.as_dict(),
        "count": preview.count,
        "sample": [j.as_dict() for j in preview.sample],
        "complete": preview.complete,
    }
    if not preview.complete:  # count is then of the first `examined` jobs of the state's `in_state`
        body.update(examined=preview.examined, in_state=preview.in_state)
    if preview.diffs is not None:  # edit-retry: the diff the patch makes to each sample job's stored data
        body["diffs"] = [{"job_id": job_id, "diff": lines} for job_id, lines in preview.diffs]
    if preview.growth is not None:  # edit-retry: bytes the patch adds to the jobs' data, and the bounds
        body["growth"] = preview.growth.as_dict()
    return JsonResponse(body)


@api_mutation
def bulk_start(request, connection, prefix, name):
    queue = reads.resolve(request.user, connection, prefix, name)
    given = BulkInput.from_params(body_params(request), confirming=True)
    task = operations.bulk_start(
        user=request.user,
        via="api",
        queue=queue,
        action=given.action,
        chosen=given.selection,
        reason=given.reason,
        rate=given.rate,
        reset_counters=given.reset_counters,
        patch=given.patch,
    )
    return JsonResponse(task_body(task), status=202)


@require_GET
@api_auth
@api_errors
def export(request, connection, prefix, name):
    """The page's export for scripts: bearer token, JSON errors."""
    return export_response(request, connection, prefix, name)


def _no_task(task_id) -> JsonResponse:
    return JsonResponse({"error": "not_found", "message": f"No bulk task {task_id}."}, status=404)


@require_GET
@api_auth
def task_detail(request, task_id):
    task = operations.visible_tasks(request.user).filter(pk=task_id).first()
    return JsonResponse(task_body(task)) if task else _no_task(task_id)


@api_post
def task_cancel(request, task_id):
    # The operator role on the task's queue; writes nothing to Redis: allowed in read-only
    # mode, the emergency brake. A task on a queue outside the caller's scope is not found.
    task = BulkTask.objects.filter(pk=task_id).first()
    try:
        require(request.user, role=OPERATOR, target=f"{request.method} {request.path}", queue=task_queue_of(task))
    except QueueNotFound:
        return _no_task(task_id)
    if task is None:
        return _no_task(task_id)
    if not operations.task_cancel(user=request.user, via="api", task=task):
        return JsonResponse({"error": "conflict", "message": f"Task {task.pk} has already {task.state}."}, status=409)
    task.refresh_from_db()
    return JsonResponse(task_body(task))


def task_body(task: BulkTask) -> dict:
    progress = task.progress or {}
    return {
        "id": task.pk,
        "action": task.action,
        "connection": task.connection,
        "prefix": task.prefix,
        "queue": task.queue,
        "selection": task.selection,
        "before_ms": task.before_ms,
        "rate": task.rate,
        "patch": get_redactor().value(task.patch) if task.patch else None,  # the patch may set a secret
        "state": task.state,
        "cancel_requested": task.cancel_requested,
        "total": task.total,
        "moved": task.moved,
        "skipped": task.skipped,
        "failed": task.failed,
        "remaining": task.remaining,
        "rate_now": task.rate_now,
        "eta_s": task.eta_s,
        "percent": task.percent,
        "error": task.error or None,
        # While a filter that reads jobs is still counting (total null): how far through the state.
        "examined": progress.get("examined", 0),
        "in_state": progress.get("in_state", 0),
        # Why jobs were left as they were: a count per reason, and the first few jobs' own words.
        "skipped_by": dict(progress.get("skipped_by") or {}),
        "refusals": [str(from_data(why)) for why in progress.get("refusals") or []],
    }
