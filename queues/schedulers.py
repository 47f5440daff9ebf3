"""Job schedulers (BullMQ 6) and legacy repeat metadata, as every source kind lists them.

Two legacy layouts can be found beside current schedulers (reference §6.2): the pre-hash key
shape, which BullMQ 6 throws on, and v5 hashed repeatables without an iteration count, which
BullMQ 6 silently adopts. Both are flagged with what to do about them. A Redis node reads them
with ``queues.redis.schedulers``."""

from __future__ import annotations

from dataclasses import dataclass

from .messages import _

MIGRATION_HINT = _(
    "Upsert an equivalent job scheduler while still on BullMQ v5 (queue.upsertJobScheduler), "
    "remove the legacy repeatable entry (queue.removeRepeatableByKey), then upgrade to v6."
)


@dataclass
class Scheduler:
    id: str
    name: str
    pattern: str
    every: int | None
    tz: str
    next_run: int | None  # ms since epoch
    iterations: int | None
    limit: int | None
    start_date: int | None
    end_date: int | None
    legacy: str = ""  # "" when current; otherwise which legacy layout this is

    @property
    def legacy_hint(self) -> str:
        if self.legacy == "key-shape":
            return _(
                "Pre-v6 key-shaped repeatable: BullMQ 6 throws on it and stops rescheduling it. {hint}",
                hint=MIGRATION_HINT,
            )
        if self.legacy == "v5-hash":
            return _(
                "v5 repeatable without an iteration count: BullMQ 6 adopts it silently, "
                "but it should be migrated. {hint}",
                hint=MIGRATION_HINT,
            )
        return ""

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "name": self.name,
            "pattern": self.pattern or None,
            "every": self.every,
            "tz": self.tz or None,
            "next_run": self.next_run,
            "iterations": self.iterations,
            "limit": self.limit,
            "legacy": self.legacy or None,
        }
