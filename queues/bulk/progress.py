"""How far a bulk task got (``Progress``) and where that is kept (``ProgressStore``).

The engine's crash safety rests on the store: ``save`` must be durable when it returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

RUNNING, DONE_STATE, CANCELLED = "running", "done", "cancelled"
GONE = "gone"  # skipped_by key: targeted, but moved elsewhere before the scan reached it


@dataclass
class Progress:
    """Counts and position of a bulk task; what the store saves and the page shows."""

    # None while a scan of a filter that reads jobs is still counting (``plan.plan_total``): the
    # percent is then how much of the state was examined, and the total is known at the end.
    total: int | None = 0
    examined: int = 0  # entries of the state the scan passed (the percent while the total is unknown)
    in_state: int = 0  # when counting stopped early: the entries the scan will pass (``examined`` runs up to it)
    moved: int = 0
    skipped: int = 0
    failed: int = 0
    state: str = RUNNING
    cursor: dict = field(default_factory=dict)
    position: int = 0  # explicit ids: index of the next id
    in_flight: list = field(default_factory=list)  # [[job_id, state], ...] sent, not yet counted
    skipped_by: dict = field(default_factory=dict)  # outcome -> count
    kept_by: dict = field(default_factory=dict)  # redrive: what the copies kept (queues.redis.redrive) -> count
    errors: list = field(default_factory=list)  # the first few script errors, for the audit log
    # The first few per-job refusals that say why (engine.REPORTED), as ``messages.as_data`` keeps
    # them, so the task page shows them in the reader's language.
    refusals: list = field(default_factory=list)
    receipt_key: str = ""  # whole-set retry: the key its batch script writes receipts to
    head_batch: int = 0  # whole-set retry: the number of the last batch sent
    head_pending: int = 0  # whole-set retry: how many of the last batches sent are not counted yet (was a bool)
    grown: int = 0  # edit-retry: bytes the task added to its jobs' data so far (queues.edit_growth)
    elapsed_s: float = 0.0  # processing time across runs (resumes add up)
    rate: float = 0.0  # jobs handled per second over the current run
    eta_s: float | None = None

    @property
    def handled(self) -> int:
        return self.moved + self.skipped + self.failed

    @property
    def remaining(self) -> int | None:
        """Targeted jobs not handled yet (for a cancelled task: those it left where they were);
        None while the total is not known."""
        if self.state == DONE_STATE:
            return 0
        return None if self.total is None else max(0, self.total - self.handled)

    @property
    def percent(self) -> float:
        if self.state == DONE_STATE:
            return 100.0
        if self.total is None:  # counting: how far through the state; never 100 before the end
            return min(99.0, 100.0 * self.examined / self.in_state) if self.in_state else 0.0
        return min(100.0, 100.0 * self.handled / self.total) if self.total else 0.0

    def as_dict(self) -> dict:
        # Shallow copies of the containers: asdict's deep copy cost milliseconds per batch.
        d = {name: getattr(self, name) for name in self.__dataclass_fields__}
        d.update(
            cursor=dict(self.cursor),
            in_flight=list(self.in_flight),
            skipped_by=dict(self.skipped_by),
            kept_by=dict(self.kept_by),
            errors=list(self.errors),
            refusals=list(self.refusals),
            remaining=self.remaining,
            percent=round(self.percent, 1),
        )
        return d

    def copy(self) -> Progress:
        return replace(
            self,
            cursor=dict(self.cursor),
            in_flight=list(self.in_flight),
            skipped_by=dict(self.skipped_by),
            kept_by=dict(self.kept_by),
            errors=list(self.errors),
            refusals=list(self.refusals),
        )

    @classmethod
    def from_dict(cls, d: Mapping) -> Progress:
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        return cls(**known)


class ProgressStore(Protocol):
    """Where one bulk task's progress lives. ``save`` must be durable when it returns: the
    engine's crash safety rests on it (the Django side writes a row in a transaction)."""

    def load(self) -> Progress | None: ...

    def save(self, progress: Progress) -> None: ...


class MemoryStore:
    def __init__(self) -> None:
        self.progress: Progress | None = None

    def load(self) -> Progress | None:
        return self.progress.copy() if self.progress else None

    def save(self, progress: Progress) -> None:
        self.progress = progress.copy()


def nothing_left_behind(progress: Progress) -> bool:
    """Whether every job the task met so far left the set (none skipped or failed): then none
    stays behind the cursor, and the next batch of a sorted-set scan starts at the head of its
    range without the two round trips that count what stays (``selection.zset_offset``). A job
    someone else put behind the cursor since (a finish time before the plan's bound) is then
    taken too, which the plan covers. A crashed batch's jobs are ahead of the saved cursor, so
    this holds on resume."""
    return not progress.skipped and not progress.failed
