"""A queue's settings as every source kind reports them (global concurrency, global rate limit,
paused, counts), and the refusal of a change that cannot be made. A Redis node reads and writes
them, and drains and obliterates, as BullMQ does: ``queues.redis.queue_settings``."""

from __future__ import annotations

from dataclasses import dataclass


def limited_for_ms(pttl: int | None, used: int, rate_max: int | None) -> int:
    """How long workers start no job (BullMQ's getRateLimitTtl): the limiter key's time left
    when it holds at least ``max`` jobs (a worker's ``rateLimit()`` sets it to MAX_SAFE_INTEGER);
    with no global ``max``, any time left counts (a worker's own limiter may be in force)."""
    if not pttl or pttl <= 0:
        return 0
    return int(pttl) if rate_max is None or used >= rate_max else 0


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
    # The BullMQ release the queue's meta records (``bullmq:6.7.0``; None: none recorded) and
    # whether it is newer than the scripts Queuewatch runs, which then refuse to change it
    # (``queues.script_versions``).
    recorded_release: str | None = None
    release_unsupported: bool = False

    @property
    def rate_limited(self) -> bool:
        return self.limited_for_ms > 0

    @property
    def total_jobs(self) -> int:
        return sum(v for k, v in self.counts.items() if k != "schedulers")
