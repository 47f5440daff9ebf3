"""Finding a job: the header's search (by id across every queue, or a data query's queue
chooser), a queue's search by data, and their API (``dashboard.browse.finding``)."""

from __future__ import annotations

from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from dashboard.accounts.auth import api_auth
from dashboard.browse import finding, search_tasks
from dashboard.browse import selectors as reads
from dashboard.browse.params import int_param
from dashboard.core.i18n import translate
from dashboard.web.errors import InvalidInput, JsonResponse, api_errors, page_errors
from dashboard.web.htmx import vary_on_htmx, wants_fragment
from queues.data_search import BadQuery, DataQuery
from queues.errors import NotOffered
from queues.states import BROWSABLE_STATES

MAX_CHOOSER = 200  # queues a data query from the header offers to search in
MAX_SHOWN_ON = 500  # matches one "search on" shows before it waits for a click
MAX_BACKGROUND_SHOWN = 5  # of the user's background searches on the queue (all under "My searches")


def _query(request) -> tuple[str, DataQuery | None, str]:
    return parse_query(request.GET.get("where", ""))


def parse_query(typed: str) -> tuple[str, DataQuery | None, str]:
    """The typed data query (``where``), parsed, or the message saying what to type."""
    text = typed.strip()
    if not text:
        return "", None, ""
    try:
        return text, DataQuery.parse(text), ""
    except BadQuery as exc:
        return text, None, translate(str(exc))


@require_GET
@page_errors
def find(request):
    """``find``: an id, looked for in every queue the user sees; a ``path = value`` text also
    offers the queues to search by data (a data search needs a queue and a state)."""
    text = request.GET.get("find", "").strip()[: finding.MAX_JOB_ID]
    context: dict = {"q": text}
    if text:
        result = finding.find_by_id(request.user, text)
        complete = not result.bound_hit and not result.skipped
        if len(result.found) == 1 and complete and request.GET.get("list") != "1":
            q = result.found[0]
            return redirect(reverse("job", args=[q.connection, q.prefix, q.name, text]))
        context["by_id"] = result
        if "=" in text:
            try:
                context["data_query"] = DataQuery.parse(text).text()
            except BadQuery:
                pass
            else:
                queues, _skipped = finding.visible_queues(request.user)
                context["chooser"] = queues[:MAX_CHOOSER]
                context["chooser_more"] = max(0, len(queues) - MAX_CHOOSER)
    return render(request, "browse/find.html", context)


@require_GET
@page_errors
def queue_find(request, connection, prefix, name):
    queue = reads.resolve(request.user, connection, prefix, name)
    state = request.GET.get("state", "failed")
    state = state if state in BROWSABLE_STATES else "failed"
    text, query, bad = _query(request)
    context = {"queue": queue, "state": state, "states": BROWSABLE_STATES, "where": text, "bad_query": bad}
    if not wants_fragment(request):  # coming back: this queue's background searches, newest first
        context["background"] = (
            search_tasks.own(request.user)
            .filter(connection=queue.connection, prefix=queue.prefix, queue=queue.name)
            .order_by("-pk")[:MAX_BACKGROUND_SHOWN]
        )
    if query is not None:
        try:
            context["search"] = finding.search_data(
                queue, state, query=query, offset=int_param(request, "offset", 0, minimum=0)
            )
        except NotOffered as exc:
            context["not_offered"] = translate(exc.message)
    # "Search on": each next step comes as a fragment (its matches, the progress out of band) that
    # asks for the one after it while the page stays open.
    # It pauses after MAX_SHOWN_ON matches, so a page never grows without end.
    chained = request.GET.get("on") == "1" and "search" in context
    if chained:
        context["shown"] = int_param(request, "shown", 0, minimum=0) + len(context["search"].matches)
        context["on"] = context["shown"] < MAX_SHOWN_ON
        context["paused_at"] = not context["on"]
    if chained and wants_fragment(request):
        context["oob"] = True
        return vary_on_htmx(render(request, "browse/queue_find.html#search-step", context))
    return vary_on_htmx(render(request, "browse/queue_find.html", context))


@require_GET
@api_auth
@api_errors
def api_find(request):
    """``GET /api/v1/find?id=…``: the queues holding a job with this id (bounded, and says so)."""
    job_id = request.GET.get("id", "").strip()
    if not job_id:
        raise InvalidInput("Give the job id to find: ?id=…")
    return JsonResponse(finding.find_by_id(request.user, job_id[: finding.MAX_JOB_ID]).as_dict())


@require_GET
@api_auth
@api_errors
def api_queue_find(request, connection, prefix, name):
    """``GET …/find?state=failed&where=customer.id = cus_57e8&offset=0``: one bounded step."""
    queue = reads.resolve(request.user, connection, prefix, name)
    state = request.GET.get("state", "failed")
    if state not in BROWSABLE_STATES:
        raise InvalidInput(f"Unknown state '{state}'. Choose one of: {', '.join(BROWSABLE_STATES)}.")
    text, query, bad = _query(request)
    if query is None:
        raise InvalidInput(bad or "Give a data query: ?where=customer.id = cus_57e8")
    found = finding.search_data(queue, state, query=query, offset=int_param(request, "offset", 0, minimum=0))
    return JsonResponse(
        {
            "state": state,
            "where": found.query.text(),
            "jobs": [j.as_dict() for j in found.matches],
            "start": found.start,
            "examined": found.examined,
            "in_state": found.in_state,
            "complete": found.complete,
            "next_offset": found.next_offset,
            "too_large": found.too_large,
        }
    )
