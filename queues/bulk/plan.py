"""What a bulk task does (``BulkPlan``), fixed when the operator confirms it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

from ..dead_letters import DEFAULT_DLQ_PATTERNS
from ..edit_growth import GrowthBounds
from ..keys import QueueRef
from ..selection import JobFilter
from ..states import FINISHED_STATES, states_allowing

ACTIONS = ("retry", "discard", "promote", "redrive", "edit-retry")
# The states each action looks for a job in (``queues.states``). ``active`` only matters for
# explicit selections (filters cannot select active jobs): removeJob refuses locked ones, which
# are counted as skipped.
ACTION_STATES = {action: states_allowing(action) for action in ACTIONS}
DEFAULT_RATE = 100.0
MAX_BATCH = 1000  # jobs per batch script: about 15 ms of Redis time
# An unpaced edit-and-retry reads and journals a bigger batch: its scripts take it in chunks of
# ``edit.CHUNK`` jobs (so Redis is held no longer, and only a few chunks are in flight), and
# each batch costs round trips and a pause of the pipeline that runs its chunks.
EDIT_BATCH = 10000


@dataclass(frozen=True)
class BulkPlan:
    """What a bulk task does, fixed at confirmation. Either ``filt`` (all jobs matching it) or
    ``job_ids`` (an explicit selection, taken in the given order) is set.

    ``before_ms``: only jobs finished (failed/completed) or created (delayed/waiting) before
    this instant are touched. ``rate``: jobs per second, ``None`` for unpaced. For ``redrive``
    the queue is the dead-letter queue; the source is ``source`` if given, else resolved per job
    with ``dead_letters.dlq_source`` from ``dlq_patterns``/``dlq_mapping``/a data field.
    ``patch``: for ``edit-retry`` only, the JSON merge patch applied to each job's stored data;
    a job whose patched data does not pass ``schema`` is left failed (``invalid_data``)."""

    queue: QueueRef
    action: str
    before_ms: int
    filt: JobFilter | None = None
    job_ids: tuple[str, ...] | None = None
    rate: float | None = DEFAULT_RATE
    reset_counters: bool = True
    remove_children: bool = False
    source: str | None = None
    dlq_patterns: tuple[str, ...] = DEFAULT_DLQ_PATTERNS
    dlq_mapping: tuple[tuple[str, str], ...] = ()
    payload_field: str | None = None
    patch: dict | None = None
    schema: dict | None = None  # edit-retry: the queue's job schema (queues.job_schema) the patched data must pass
    # edit-retry: bytes the patch may add to one job's data, and to all the task's jobs together
    # (queues.edit_growth); None: unbounded.
    max_job_growth: int | None = None
    max_task_growth: int | None = None

    def __post_init__(self):
        if self.action not in ACTIONS:
            raise ValueError(f"Unknown bulk action {self.action!r}; choose one of {', '.join(ACTIONS)}.")
        if (self.filt is None) == (self.job_ids is None):
            raise ValueError("A bulk plan needs either a filter or a list of job ids, not both.")
        if self.filt is not None and self.filt.state not in ACTION_STATES[self.action]:
            raise ValueError(
                f"'{self.action}' cannot act on {self.filt.state} jobs "
                f"(it acts on {', '.join(ACTION_STATES[self.action])})."
            )
        if (self.action == "edit-retry") != isinstance(self.patch, dict) or (self.patch is not None and not self.patch):
            raise ValueError("'edit-retry' needs a non-empty JSON merge patch (an object); other actions take none.")
        if self.rate is not None and not self.rate > 0:
            raise ValueError("The rate must be a positive number of jobs per second, or unpaced.")

    @property
    def scan_filter(self) -> JobFilter:
        """The filter of a plan that scans a state: every plan without explicit ids has one."""
        if self.filt is None:
            raise ValueError("This plan lists its jobs by id: it has no filter to scan with.")
        return self.filt

    @property
    def retries_whole_set(self) -> bool:
        """Whether the plan retries a whole finished set up to ``before_ms`` (no filter reading
        the jobs, no lower time bound): the oldest jobs of the set are then always the next
        ones, and each kind may take them with a set-wide command instead of job by job."""
        f = self.filt
        return (
            self.action == "retry"
            and f is not None
            and f.state in FINISHED_STATES
            and not f.reads_jobs
            and f.finished_from_ms is None
        )

    @property
    def growth_bounds(self) -> GrowthBounds:
        return GrowthBounds(patch=None, per_job=self.max_job_growth, per_task=self.max_task_growth)

    @property
    def batch_size(self) -> int:
        if self.rate is None:
            return EDIT_BATCH if self.action == "edit-retry" and self.job_ids is None else MAX_BATCH
        return max(1, min(MAX_BATCH, int(self.rate / 4)))  # about four progress updates a second

    def as_dict(self) -> dict:
        d = asdict(self)
        d["queue"] = asdict(self.queue)
        d["filt"] = self.filt.as_dict() if self.filt else None
        d["job_ids"] = list(self.job_ids) if self.job_ids is not None else None
        d["dlq_patterns"] = list(self.dlq_patterns)
        d["dlq_mapping"] = [list(p) for p in self.dlq_mapping]
        return d

    @classmethod
    def from_dict(cls, d: Mapping) -> BulkPlan:
        d = dict(d)
        d["queue"] = QueueRef(**d["queue"])
        d["filt"] = JobFilter(**d["filt"]) if d.get("filt") else None
        d["job_ids"] = tuple(d["job_ids"]) if d.get("job_ids") is not None else None
        d["dlq_patterns"] = tuple(d.get("dlq_patterns") or DEFAULT_DLQ_PATTERNS)
        d["dlq_mapping"] = tuple(tuple(p) for p in d.get("dlq_mapping") or ())
        return cls(**d)
