"""Validated query parameters shared by pages and API. Bad values fall back to defaults
(pages) rather than erroring: a hand-edited URL should still show something sensible."""

from __future__ import annotations

from dashboard.browse import columns
from queues.listing import DEFAULT_PAGE_SIZE, PAGE_SIZES
from queues.snapshot import waiting_jobs
from queues.states import BROWSABLE_STATES


def int_param(request, name: str, default: int, *, minimum: int = 1, maximum: int = 10**9) -> int:
    try:
        return min(maximum, max(minimum, int(request.GET.get(name, default))))
    except (TypeError, ValueError):
        return default


def state_param(request, default: str = "waiting") -> str:
    state = request.GET.get("state", default)
    return state if state in BROWSABLE_STATES else default


def opening_state(counts: dict) -> str:
    """The tab a queue page opens on when the URL names none: failed while there are failed
    jobs (what an operator comes for), else the state holding the most jobs (the first in tab
    order on a tie), else waiting."""
    if int(counts.get("failed") or 0) > 0:
        return "failed"

    def held(state: str) -> int:
        return waiting_jobs(counts) if state == "waiting" else int(counts.get(state) or 0)

    busiest = max(BROWSABLE_STATES, key=held)  # max keeps the first of equals: tab order
    return busiest if held(busiest) > 0 else "waiting"


def page_size_param(request) -> int:
    size = int_param(request, "size", DEFAULT_PAGE_SIZE)
    return size if size in PAGE_SIZES else DEFAULT_PAGE_SIZE


def sort_param(request) -> str:
    """An overview column to sort by (see ``dashboard.browse.columns``), else the default."""
    sort = request.GET.get("sort", columns.DEFAULT_SORT)
    return sort if columns.sort_key(sort) or columns.published_key(sort) else columns.DEFAULT_SORT


def sort_snapshots(snaps, sort: str, descending: bool):
    return sorted(snaps, key=columns.sort_key(sort) or columns.sort_key(columns.DEFAULT_SORT), reverse=descending)
