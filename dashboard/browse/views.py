"""Server-rendered pages. Each view validates parameters, calls one read, renders."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from dashboard.accounts import scopes
from dashboard.browse import selectors as reads
from dashboard.browse.figures import queue_figures
from dashboard.browse.params import int_param, opening_state, page_size_param, sort_param, state_param
from dashboard.connections.dead_letters import is_dead_letter_queue
from dashboard.core import dash_redis
from dashboard.core.dash_redis import DashboardRedisError
from dashboard.core.i18n import translate
from dashboard.health import checks as health_checks
from dashboard.live import channels as live
from dashboard.live import overview_rows
from dashboard.live.fragments import LIVE_PAGE_SIZE
from dashboard.web import downloads
from dashboard.web.errors import page_errors
from dashboard.web.htmx import render_page_or_fragment
from queues.errors import JobNotFound, NotOffered
from queues.listing import PAGE_SIZES, JobPage
from queues.states import BROWSABLE_STATES

RAW_FIELDS = ("data", "opts", "returnvalue", "progress")


@require_GET
def overview(request):
    query = request.GET.get("q", "").strip()
    sort = sort_param(request)
    descending = request.GET.get("dir") == "desc"
    page_no = int_param(request, "page", 1)

    paged = {}

    def pick(ordered):  # one page of the ordered rows, across the connections
        paged["pager"], slices = page_of(ordered, page_no)
        return slices

    # Sent by the page when the websocket announced a queue it does not show (static/queuewatch.js).
    refresh = request.headers.get("X-Queuewatch-Refresh") == "queues"
    connections, totals = reads.ordered_overview(
        request.user, sort=sort, descending=descending, query=query, pick=pick, refresh=refresh
    )
    pager = paged["pager"]
    parts = [conn.snapshots for conn in connections]
    for conn, part, total in zip(connections, parts, totals):
        conn.total = total
        conn.signals = reads.with_signals(part, spark=True)
    context = {
        "pager": pager,
        "connections": connections,
        # The queues this page shows, named for its socket: the monitor renders only rows someone views.
        "rows_view": overview_rows.remember([s.queue for part in parts for s in part]),
        # Every connection's checks: not for a user who sees only some queues (docs/auth.md).
        "health": None if scopes.is_scoped(request.user) else stored_health_summary(),
        "query": query,
        "sort": sort,
        "descending": descending,
        "states": BROWSABLE_STATES,
    }
    return render_page_or_fragment(
        request, page="browse/overview.html", fragment="browse/overview.html#queue-tables", context=context
    )


OVERVIEW_PAGE_SIZE = 100


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
    """How many checks failed in the last stored health report (the monitor runs them every
    minute), and the worst of them."""
    try:
        return health_checks.read_stored_summary(dash_redis.dashboard_redis())
    except DashboardRedisError:  # no dashboard Redis, or it is down: the page works without it
        return None


@require_GET
@page_errors
def queue_detail(request, connection, prefix, name):
    queue = reads.resolve(request.user, connection, prefix, name)
    job_id = request.GET.get("job", "").strip()
    if job_id:
        # "Open a job by id": go to it if it exists, otherwise say so on the 404 page.
        if not reads.job_exists(queue, job_id):
            raise JobNotFound(queue.name, job_id)
        return redirect(reverse("job", args=[connection, prefix, name, job_id]))

    snap = reads.queue_snapshot(queue)
    state = state_param(request, default=opening_state(snap.counts))
    wanted = dict(page_size=page_size_param(request), name_filter=request.GET.get("name", "").strip()[:200])
    not_offered = ""
    try:
        page = reads.job_page(queue, state, page=int_param(request, "page", 1), **wanted)
        if not page.name_filter and page.page > max(1, page.pages):
            # A page past the end (an old link, a hand-edited URL): show the last one, not "Page 99999 of 2".
            page = reads.job_page(queue, state, page=max(1, page.pages), **wanted)
    except NotOffered as exc:  # the queue's counts and figures still show; its jobs cannot be listed
        page, not_offered = JobPage(state, [], 0, 1, wanted["page_size"]), translate(exc.message)
    figures, figures_not_offered = queue_figures(queue)
    context = {
        "queue": queue,
        "snap": snap,
        "figures": figures,  # jobs per priority, maxed, the rate-limit window (read on page load)
        "figures_not_offered": figures_not_offered,
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
    queue = reads.resolve(request.user, connection, prefix, name)
    read_at = live.read_stamp()
    job = reads.job_detail(queue, job_id)

    def link(full_key):
        return {"key": full_key, "parts": reads.link_for_job_key(connection, full_key)}

    context = {
        "queue": queue,
        "job": job,
        "live": job,  # the live partial reads the same fields from the full detail
        "read_at": read_at,  # the live messages that follow replace it only with a later read
        "is_dlq": is_dead_letter_queue(queue.name),  # offers "redrive to source"
        "parent": link(job.parent) if job.parent else None,
        "children": children_sections(job, link),
    }
    return render(request, "browse/job.html", context)


def children_sections(job, link) -> list[dict]:
    """A parent's children by what BullMQ recorded, each with its return value or reason."""
    sections = [
        (_("Pending children (%(n)s)"), job.children_pending, ""),
        (_("Processed children (%(n)s)"), job.children_processed, "returned"),
        (
            _("Failed children the parent went on without (%(n)s)"),
            job.children_ignored,
            "ignored",
        ),
        (_("Failed children that fail the parent (%(n)s)"), job.children_failed, "failed"),
    ]
    return [
        {
            "title": title % {"n": len(keys)},
            "kind": kind,
            "items": [{**link(key), "outcome": job.child_outcomes.get(key, "")} for key in keys],
        }
        for title, keys, kind in sections
        if keys
    ]


@require_GET
@page_errors
def job_raw(request, connection, prefix, name, job_id, field):
    queue = reads.resolve(request.user, connection, prefix, name)
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
    queue = reads.resolve(request.user, connection, prefix, name)
    page = int_param(request, "page", 1)
    items, total = reads.queue_schedulers(queue, page)
    per_page = reads.SCHEDULERS_PER_PAGE
    pager = {
        "first": (page - 1) * per_page + 1,
        "last": (page - 1) * per_page + len(items),
        "total": total,
        "previous": page - 1 if page > 1 else None,
        "next": page + 1 if page * per_page < total else None,
    }
    context = {
        "groups": [(queue, items, total)],
        "single": queue,
        "pager": pager if total > per_page else None,
        "read_only": reads.read_only_schedulers([queue]),
    }
    return render(request, "browse/schedulers.html", context)


@require_GET
def schedulers(request):
    groups, errors = [], []
    for conn, per_queue in reads.all_schedulers(request.user):
        if conn.error:
            errors.append(conn)
        groups.extend(per_queue)
    read_only = reads.read_only_schedulers([group[0] for group in groups])
    return render(request, "browse/schedulers.html", {"groups": groups, "errors": errors, "read_only": read_only})
