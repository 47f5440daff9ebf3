"""Background searches by data: started from a queue's "Find by data" page (or the API), run
by the monitor with the page closed (``search_runner``), listed under "My searches", each with
its progress and the matches found so far. Owner-only: another user's search is "not found"."""

from __future__ import annotations

from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from dashboard.accounts.api_calls import api_post, body_params
from dashboard.accounts.auth import api_auth
from dashboard.browse import search_tasks
from dashboard.browse import selectors as reads
from dashboard.browse.find_views import parse_query
from dashboard.browse.models import SearchTask
from dashboard.browse.search_runner import search_queue
from dashboard.web.errors import Conflict, InvalidInput, JsonResponse, api_errors, page_errors
from dashboard.web.htmx import vary_on_htmx, wants_fragment
from queues.states import BROWSABLE_STATES

DETAIL = "browse/search_task.html"


@require_POST
@page_errors
def search_start(request, connection, prefix, name):
    """From the find page's form: the search is stored and the user taken to its page."""
    queue = reads.resolve(request.user, connection, prefix, name)
    state = request.POST.get("state", "failed")
    state = state if state in BROWSABLE_STATES else "failed"
    text, query, bad = parse_query(request.POST.get("where", ""))
    context = {"queue": queue, "state": state, "states": BROWSABLE_STATES, "where": text, "bad_query": bad}
    if query is None:
        context["bad_query"] = bad or context["bad_query"]
        return render(request, "browse/queue_find.html", context, status=400)
    try:
        task = search_tasks.start(request.user, queue, state, query)
    except search_tasks.TooManySearches as exc:
        context["bad_query"] = exc.message()
        return render(request, "browse/queue_find.html", context, status=409)
    return redirect("search", search_id=task.pk)


@require_GET
def search_list(request):
    rows = search_tasks.own(request.user)
    active = rows.filter(state__in=SearchTask.ACTIVE_STATES).order_by("pk")
    recent = rows.exclude(state__in=SearchTask.ACTIVE_STATES).order_by("-pk")[:50]
    return render(request, "browse/searches.html", {"active": active, "recent": recent})


@require_GET
def search_detail(request, search_id):
    task = get_object_or_404(search_tasks.own(request.user), pk=search_id)
    context = {"task": task, "queue": search_queue(task)}
    if wants_fragment(request):  # the panel's own refresh while the search runs
        return vary_on_htmx(render(request, DETAIL + "#search-panel", context))
    return vary_on_htmx(render(request, DETAIL, context))


@require_POST
def search_cancel(request, search_id):
    task = get_object_or_404(search_tasks.own(request.user), pk=search_id)
    search_tasks.cancel(task)
    if wants_fragment(request):
        task.refresh_from_db()
        return vary_on_htmx(render(request, DETAIL + "#search-panel", {"task": task, "queue": search_queue(task)}))
    return redirect("search", search_id=task.pk)


# --- the API ------------------------------------------------------------------------------------


@api_post
def api_search_start(request, connection, prefix, name):
    """``POST …/searches`` with ``{"state": "failed", "where": "customer.id = cus_57e8"}``: 201
    and the search as ``GET /api/v1/searches/<id>`` shows it."""
    queue = reads.resolve(request.user, connection, prefix, name)
    body = body_params(request)
    state = str(body.get("state") or "failed")
    if state not in BROWSABLE_STATES:
        raise InvalidInput(f"Unknown state '{state}'. Choose one of: {', '.join(BROWSABLE_STATES)}.")
    _text, query, bad = parse_query(str(body.get("where") or ""))
    if query is None:
        raise InvalidInput(bad or 'Give a data query: {"where": "customer.id = cus_57e8"}')
    try:
        task = search_tasks.start(request.user, queue, state, query)
    except search_tasks.TooManySearches as exc:
        raise Conflict(str(exc)) from None
    return JsonResponse(search_tasks.as_dict(task), status=201)


@require_GET
@api_auth
@api_errors
def api_search_list(request):
    rows = search_tasks.own(request.user).order_by("-pk")[:100]
    return JsonResponse({"searches": [search_tasks.as_dict(t) for t in rows]})


def _not_found(search_id) -> JsonResponse:
    return JsonResponse({"error": "not_found", "message": f"No search {search_id}."}, status=404)


@require_GET
@api_auth
@api_errors
def api_search_detail(request, search_id):
    task = search_tasks.own(request.user).filter(pk=search_id).first()
    return JsonResponse(search_tasks.as_dict(task)) if task else _not_found(search_id)


@api_post
def api_search_cancel(request, search_id):
    task = search_tasks.own(request.user).filter(pk=search_id).first()
    if task is None:
        return _not_found(search_id)
    if not search_tasks.cancel(task):
        return JsonResponse({"error": "conflict", "message": f"Search {task.pk} has already {task.state}."}, status=409)
    task.refresh_from_db()
    return JsonResponse(search_tasks.as_dict(task))
