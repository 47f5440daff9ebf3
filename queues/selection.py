"""Choosing jobs: "all jobs matching this filter", oldest first, fixed at confirmation.

The filter, the resumable cursor, a page of a scan and the matching rule are the same for every
source kind; a Redis node scans its states with ``queues.redis.selection`` (which says in what
order, and how the target set is fixed by ``before_ms``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .error_groups import matches_fingerprint
from .jobs import JobSummary
from .states import FINISHED_STATES, SELECTABLE_STATES


@dataclass(frozen=True)
class JobFilter:
    """Which jobs of one state an action applies to. ``None`` fields do not filter.

    ``name`` matches the job name exactly; ``name_contains`` is a case-insensitive substring of
    it (the queue page's one filter, the same rule as its job list's); ``reason_contains`` is a
    case-insensitive substring of the failure reason; ``finished_from_ms``/``finished_to_ms`` bound the finish time
    (inclusive; finished states only); ``fingerprint`` is an error group
    (``queues.error_groups.fingerprint`` of the reason)."""

    state: str = "failed"
    name: str | None = None
    reason_contains: str | None = None
    finished_from_ms: int | None = None
    finished_to_ms: int | None = None
    fingerprint: str | None = None
    name_contains: str | None = None

    def __post_init__(self):
        if self.state not in SELECTABLE_STATES:
            raise ValueError(
                f"Jobs can be selected by filter in these states: {', '.join(SELECTABLE_STATES)} (got {self.state!r})."
            )
        if (self.finished_from_ms is not None or self.finished_to_ms is not None) and self.state not in FINISHED_STATES:
            raise ValueError("'finished between' only applies to failed or completed jobs.")
        if (
            self.finished_from_ms is not None
            and self.finished_to_ms is not None
            and self.finished_from_ms > self.finished_to_ms
        ):
            raise ValueError("'finished from' is after 'finished to'.")

    @property
    def reads_jobs(self) -> bool:
        """Whether matching needs the job hashes (not just set membership and scores)."""
        return (
            bool(self.name or self.name_contains or self.reason_contains or self.fingerprint)
            or self.state not in FINISHED_STATES
        )

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass
class Cursor:
    """Where a resumable scan stands. For sorted sets: the score and member of the last entry
    passed (entries that left the set since are simply gone; the offset of the next page is
    recomputed from what is still there). For the waiting list: the last passed id that is
    still in the list (``anchor``), since passed jobs that were moved leave the list."""

    score: float | None = None
    member: str | None = None
    anchor: str | None = None

    def as_dict(self) -> dict:
        return {"score": self.score, "member": self.member, "anchor": self.anchor}

    @classmethod
    def from_dict(cls, d: dict | None) -> Cursor:
        d = d or {}
        return cls(score=d.get("score"), member=d.get("member"), anchor=d.get("anchor"))


@dataclass
class Page:
    # Every id examined, in order, with its score in a sorted set. Without a filter that reads
    # jobs only the last entry's score is read (the others are None).
    passed: list[tuple[str, float | None]]
    match_ids: list[str]  # the ids that match, in order
    summaries: dict[str, JobSummary] = field(default_factory=dict)  # read only when matching needed them
    exhausted: bool = False

    @property
    def matches(self) -> list[JobSummary]:
        """Matching jobs as summaries (light ones, with only the finish time, when the filter
        did not need the job hashes)."""
        return [self.summaries.get(i) or JobSummary(id=i, exists=True) for i in self.match_ids]


def matches_filter(job: JobSummary, *, filt: JobFilter, before_ms: int, reason: str = "") -> bool:
    if not job.exists:
        return False
    if filt.state not in FINISHED_STATES and (job.timestamp is None or job.timestamp >= before_ms):
        return False
    if filt.name is not None and job.name != filt.name:
        return False
    if filt.name_contains and filt.name_contains.lower() not in job.name.lower():
        return False
    reason = reason or job.failed_reason
    if filt.reason_contains and filt.reason_contains.lower() not in reason.lower():
        return False
    if filt.fingerprint and not matches_fingerprint(reason, filt.fingerprint):
        return False
    return True


def advance(cursor: Cursor, page: Page, *, remaining: set[str] | None = None) -> Cursor:
    """The cursor after ``page`` was handled. ``remaining``: ids of the page known to still be
    in the list (not matched, or refused); only used for the waiting list."""
    if not page.passed:
        return cursor
    last_id, last_score = page.passed[-1]
    if last_score is not None:
        return Cursor(score=last_score, member=last_id)
    keep = remaining if remaining is not None else {i for i, _ in page.passed}
    anchor = next((i for i, _ in reversed(page.passed) if i in keep), cursor.anchor)
    return Cursor(anchor=anchor)


@dataclass
class Preview:
    count: int  # the jobs that match (of those examined, when ``complete`` is False)
    sample: list[JobSummary]
    scanned: int = 0
    complete: bool = True  # every entry of the state was examined
    in_state: int | None = None  # the state's size, when the scan stopped early
