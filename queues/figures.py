"""A queue's figures beyond its counts, as BullMQ itself computes them: jobs per priority
(``Queue.getCountsPerPriority``), whether the queue is maxed (``isMaxed``: active ≥ the global
concurrency in ``meta``), and its current rate-limit window (the ``limiter`` key a worker
increments for each job it starts, expiring after the window's duration).

Framework-free: every source kind that offers the figures facet returns ``QueueFigures``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .queue_settings import limited_for_ms
from .script_versions import UnsupportedRelease
from .text import MAX_SAFE_INTEGER

# Distinct priorities read at most. BullMQ allows 2**21 of them, so asking for every one (as
# getCountsPerPriority takes a list) is not an option; the reader walks the priorities present
# from the highest (lowest number) up instead, two commands per priority, and reports the
# prioritized jobs beyond this many priorities as one remainder.
PRIORITIES_SHOWN = 20

# BullMQ scores a prioritized job ``priority * 2**32 + counter``.
PRIORITY_SCORE_FACTOR = 2**32


def priority_of_score(score: float) -> int:
    return int(score) // PRIORITY_SCORE_FACTOR


def priority_score_range(priority: int) -> tuple[int, int]:
    """The scores of a priority's jobs, as getCountsPerPriority's ZCOUNT bounds them."""
    return priority * PRIORITY_SCORE_FACTOR, (priority + 1) * PRIORITY_SCORE_FACTOR - 1


@dataclass(frozen=True)
class QueueFigures:
    # (priority, jobs) in BullMQ's order (highest priority, the lowest number, first). Priority 0
    # is the ``wait`` list, as getCountsPerPriority counts it; the others the ``prioritized`` set.
    per_priority: tuple[tuple[int, int], ...]
    prioritized: int  # every job in the prioritized set
    active: int
    concurrency: int | None  # meta ``concurrency``; None: no global concurrency
    rate_max: int | None  # meta ``max``: the global rate limit's jobs per window
    rate_duration_ms: int | None  # meta ``duration``
    window_count: int | None  # the limiter key: jobs started in the current window (None: no window)
    window_left_ms: int  # how long the current window still runs (0: none)
    # The release a Node ``Queue`` recorded in ``meta`` (``version``) when it is newer than the
    # scripts Queuewatch runs (``queues.script_versions``), with those scripts' release; else None.
    newer_release: str | None = None
    scripts_release: tuple[int, int, int] | None = None

    @property
    def release_refusal(self):
        """Why changes to this queue are refused (a newer BullMQ wrote it), or None."""
        if self.newer_release is None or self.scripts_release is None:
            return None
        return UnsupportedRelease(self.newer_release, self.scripts_release).message

    @property
    def maxed(self) -> bool:
        """BullMQ's ``isMaxed``: no worker takes a job until an active one finishes."""
        return self.concurrency is not None and self.active >= self.concurrency

    @property
    def priorities_rest(self) -> int:
        """Prioritized jobs of priorities beyond ``PRIORITIES_SHOWN`` (not broken down)."""
        return max(0, self.prioritized - sum(n for p, n in self.per_priority if p > 0))

    @property
    def manual_limit(self) -> bool:
        """A worker called ``rateLimit(ms)``, which sets the limiter to MAX_SAFE_INTEGER."""
        return self.window_count is not None and self.window_count >= MAX_SAFE_INTEGER

    @property
    def limited_for_ms(self) -> int:
        """> 0: workers start no job for this long (BullMQ's getRateLimitTtl)."""
        return limited_for_ms(self.window_left_ms, self.window_count or 0, self.rate_max)

    def as_dict(self) -> dict:
        return {
            "per_priority": [{"priority": p, "count": n} for p, n in self.per_priority],
            "priorities_rest": self.priorities_rest,
            "active": self.active,
            "concurrency": self.concurrency,
            "maxed": self.maxed,
            "rate_limit": (
                {"max": self.rate_max, "duration_ms": self.rate_duration_ms} if self.rate_max is not None else None
            ),
            "window": (
                {"count": self.window_count, "left_ms": self.window_left_ms, "manual": self.manual_limit}
                if self.window_count is not None
                else None
            ),
            "limited_for_ms": self.limited_for_ms,
        }
