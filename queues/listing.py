"""A page of a job list per state: what every source kind's ``jobs.page()`` returns (a Redis
node reads it with ``queues.redis.listing.list_jobs``)."""

from __future__ import annotations

from dataclasses import dataclass

from .jobs import JobSummary

DEFAULT_PAGE_SIZE = 25  # pages, the API and the live job list (only page 1 at this size is kept live)
PAGE_SIZES = (10, DEFAULT_PAGE_SIZE, 50, 100, 200)


@dataclass
class JobPage:
    state: str
    jobs: list[JobSummary]
    total: int  # jobs in the state (not just those matching a filter)
    page: int
    page_size: int
    name_filter: str = ""
    scanned: int = 0  # with a name filter: ids examined
    scan_complete: bool = True
    has_next: bool = False

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.page_size))
