"""Wait and processing times per job name: the JSON API and the queue page's sortable table.

Both read the stored minutes and hours (``dashboard.live.timing_points``), which the monitor
flushes every second: never the monitored Redis.
"""

from __future__ import annotations

from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from dashboard.accounts.auth import api_auth
from dashboard.browse import selectors as reads
from dashboard.live import timing_points
from dashboard.web.errors import InvalidInput, JsonResponse, api_errors, page_errors

# Table columns: (sort key, value of one row's summary); rows without a value sort last.
SORTS = {
    "name": lambda name, s: name,
    "wait_p50": lambda name, s: s["wait_ms"]["p50"],
    "wait_p95": lambda name, s: s["wait_ms"]["p95"],
    "wait_p99": lambda name, s: s["wait_ms"]["p99"],
    "processing_p50": lambda name, s: s["processing_ms"]["p50"],
    "processing_p95": lambda name, s: s["processing_ms"]["p95"],
    "processing_p99": lambda name, s: s["processing_ms"]["p99"],
    "completed": lambda name, s: s["completed"],
    "failed": lambda name, s: s["failed"],
    "attempt_failures": lambda name, s: s["attempt_failures"],
}
DEFAULT_SORT = "processing_p95"
PERIODS = (*timing_points.WINDOWS, *timing_points.RANGES)


def summary_for(queue, period: str) -> dict:
    """A live window (1m/5m/15m) or a history range (1h/24h/7d/90d); ``ValueError`` otherwise."""
    now = timezone.now()
    if period in timing_points.WINDOWS:
        return timing_points.window_summary(queue, period, now=now)
    return timing_points.range_summary(queue, period, now=now)


@require_GET
@api_auth
@api_errors
def timings_api(request, connection, prefix, name):
    queue = reads.resolve(request.user, connection, prefix, name)
    window = request.GET.get("window", "5m")
    if window not in timing_points.WINDOWS:
        raise InvalidInput(f"Unknown window {window!r}; use one of {', '.join(timing_points.WINDOWS)}.")
    return JsonResponse(summary_for(queue, window))


def sorted_rows(names: dict, sort: str, *, descending: bool) -> list[tuple[str, dict]]:
    key = SORTS[sort]
    present = [(n, s) for n, s in names.items() if key(n, s) is not None]
    missing = [(n, s) for n, s in names.items() if key(n, s) is None]
    return sorted(present, key=lambda item: key(*item), reverse=descending) + sorted(missing)


@require_GET
@page_errors
def timings_table(request, connection, prefix, name):
    """The per-job-name table (an htmx fragment on the queue page; a plain page without JS)."""
    queue = reads.resolve(request.user, connection, prefix, name)
    period = request.GET.get("period", "15m")
    period = period if period in PERIODS else "15m"
    sort = request.GET.get("sort", DEFAULT_SORT)
    sort = sort if sort in SORTS else DEFAULT_SORT
    descending = request.GET.get("dir", "desc" if sort != "name" else "asc") == "desc"
    doc = summary_for(queue, period)
    return render(
        request,
        "browse/partials/job_timings.html",
        {
            "queue": queue,
            "period": period,
            "periods": PERIODS,
            "sort": sort,
            "descending": descending,
            "rows": sorted_rows(doc["names"], sort, descending=descending),
            "all": doc["all"],
        },
    )
