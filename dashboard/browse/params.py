"""Validated query parameters shared by pages and API. Bad values fall back to defaults
(pages) rather than erroring: a hand-edited URL should still show something sensible."""

from __future__ import annotations

from queues.keys import BROWSABLE_STATES
from queues.listing import DEFAULT_PAGE_SIZE, PAGE_SIZES

OVERVIEW_SORTS = ("connection", "name", "paused", "oldest", *BROWSABLE_STATES)


def int_param(request, name: str, default: int, *, minimum: int = 1, maximum: int = 10**9) -> int:
    try:
        return min(maximum, max(minimum, int(request.GET.get(name, default))))
    except (TypeError, ValueError):
        return default


def state_param(request, default: str = "waiting") -> str:
    state = request.GET.get("state", default)
    return state if state in BROWSABLE_STATES else default


def page_size_param(request) -> int:
    size = int_param(request, "size", DEFAULT_PAGE_SIZE)
    return size if size in PAGE_SIZES else DEFAULT_PAGE_SIZE


def sort_snapshots(snaps, sort: str, descending: bool):
    def key(s):
        if sort == "connection":
            return (s.queue.connection, s.queue.prefix, s.queue.name)
        if sort == "name":
            return (s.queue.name.lower(), s.queue.prefix)
        if sort == "paused":
            return (s.paused, s.queue.name)
        if sort == "oldest":
            return (s.oldest_waiting_age_ms or -1, s.queue.name)
        return (s.counts.get(sort, 0), s.queue.name)

    return sorted(snaps, key=key, reverse=descending)
