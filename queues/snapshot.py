"""The cheap per-queue snapshot: state counts, paused flag, schedulers, oldest waiting age.

``QueueSnapshot`` is what every source kind's ``snapshots()`` returns; a Redis node reads it
with ``queues.redis.snapshot.read_snapshots``.

Jobs ready to run are counted here, once (``waiting_jobs``, ``ready_jobs``): BullMQ 6 on Redis
keeps a paused queue's jobs in its wait list, so they are under ``waiting``; BullMQ on
PostgreSQL reports them under ``paused`` (``getJobCounts()`` there), a key Redis counts never
have. Every figure that means "jobs waiting for a worker" (the overview's waiting column, the
backlog, the no-workers checks) reads these, so a paused queue's backlog is the same on both.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .keys import QueueRef
from .states import COUNT_STATES  # noqa: F401  (the states a snapshot's counts hold)


def waiting_jobs(counts: dict) -> int:
    """Jobs ready to run without a priority: the wait list, or a paused queue's ready jobs
    where the backend counts them apart (``paused``)."""
    return int(counts.get("waiting", 0)) + int(counts.get("paused", 0))


def ready_jobs(counts: dict) -> int:
    """Every job waiting for a worker: ``waiting_jobs`` plus the prioritized ones."""
    return waiting_jobs(counts) + int(counts.get("prioritized", 0))


@dataclass
class QueueSnapshot:
    queue: QueueRef
    counts: dict[str, int]
    paused: bool
    schedulers: int
    legacy_paused_jobs: int = 0
    oldest_waiting_id: str | None = None
    oldest_waiting_ts: int | None = None  # ms since epoch the job ready the longest became ready
    # The age is a bound: the oldest waiting job is at least this old (queues.ready_since).
    oldest_waiting_bound: bool = False
    last_event_id: str | None = None  # newest events-stream entry when the counts were read
    taken_at: int = field(default_factory=lambda: int(time.time() * 1000))

    @property
    def oldest_waiting_age_ms(self) -> int | None:
        if self.oldest_waiting_ts is None:
            return None
        return max(0, self.taken_at - self.oldest_waiting_ts)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def as_dict(self) -> dict:
        return {
            "connection": self.queue.connection,
            "prefix": self.queue.prefix,
            "name": self.queue.name,
            "paused": self.paused,
            "counts": dict(self.counts),
            "schedulers": self.schedulers,
            "legacy_paused_jobs": self.legacy_paused_jobs,
            "oldest_waiting_age_ms": self.oldest_waiting_age_ms,
            "oldest_waiting_is_bound": self.oldest_waiting_bound,
            "taken_at": self.taken_at,
        }
