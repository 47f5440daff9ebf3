"""Job schedulers (BullMQ 6) and legacy repeat metadata, as every source kind lists them.

Two legacy layouts can be found beside current schedulers (reference §6.2): the pre-hash key
shape, which BullMQ 6 throws on, and v5 hashed repeatables without an iteration count, which
BullMQ 6 silently adopts. Both are flagged with what to do about them. A Redis node reads them
with ``queues.redis.schedulers``."""

from __future__ import annotations

from dataclasses import dataclass

from .cron import CronError, bullmq_next_millis
from .messages import _
from .scheduler_zone import PatternZone, stored_zone
from .text import to_safe_int

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
    # BullMQ will run no further iteration (``is_finished``); its score is then the last run's
    # time, not a next run, so readers set ``next_run`` to None.
    finished: bool = False
    # The zone the pattern runs in, and how Queuewatch knows it (``queues.scheduler_zone``);
    # readers that know the connection's configured zone pass it, else it is inferred.
    zone: PatternZone | None = None
    offset: int | None = None  # an ``every`` scheduler's phase within the interval (ms)
    # Stored numbers that are not a number or time we can show (a score of ``inf``, an ``every``
    # of ``1e400``): read as missing, and named so the row says so instead of hiding it.
    unreadable: tuple[str, ...] = ()

    def __post_init__(self):
        if self.zone is None:
            self.zone = stored_zone(pattern=self.pattern, tz=self.tz, score=self.next_run)

    @property
    def pattern_tz(self) -> str:
        """The zone name the cron pattern runs in ("" for an ``every`` scheduler)."""
        return self.zone.name if self.zone else ""

    @property
    def legacy_hint(self) -> str:
        if self.legacy == "key-shape":
            return _(
                "Pre-v6 key-shaped repeatable: BullMQ 6 throws on it and stops rescheduling it. {hint}",
                hint=MIGRATION_HINT,
            )
        if self.legacy == "no-definition":
            return _(
                "No definition is stored for this entry: BullMQ 6 cannot run it, and Node's "
                "getJobSchedulers() deletes it the next time it lists this queue's schedulers."
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
            "finished": self.finished,
            "zone": self.zone.as_dict() if self.zone else None,
            "offset": self.offset,
            "unreadable": list(self.unreadable),
        }


def unreadable_fields(stored: dict[str, str], names: tuple[str, ...]) -> tuple[str, ...]:
    """Which of ``names`` ``stored`` holds as something other than a number we can read."""
    return tuple(name for name in names if stored.get(name, "") != "" and to_safe_int(stored[name]) is None)


def is_finished(
    *,
    iterations: int | None,
    limit: int | None,
    end_date: int | None,
    pattern: str,
    tz: str,  # the zone the pattern runs in (``Scheduler.pattern_tz``)
    last_run: int | None,
    last_run_pending: bool,
    now_ms: int,
) -> bool:
    """Whether BullMQ 6 will run no further iteration of a scheduler whose current iteration
    (the ``repeat`` score, ``last_run``) has been taken by a worker unless ``last_run_pending``.

    BullMQ decides when a worker takes an iteration (``JobScheduler.upsertJobScheduler``): it
    creates the next one unless the iteration count reached the ``limit`` (``ic`` counts the
    iterations created, the one taken included) or the ``endDate`` has passed; a cron pattern
    also stops when its next time falls after the ``endDate`` (cron-parser refuses it). Either
    way the scheduler entry stays, with its last run as its score. While that last iteration
    is still waiting for a worker it is a real next run: not finished yet."""
    if last_run_pending:
        return False
    if limit is not None and iterations is not None and iterations >= limit:
        return True
    if end_date is None:
        return False
    if now_ms > end_date:
        return True
    if pattern and last_run is not None:
        try:
            following = bullmq_next_millis(pattern=pattern, tz=tz, now_ms=last_run)
        except (CronError, ValueError, KeyError):
            return False  # a pattern we cannot follow: BullMQ still decides on the endDate alone
        return following is None or following > end_date
    return False
