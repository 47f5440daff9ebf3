"""A job scheduler's own page (its definition, template, zone, pending iteration and last run,
the runs to come, and for operators "run now" and the edit link), the create form, and the
preview of the runs a form would schedule. Changes still go through the registered actions
(``actions/create-scheduler``, ``actions/run-scheduler``: roles, CSRF and the audit)."""

from __future__ import annotations

import json
import time

from django.conf import settings
from django.http import Http404
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from dashboard.accounts.auth import OPERATOR, api_auth, role_required
from dashboard.actions import scheduler_actions
from dashboard.actions.toolbox.scheduler_form import option_names
from dashboard.browse import selectors as reads
from dashboard.connections.registry import get_redactor, get_registry
from dashboard.web.errors import InvalidInput, JsonResponse, api_errors, page_errors
from queues import cron, scheduler_runs
from queues.errors import NotOffered
from queues.jobs import prepare_payload
from queues.safe_json import parse_json
from queues.text import to_int


def _shown(raw: str) -> str:
    """Template data or options for a page any viewer may read, as a job's are shown: secrets
    redacted, capped at ``QUEUEWATCH_PAYLOAD_CAP``, text that is not JSON shown as text."""
    return prepare_payload(raw, cap=settings.QUEUEWATCH_PAYLOAD_CAP, redactor=get_redactor()).text


def _value(raw: str, redactor):
    """Template data for the API: the value, redacted (the redacted text if it is not JSON)."""
    ok, value = parse_json(raw)
    return redactor.value(value) if ok else redactor.text(raw)


@require_GET
@page_errors
def scheduler_page(request, connection, prefix, name, scheduler_id):
    queue = reads.resolve(request.user, connection, prefix, name)
    facet = get_registry().schedulers(connection)
    detail = facet.detail(queue, scheduler_id=scheduler_id)
    if detail is None:
        raise Http404(_("There is no job scheduler %(id)s in this queue.") % {"id": scheduler_id})
    s = detail.scheduler
    now_ms = int(time.time() * 1000)
    upcoming = []
    if not s.finished and not s.legacy and s.next_run is not None:
        # The runs after the pending one, as the workers will schedule them.
        upcoming = scheduler_runs.preview_runs(
            pattern=s.pattern,
            every=s.every,
            zone_name=s.pattern_tz,
            start_date=None,
            end_date=s.end_date,
            limit=None if s.limit is None else max(s.limit - (s.iterations or 0), 0),
            offset=None,
            immediately=False,
            now_ms=s.next_run,
            stored=(s.every, s.next_run) if s.every else None,
        )
        upcoming = [at for at in upcoming if at > s.next_run]
    spec = detail.spec
    return render(
        request,
        "browse/scheduler.html",
        {
            "queue": queue,
            "s": s,
            "detail": detail,
            "spec": spec,
            "template_data": _shown(spec.data_json) if spec else "",
            "template_opts": _shown(json.dumps(spec.opts, ensure_ascii=False)) if spec else "",
            "upcoming": upcoming,
            "editable": getattr(facet, "edits", True) and not s.legacy,
            "now_ms": now_ms,
        },
    )


@require_GET
@api_auth
@api_errors
def scheduler_api(request, connection, prefix, name, scheduler_id):
    """One scheduler as its page shows it: ``schedulers_list``'s entry, plus its template (data
    and options, secrets redacted; ``null`` where the kind does not read it) and its pending
    iteration and last run (``{"job_id", "due", "state"}`` or ``null``)."""
    queue = reads.resolve(request.user, connection, prefix, name)
    detail = get_registry().schedulers(connection).detail(queue, scheduler_id=scheduler_id)
    if detail is None:
        message = _("There is no job scheduler %(id)s in this queue.") % {"id": scheduler_id}
        return JsonResponse({"error": "not_found", "message": message}, status=404)
    spec, redactor = detail.spec, get_redactor()
    template = (
        {"name": spec.name, "data": _value(spec.data_json, redactor), "opts": redactor.value(spec.opts)}
        if spec
        else None
    )

    def iteration(found):
        return {"job_id": found.job_id, "due": found.due, "state": found.state or None} if found else None

    return JsonResponse(
        {
            **detail.scheduler.as_dict(),
            "start_date": detail.scheduler.start_date,
            "end_date": detail.scheduler.end_date,
            "template": template,
            "pending": iteration(detail.pending),
            "last_run": iteration(detail.last_run),
        }
    )


@require_GET
@role_required(OPERATOR, mutates_redis=True)
@page_errors
def scheduler_create_page(request, connection, prefix, name):
    """The create form (``actions/create-scheduler``); "not offered" where the kind has no edits."""
    queue = reads.resolve(request.user, connection, prefix, name)
    facet = get_registry().schedulers(connection)
    if not getattr(facet, "edits", True):
        raise NotOffered(connection=connection, kind=getattr(facet, "kind", ""), facet=_("job scheduler edits"))
    zone = facet.workers_zone(queue)
    return render(
        request,
        "actions/create_scheduler.html",
        {
            "queue": queue,
            "zone": zone,
            "dates_tz": zone.name if zone else "UTC",
            "template_options": option_names(),
        },
    )


@require_GET
@page_errors
def scheduler_preview(request, connection, prefix, name):
    """The runs the scheduler form's fields would schedule if saved now (an htmx fragment)."""
    queue = reads.resolve(request.user, connection, prefix, name)
    params = request.GET.copy()
    for key, fallback in (("id", "preview"), ("name", "preview")):
        if not params.get(key):
            params[key] = fallback
    runs, zone, refused, zone_name = [], None, "", "UTC"
    try:
        spec = scheduler_actions.spec_from(params)
        zone = None
        if spec.pattern:
            editing = spec.scheduler_id if params.get("prev_next") else ""
            facet = get_registry().schedulers(connection)
            zone = facet.workers_zone(queue, scheduler_id=editing) if not spec.tz else None
        stored_every, stored_next = to_int(params.get("prev_every")), to_int(params.get("prev_next"))
        zone_name = spec.tz or (zone.name if zone else "") or spec_dates_zone(params)
        times = scheduler_runs.preview_runs(
            pattern=spec.pattern,
            every=spec.every,
            zone_name=zone_name,
            start_date=spec.start_date,
            end_date=spec.end_date,
            limit=spec.limit,
            offset=spec.offset,
            immediately=spec.immediately,
            now_ms=int(time.time() * 1000),
            stored=(stored_every, stored_next) if stored_every and stored_next else None,
        )
        runs = [(at, scheduler_runs.local_text(at, zone_name).replace("T", " ")) for at in times]
    except InvalidInput as exc:
        refused = exc.args[0] if exc.args else str(exc)  # a marked message: translated on the page
    empty = not params.get("pattern", "").strip() and not params.get("every", "").strip()
    return render(
        request,
        "browse/scheduler_preview.html",
        {"runs": runs, "zone": zone, "zone_name": zone_name, "refused": refused, "empty": empty},
    )


def spec_dates_zone(params) -> str:
    """The zone the form's dates were typed in: an ``every`` scheduler's runs are shown there."""
    name = str(params.get("dates_tz") or "UTC")
    try:
        cron.zone(name)
    except cron.CronError:
        return "UTC"
    return name
