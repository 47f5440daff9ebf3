"""JSON API v1 for every action: the same operations, roles, read-only switch and audit as
the pages. POST with a JSON (or form-encoded) body.

Bearer-token calls carry no cookies, so they are exempt from CSRF; a call authenticated by a
session cookie instead must pass Django's CSRF check like any form post. Refusals are JSON:
401 unauthenticated, 403 wrong role / read-only / CSRF, 400 bad input, 404 unknown queue or job,
409 a conflicting state (already running, locked job…), 503 a connection (or the dashboard Redis) unreachable.
"""

from __future__ import annotations

from django.http import QueryDict
from django.views.decorators.http import require_GET, require_POST

from dashboard.accounts.auth import OPERATOR, api_auth, api_csrf, api_role_required
from dashboard.actions import registry, runners
from dashboard.actions import services as operations
from dashboard.actions.exporting import export_response
from dashboard.actions.inputs import BulkInput
from dashboard.actions.models import BulkTask
from dashboard.browse import selectors as reads
from dashboard.connections.registry import get_redactor
from dashboard.web.errors import InvalidInput, JsonResponse, api_errors
from queues.messages import from_data
from queues.safe_json import MAX_DEPTH, JsonTooDeep, NonFiniteNumber, strict_loads


def api_post(view):
    """POST only; bearer token or session (+CSRF); errors as JSON. The role is the action's
    own (checked by the view through the registry) or ``api_mutation``'s."""
    return api_auth(require_POST(api_csrf(api_errors(view))))  # 401 before 405: anonymous callers learn nothing


def api_mutation(view):
    """``api_post`` for the bulk endpoints: operator role, refused in read-only mode."""
    return api_post(api_role_required(OPERATOR, mutates_redis=True)(view))


def body_params(request):
    """The POST body as a mapping: JSON objects as they are, forms as a QueryDict."""
    if request.content_type == "application/json":
        try:
            data = strict_loads(request.body or b"{}")
        except JsonTooDeep:
            raise InvalidInput(f"The body is nested more than {MAX_DEPTH} levels deep.") from None
        except NonFiniteNumber as exc:
            raise InvalidInput(f"The body holds {exc}, which is not a JSON number.") from None
        except ValueError:
            raise InvalidInput("The body is not valid JSON.") from None
        if not isinstance(data, dict):
            raise InvalidInput("The body must be a JSON object.")
        return data
    return request.POST if request.POST else QueryDict()


@api_post
def job_action(request, connection, prefix, name, action, job_id):
    found = registry.authorized(request.user, scope=registry.JOB, name=action)
    queue = reads.resolve(connection, prefix, name)
    result = operations.perform(
        user=request.user, via="api", action=found, queue=queue, job_id=job_id, given=found.parse(body_params(request))
    )
    body = {"job_id": job_id, "outcome": result.outcome, "message": result.message}
    if getattr(result, "kept", ()):  # a redrive: what the copy kept of the dead letter
        body["kept"] = list(result.kept)
    return JsonResponse(body, status=200 if result.ok else 409)


@api_post
def queue_action(request, connection, prefix, name, action):
    found = registry.authorized(request.user, scope=registry.QUEUE, name=action)
    queue = reads.resolve(connection, prefix, name)
    result = operations.perform(
        user=request.user, via="api", action=found, queue=queue, given=found.parse(body_params(request))
    )
    return JsonResponse(
        {"outcome": result.outcome, "message": result.message, "affected": runners.affected_by(result)},
        status=200 if result.ok else 409,
    )


@api_mutation
def bulk_preview(request, connection, prefix, name):
    queue = reads.resolve(connection, prefix, name)
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
    return JsonResponse(body)


@api_mutation
def bulk_start(request, connection, prefix, name):
    queue = reads.resolve(connection, prefix, name)
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
    task = BulkTask.objects.filter(pk=task_id).first()
    return JsonResponse(task_body(task)) if task else _no_task(task_id)


@api_post
@api_role_required(OPERATOR)  # writes nothing to Redis: allowed in read-only mode, the emergency brake
def task_cancel(request, task_id):
    task = BulkTask.objects.filter(pk=task_id).first()
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
