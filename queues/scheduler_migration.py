"""Migrating a legacy repeatable entry into a job scheduler: the plan shown before it is done.

A legacy entry (reference §6.2: the pre-hash key shape, which BullMQ 6 throws on, or a v5 hash
without ``ic``, which it adopts silently) becomes a job scheduler with the same schedule, keeping
its phase. A Redis node plans and runs the migration with BullMQ's own scripts in one atomic
step: ``queues.redis.scheduler_migration``."""

from __future__ import annotations

from dataclasses import dataclass

from . import cron
from .messages import _
from .scheduler_edit import SchedulerError, SchedulerSpec
from .scheduler_zone import PatternZone

NOT_LEGACY, TARGET_EXISTS = "not_legacy", "target_exists"


@dataclass(frozen=True)
class MigrationPlan:
    """What migrating legacy entry ``member`` will do (shown before it is done)."""

    member: str
    layout: str  # "key-shape" or "v5-hash"
    spec: SchedulerSpec
    pending_job_id: str  # the legacy iteration that will be removed ("" if none is delayed)
    legacy_next: int | None  # ms: when the legacy entry would run next
    # The zone its pattern runs in: a legacy pattern without ``tz`` ran in the workers' zone,
    # and keeps running there as a scheduler (``queues.scheduler_zone``).
    zone: PatternZone | None = None
    legacy_limit: int | None = None  # the legacy ``repeat.limit``
    runs_done: int | None = None  # iterations the legacy entry already made, with a limit

    def next_run(self, *, now_ms: int) -> int | None:
        if self.spec.pattern:
            return cron.bullmq_next_millis(
                pattern=self.spec.pattern,
                tz=self.zone.name if self.zone else "UTC",
                now_ms=now_ms,
                start_ms=self.spec.start_date,
            )
        return max(self.spec.start_date or now_ms, now_ms)


def remaining_limit(limit: int | None, *, done: int, member: str) -> int | None:
    """A legacy ``repeat.limit`` as a new scheduler's: the iterations still to run, the pending
    one (``repeat.count`` is its number) included, since the scheduler replaces it and counts
    from 1 (``addJobScheduler`` cannot be given a count)."""
    if limit is None:
        return None
    left = limit - done + 1
    if left < 1:
        raise SchedulerError(
            _(
                "{member} has already made all {limit} runs of its limit: remove it rather than migrate it.",
                member=member,
                limit=limit,
            )
        )
    return left
