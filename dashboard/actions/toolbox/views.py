"""Pages of the operator toolbox that are more than a button: the add-job form, the
edit-and-retry form with its diff preview, the queue settings page, the scheduler edit form
and the legacy-repeat migration preview; and the API's
``POST …/jobs`` (add a job). Every change still goes through the registered action
(``registry.authorized`` for the role and read-only mode, ``services.perform`` for the audit),
posted to the usual ``actions/<action>`` and ``act/<action>/<job_id>`` URLs.
"""

from __future__ import annotations

import json
import time

from django.contrib.auth.decorators import login_not_required
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods

from dashboard.accounts.auth import OPERATOR, VIEWER, role_required
from dashboard.actions import edit_limits, job_schemas, registry, scheduler_actions
from dashboard.actions import services as operations
from dashboard.actions.api import api_post, body_params
from dashboard.actions.toolbox import runners as toolbox_runners
from dashboard.actions.toolbox.inputs import EditRetryInput
from dashboard.actions.toolbox.scheduler_form import form_dates, option_names
from dashboard.actions.views import action_post
from dashboard.browse import api as browse_api
from dashboard.browse import selectors as reads
from dashboard.connections.registry import get_redactor, get_registry
from dashboard.core.i18n import translate
from dashboard.web.errors import InvalidInput, JsonResponse, page_errors
from queues import edit_growth
from queues.job_options import BACKOFF_TYPES
from queues.keys import QueueRef


@require_GET
@role_required(OPERATOR, mutates_redis=True)
@page_errors
def add_job_page(request, connection, prefix, name):
    """The add form; it posts to the registered ``add`` action. Not under ``jobs/<id>``: a job may be called "new"."""
    queue = reads.resolve(request.user, connection, prefix, name)
    return render(
        request,
        "actions/add_job.html",
        {"queue": queue, "backoff_types": BACKOFF_TYPES, "job_schema": job_schemas.stored(queue)},
    )


@require_GET
@role_required(OPERATOR, mutates_redis=True)
@page_errors
def edit_retry_page(request, connection, prefix, name, job_id):
    """A failed job's data (as the job page shows it: redacted) and a merge-patch form."""
    queue = reads.resolve(request.user, connection, prefix, name)
    data = toolbox_runners.shown_data(queue, job_id)
    return render(
        request, "actions/edit_retry.html", {"queue": queue, "job_id": job_id, "data": data, "exists": data is not None}
    )


@action_post
def edit_retry_preview(request, connection, prefix, name, job_id):
    """The diff the patch would make to the stored data (secrets redacted), and the confirm form
    carrying the fingerprint of that data. Changes nothing."""
    registry.authorized(request.user, scope=registry.JOB, name="edit-retry", queue=QueueRef(connection, prefix, name))
    queue = reads.resolve(request.user, connection, prefix, name)
    given = EditRetryInput.from_params(request.POST)
    plan = toolbox_runners.edit_plan(get_registry().source(connection), queue=queue, job_id=job_id, patch=given.patch)
    too_big = edit_growth.job_refusal(plan.growth, edit_limits.bounds(), job_id=job_id)
    return render(
        request,
        "actions/partials/edit_preview.html",
        {
            "queue": queue,
            "job_id": job_id,
            "plan": plan,
            "diff": plan.diff(get_redactor().value),
            "patch": request.POST.get("patch", ""),
            "keep_counters": not given.reset_counters,
            "refusals": [translate(r) for r in plan.refusals],
            "too_big": translate(too_big) if too_big else "",
        },
    )


@require_GET
@role_required(VIEWER)
@page_errors
def settings_page(request, connection, prefix, name):
    """Global concurrency, rate limit (and whether it bites now), and drain/obliterate with
    counts of what they would remove. The forms are drawn for admins only."""
    queue = reads.resolve(request.user, connection, prefix, name)
    now = get_registry().commands(connection).settings(queue)
    return render(
        request,
        "actions/queue_settings.html",
        {"queue": queue, "settings": now, "job_schema": job_schemas.stored(queue)},
    )


@login_not_required  # both views answer 401 themselves (api_auth)
@csrf_exempt  # the POST view checks CSRF itself for session callers (api_csrf)
@require_http_methods(["GET", "POST"])
def jobs_collection(request, connection, prefix, name):
    """``GET`` lists jobs (the read API); ``POST`` adds one: ``{"name", "data", "opts"}``."""
    if request.method == "GET":
        return browse_api.jobs(request, connection, prefix, name)
    return add_job_api(request, connection, prefix, name)


@api_post
def add_job_api(request, connection, prefix, name):
    """201 ``{"id"}`` when added; 200 ``{"id", "created": false, "reason"}`` when BullMQ answered
    with an existing job (same id: "duplicated"; a deduplication hit: "deduplicated")."""
    found = registry.authorized(
        request.user, scope=registry.QUEUE, name="add", queue=QueueRef(connection, prefix, name)
    )
    queue = reads.resolve(request.user, connection, prefix, name)
    result = operations.perform(
        user=request.user, via="api", action=found, queue=queue, given=found.parse(body_params(request))
    )
    if result.ok:
        return JsonResponse({"id": result.body["id"]}, status=201)
    return JsonResponse({**result.body, "message": result.message}, status=200)


# --- job schedulers: the edit form and the migration preview --------------------------------


@require_GET
@role_required(OPERATOR, mutates_redis=True)
@page_errors
def scheduler_edit_page(request, connection, prefix, name, scheduler_id):
    """A scheduler's definition as stored, in a form posting to ``actions/edit-scheduler``;
    and the remove form (``actions/remove-scheduler``)."""
    queue = reads.resolve(request.user, connection, prefix, name)
    stored = get_registry().schedulers(connection)
    spec = stored.spec(queue, scheduler_id=scheduler_id)
    opts = json.dumps(spec.opts, indent=2) if spec else "{}"
    # The zone its pattern runs in, as listed (a pattern without ``tz``: the workers' zone).
    listed = next((s for s in stored.list(queue) if s.id == scheduler_id), None) if spec else None
    zone = listed.zone if listed else None
    # Dates are shown and typed in the scheduler's own zone, else the workers' (not epoch ms).
    dates_tz = (spec.tz if spec else "") or (zone.name if zone else "") or "UTC"
    return render(
        request,
        "actions/edit_scheduler.html",
        {
            "queue": queue,
            "scheduler_id": scheduler_id,
            "spec": spec,
            "opts_json": opts,
            "zone": zone,
            "dates_tz": dates_tz,
            **form_dates(spec, dates_tz),
            "prev_next": listed.next_run if listed else None,
            "template_options": option_names(),
        },
    )


@require_GET
@role_required(OPERATOR, mutates_redis=True)
@page_errors
def migrate_repeat_page(request, connection, prefix, name):
    """What migrating legacy entry ``?member=`` will do, before it is done; the confirm form
    posts to ``actions/migrate-repeat``."""
    queue = reads.resolve(request.user, connection, prefix, name)
    member, chosen = request.GET.get("member", ""), request.GET.get("id", "")
    plan, refused = None, ""
    try:
        plan = scheduler_actions.migration_plan(
            get_registry().source(connection), queue=queue, member=member, scheduler_id=chosen
        )
    except InvalidInput as exc:
        refused = str(exc)
    now_ms = int(time.time() * 1000)
    return render(
        request,
        "actions/migrate_repeat.html",
        {
            "queue": queue,
            "member": member,
            "plan": plan,
            "refused": refused,
            "next_run": plan.next_run(now_ms=now_ms) if plan else None,
            "zone": plan.zone if plan else None,
            "template_opts": json.dumps(plan.spec.opts) if plan else "",
        },
    )
