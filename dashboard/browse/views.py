"""Server-rendered pages. Each view validates parameters, calls one read, renders."""

from __future__ import annotations

from typing import NamedTuple

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from dashboard.browse import columns
from dashboard.browse import selectors as reads
from dashboard.browse.params import int_param, page_size_param, sort_param, sort_snapshots, state_param
from dashboard.connections.dead_letters import is_dead_letter_queue
from dashboard.core import dash_redis
from dashboard.core.dash_redis import DashboardRedisError
from dashboard.core.i18n import translate
from dashboard.health import checks as health_checks
from dashboard.live.fragments import LIVE_PAGE_SIZE
from dashboard.web import downloads
from dashboard.web.errors import page_errors
from dashboard.web.htmx import render_page_or_fragment
from queues.errors import JobNotFound, NotOffered
from queues.keys import QueueRef
from queues.listing import PAGE_SIZES, JobPage
from queues.states import BROWSABLE_STATES

RAW_FIELDS = ("data", "opts", "returnvalue", "progress")


@require_GET
def overview(request):
    query = request.GET.get("q", "").strip()
    sort = sort_param(request)
    descending = request.GET.get("dir") == "desc"
    page_no = int_param(request, "page", 1)

    def rows(items):  # filtered and sorted: snapshots, or queues listed before any is read
        kept = [x for x in items if query.lower() in x.queue.name.lower()] if query else items
        return sort_snapshots(kept, sort, descending)

    # One page of rows across the connections, in order: reading and rendering rows is the
    # cost, so a thousand queues are shown a page at a time (live rows of other pages are
    # dropped by the page, static/queuewatch.js). Sorted by name, only the page's queues are
    # read; sorted by a count, all are (the order needs every count).
    paged = {}

    def narrow(lists):
        ordered = [rows([Listed(q) for q in queues]) for queues in lists]
        paged["pager"], slices = page_of(ordered, page_no)
        paged["totals"] = [len(o) for o in ordered]
        return [[x.queue for x in part] for part in slices]

    by_name = sort in columns.NAME_SORTS
    # Sent by the page when the websocket announced a queue it does not show (static/queuewatch.js).
    connections = reads.overview(
        refresh=request.headers.get("X-Queuewatch-Refresh") == "queues", narrow=narrow if by_name else None
    )
    if by_name:
        pager, parts = paged["pager"], [rows(conn.snapshots) for conn in connections]
        totals = paged["totals"]
    else:
        ordered = [rows(conn.snapshots) for conn in connections]
        pager, parts = page_of(ordered, page_no)
        totals = [len(o) for o in ordered]
    for conn, part, total in zip(connections, parts, totals):
        conn.total = total
        conn.signals = reads.with_signals(part, spark=True)
    context = {
        "pager": pager,
        "connections": connections,
        "health": stored_health_summary(),
        "query": query,
        "sort": sort,
        "descending": descending,
        "states": BROWSABLE_STATES,
    }
    return render_page_or_fragment(
        request, page="browse/overview.html", fragment="browse/overview.html#queue-tables", context=context
    )


OVERVIEW_PAGE_SIZE = 100


class Listed(NamedTuple):
    """A queue before its snapshot is read: enough for the overview's name sorts and filter."""

    queue: QueueRef


def page_of(ordered: list[list], page: int) -> tuple[OverviewPager, list[list]]:
    """The rows of one overview page out of each connection's ordered rows."""
    pager = OverviewPager(sum(map(len, ordered)), page)
    parts, offset = [], 0
    for rows in ordered:
        parts.append(rows[max(0, pager.start - offset) : max(0, pager.end - offset)])
        offset += len(rows)
    return pager, parts


class OverviewPager:
    """Which rows of the (filtered, sorted) overview this page shows; past the end shows the last page."""

    def __init__(self, total: int, page: int, size: int | None = None):
        size = size or OVERVIEW_PAGE_SIZE
        self.total, self.size = total, size
        self.pages = max(1, -(-total // size))
        self.page = min(max(1, page), self.pages)
        self.start = (self.page - 1) * size
        self.end = self.start + size

    @property
    def previous(self) -> int | None:
        return self.page - 1 if self.page > 1 else None

    @property
    def next(self) -> int | None:
        return self.page + 1 if self.page < self.pages else None


def stored_health_summary() -> dict | None:
    """Failing checks from the last stored health report (the monitor runs them every minute)."""
    try:
        report = health_checks.read_stored(dash_redis.dashboard_redis())
    except DashboardRedisError:  # no dashboard Redis, or it is down: the page works without it
        return None
    if not report:
        return None
    failing = [r for c in report.get("connections", []) for r in c.get("results", []) if r.get("status") == "fail"]
    worst = next(
        (sev for sev in ("critical", "warning", "info") if any(r.get("severity") == sev for r in failing)), None
    )
    return {"failing": len(failing), "worst": worst, "checked_at": report.get("checked_at")}


@require_GET
@page_errors
def queue_detail(request, connection, prefix, name):
    queue = reads.resolve(connection, prefix, name)
    job_id = request.GET.get("job", "").strip()
    if job_id:
        # "Open a job by id": go to it if it exists, otherwise say so on the 404 page.
        if not reads.job_exists(queue, job_id):
            raise JobNotFound(queue.name, job_id)
        return redirect(reverse("job", args=[connection, prefix, name, job_id]))

    state = state_param(request)
    wanted = dict(page_size=page_size_param(request), name_filter=request.GET.get("name", "").strip()[:200])
    not_offered = ""
    try:
        page = reads.job_page(queue, state, page=int_param(request, "page", 1), **wanted)
        if not page.name_filter and page.page > max(1, page.pages):
            # A page past the end (an old link, a hand-edited URL): show the last one, not "Page 99999 of 2".
            page = reads.job_page(queue, state, page=max(1, page.pages), **wanted)
    except NotOffered as exc:  # the queue's counts and figures still show; its jobs cannot be listed
        page, not_offered = JobPage(state, [], 0, 1, wanted["page_size"]), translate(exc.message)
    snap = reads.queue_snapshot(queue)
    context = {
        "queue": queue,
        "snap": snap,
        "sig": reads.with_signals([snap])[0],
        "is_dlq": is_dead_letter_queue(queue.name),  # its jobs wait: the bulk form offers "redrive to source"
        "workers": reads.queue_workers(queue),
        "job_page": page,
        "jobs_not_offered": not_offered,
        "state": state,
        "states": BROWSABLE_STATES,
        "page_sizes": PAGE_SIZES,
        # Only the first page at the default size without a filter is kept live.
        "live_list": page.page == 1 and page.page_size == LIVE_PAGE_SIZE and not page.name_filter,
    }
    return render_page_or_fragment(
        request, page="browse/queue.html", fragment="browse/queue.html#job-list", context=context
    )


@require_GET
@page_errors
def job_detail(request, connection, prefix, name, job_id):
    queue = reads.resolve(connection, prefix, name)
    job = reads.job_detail(queue, job_id)

    def link(full_key):
        return {"key": full_key, "parts": reads.link_for_job_key(connection, full_key)}

    context = {
        "queue": queue,
        "job": job,
        "live": job,  # the live partial reads the same fields from the full detail
        "is_dlq": is_dead_letter_queue(queue.name),  # offers "redrive to source"
        "parent": link(job.parent) if job.parent else None,
        "children": {
            "pending": [link(k) for k in job.children_pending],
            "processed": [link(k) for k in job.children_processed],
            "failed": [link(k) for k in job.children_failed],
        },
    }
    return render(request, "browse/job.html", context)


@require_GET
@page_errors
def job_raw(request, connection, prefix, name, job_id, field):
    queue = reads.resolve(connection, prefix, name)
    if field not in RAW_FIELDS:
        message = _("No downloadable field '%(field)s'.") % {"field": field}
        return render(request, "error.html", {"status": 404, "title": _("Not found"), "message": message}, status=404)
    body = reads.job_raw_field(queue, job_id, field)
    response = HttpResponse(body, content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = downloads.attachment(f"{queue.name}-{job_id[:80]}-{field}.json")
    return response


@require_GET
@page_errors
def queue_schedulers(request, connection, prefix, name):
    queue = reads.resolve(connection, prefix, name)
    return render(
        request, "browse/schedulers.html", {"groups": [(queue, reads.queue_schedulers(queue))], "single": queue}
    )


@require_GET
def schedulers(request):
    groups, errors = [], []
    for conn, per_queue in reads.all_schedulers():
        if conn.error:
            errors.append(conn)
        groups.extend(per_queue)
    return render(request, "browse/schedulers.html", {"groups": groups, "errors": errors})
