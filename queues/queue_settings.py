"""A queue's settings as every source kind reports them (global concurrency, global rate limit,
paused, counts), and the refusal of a change that cannot be made. A Redis node reads and writes
them, and drains and obliterates, as BullMQ does: ``queues.redis.queue_settings``."""

from __future__ import annotations

from dataclasses import dataclass


class SettingRefused(ValueError):
    """The change cannot be made as asked; the message says why (nothing was changed)."""


@dataclass(frozen=True)
class QueueSettings:
    concurrency: int | None  # global concurrency, None when unlimited
    rate_max: int | None  # global rate limit: at most rate_max jobs per rate_duration_ms
    rate_duration_ms: int | None
    limited_for_ms: int  # > 0: the queue is being rate-limited now, for this long still
    paused: bool
    counts: dict  # jobs per state, and schedulers

    @property
    def rate_limited(self) -> bool:
        return self.limited_for_ms > 0

    @property
    def total_jobs(self) -> int:
        return sum(v for k, v in self.counts.items() if k != "schedulers")
