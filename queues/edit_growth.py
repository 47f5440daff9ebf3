"""How much an edit-and-retry may add to the monitored Redis: the patch's own size, the bytes it
adds to one job's stored data, and the bytes one bulk task adds to all its jobs together.

A merge patch is copied into every job it edits, so a big one multiplies: a 2 MB patch on
40,000 jobs is 80 GB, and a Redis at its ``maxmemory`` with ``noeviction`` then refuses every
producer's write. The bounds are checked where the patch is read (``patch_refusal``), where each
job's new data is made (``Budget.take``, per job and running total of the task) and in the
bulk preview, which estimates the task's total from its sample (``task_refusal``).

Framework-free.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .messages import Message, _

TOO_BIG = "too_big"  # an outcome: the patched data would grow more than the bounds allow; nothing written

DEFAULT_MAX_PATCH = 256 * 1024
DEFAULT_MAX_JOB_GROWTH = 64 * 1024
DEFAULT_MAX_TASK_GROWTH = 64 * 1024 * 1024


@dataclass(frozen=True)
class GrowthBounds:
    """In bytes (UTF-8); ``None``: unbounded."""

    patch: int | None = DEFAULT_MAX_PATCH  # the patch itself, as compact JSON
    per_job: int | None = DEFAULT_MAX_JOB_GROWTH  # added to one job's stored data
    per_task: int | None = DEFAULT_MAX_TASK_GROWTH  # added by one bulk task to all its jobs' data


def json_bytes(value: Any) -> int:
    """``value``'s size as compact JSON in UTF-8 (as the patched data is written)."""
    return text_bytes(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def text_bytes(text: str | bytes | None) -> int:
    if text is None:
        return 0
    if isinstance(text, bytes):
        return len(text)
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def growth(before: str | bytes | None, after: str | bytes | None) -> int:
    """Bytes the new data adds to the stored data (negative when it shrinks)."""
    return text_bytes(after) - text_bytes(before)


def patch_refusal(patch: Any, bounds: GrowthBounds, *, size: int | None = None) -> Message | None:
    """Why ``patch`` is refused for its size, or None. ``size``: its size when already known."""
    if bounds.patch is None:
        return None
    size = json_bytes(patch) if size is None else size
    if size <= bounds.patch:
        return None
    return _(
        "The patch is {size} bytes; a patch may be at most {limit} bytes (it is copied into every job it edits).",
        size=size,
        limit=bounds.patch,
    )


def job_refusal(added: int, bounds: GrowthBounds, *, job_id: str) -> Message | None:
    """Why the edit of one job is refused for what it adds to its data, or None."""
    if bounds.per_job is None or added <= bounds.per_job:
        return None
    return _(
        "Job {id} was left failed: the patch would add {added} bytes to its data, more than the "
        "{limit} bytes allowed per job.",
        id=job_id,
        added=added,
        limit=bounds.per_job,
    )


def task_refusal(total: int, bounds: GrowthBounds) -> Message | None:
    """Why a bulk edit is refused for what it would add to its jobs' data together, or None."""
    if bounds.per_task is None or total <= bounds.per_task:
        return None
    return _(
        "This edit would add about {total} bytes to the jobs' data in Redis, more than the {limit} bytes "
        "one bulk task may add; nothing was started. Use a smaller patch or select fewer jobs.",
        total=total,
        limit=bounds.per_task,
    )


class Budget:
    """What a bulk task may still add, job by job. ``take`` records a job's growth, or says why
    the job is refused (over the per-job bound, or over what is left of the task's)."""

    def __init__(self, bounds: GrowthBounds, *, used: int = 0):
        self.bounds = bounds
        self.used = used

    def take(self, added: int, *, job_id: str) -> Message | None:
        refused = job_refusal(added, self.bounds, job_id=job_id)
        if refused is not None:
            return refused
        if added <= 0:
            return None
        if self.bounds.per_task is not None and self.used + added > self.bounds.per_task:
            return _(
                "Job {id} was left failed: the task has added {used} bytes to its jobs' data, and this job "
                "would take it past the {limit} bytes one bulk task may add.",
                id=job_id,
                used=self.used,
                limit=self.bounds.per_task,
            )
        self.used += added
        return None
