"""What a source kind can offer beyond the core members of ``Source``, one facet at a time.

A facet is a group of capabilities a kind builds together (its job reads, the monitor's cheap
probes, BullMQ's state-changing commands…). A kind that has not built one sets the attribute to
``None``, and the features show that capability as "not offered" (``NotOffered``) instead of
failing: a new kind can ship discovery and counts first, then job pages, then actions.

Every method raises ``SourceUnavailable`` (naming the connection, never its URL) when the
backend cannot be read or refuses a command; nothing else of the backend's own errors escapes.
Results are the plain types of ``queues/``: the same for every kind.

The protocols are checked by mypy: a kind whose method has another signature fails the type
check (``tests/project/test_typing.py`` proves it).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import NotOffered
from ..messages import _

if TYPE_CHECKING:
    from ..actions import ActionResult
    from ..bulk import BulkPlan, Progress, ProgressStore
    from ..bullmq_metrics import BullmqMetrics
    from ..data_search import DataQuery, DataSearch
    from ..dedup import DedupPage
    from ..edit_retry import EditPlan
    from ..error_groups import ErrorGroups
    from ..figures import QueueFigures
    from ..flows import FlowLimits, FlowTree
    from ..health import CheckResult, Thresholds
    from ..job_add import AddOutcome, SourceJob
    from ..job_options import NewJob
    from ..jobs import JobDetail, JobLive, JobSummary
    from ..keys import QueueRef
    from ..listing import JobPage
    from ..queue_settings import QueueSettings
    from ..redact import Redactor
    from ..retry_advice import Sample
    from ..scheduler_edit import SchedulerResult, SchedulerSpec
    from ..scheduler_migration import MigrationPlan
    from ..scheduler_runs import SchedulerDetail
    from ..scheduler_zone import PatternZone
    from ..schedulers import Scheduler
    from ..selection import JobFilter, Preview
    from ..snapshot import QueueSnapshot
    from ..stalls import ActiveLists
    from ..workers import Worker

# The facets, by attribute name, with the words a "not offered" message uses.
FACETS: dict[str, str] = {
    "jobs": _("job lists and job pages"),
    "probes": _("stall and attempt probes"),
    "commands": _("actions on jobs and queues"),
    "schedulers": _("job schedulers"),
    "bulk": _("bulk tasks"),
    "server": _("server health checks"),
    "job_tools": _("the job tools (change priority, change delay, move to failed)"),
    "dedup": _("the deduplication keys page"),
    "figures": _("jobs per priority, the rate-limit window and BullMQ's own metrics"),
}


class JobsFacet(Protocol):
    """Reading jobs: lists, summaries, one job, bounded scans (previews, error groups, export)."""

    # Every read that returns jobs' failure reasons for display takes the redactor: a worker's
    # error message may quote a secret (``JobSummary.redacted``, ``ErrorGroups.redacted``).
    def page(
        self,
        queue: QueueRef,
        state: str,
        *,
        page: int,
        page_size: int,
        name_filter: str,
        scan_limit: int,
        redactor: Redactor,
    ) -> JobPage: ...

    def first_page(self, queue: QueueRef, state: str, *, size: int) -> tuple[list[str], list[float] | None]:
        """The ids (and scores, for sorted sets) of the first ``size`` jobs a list shows."""
        ...

    def summaries(
        self, queue: QueueRef, ids: list[str], scores: list[float] | None = None, *, redactor: Redactor
    ) -> list[JobSummary]: ...

    def detail(self, queue: QueueRef, job_id: str, *, cap: int, redactor: Redactor) -> JobDetail:
        """Raises ``JobNotFound`` when there is no such job."""
        ...

    def live_detail(self, queue: QueueRef, job_id: str, *, redactor: Redactor) -> JobLive | None: ...

    def raw_field(self, queue: QueueRef, job_id: str, field: str, *, redactor: Redactor) -> str: ...

    def exists(self, queue: QueueRef, job_id: str) -> bool: ...

    def stored_data(self, queue: QueueRef, job_id: str) -> bytes | None:
        """The job's data exactly as stored (``None``: no such job)."""
        ...

    def preview(
        self, queue: QueueRef, *, filt: JobFilter, before_ms: int, sample: int, limit: int | None, redactor: Redactor
    ) -> Preview: ...

    def error_groups(self, queue: QueueRef, *, scan_limit: int, redactor: Redactor) -> ErrorGroups: ...

    def search_data(
        self,
        queue: QueueRef,
        state: str,
        *,
        query: DataQuery,
        offset: int,
        scan_limit: int,
        data_cap: int,
        redactor: Redactor,
    ) -> DataSearch:
        """One bounded step of a search by data (``queues.data_search``): from position
        ``offset`` of the state's list, at most ``scan_limit`` jobs examined; data over
        ``data_cap`` bytes is counted, not matched. A kind that cannot search raises ``NotOffered``."""
        ...

    def export(
        self, queue: QueueRef, *, fmt: str, filt: JobFilter, before_ms: int, redactor: Redactor
    ) -> Iterator[str]:
        """The matching jobs as ``fmt`` ("jsonl" or "csv") text, one chunk at a time."""
        ...

    def option_sample(self, queue: QueueRef, *, now_ms: int) -> Sample: ...

    def edit_plan(self, queue: QueueRef, *, job_id: str, patch: Any, schema: dict | None) -> EditPlan | None: ...

    def duplicate_source(self, queue: QueueRef, *, job_id: str) -> SourceJob | None: ...

    def flow(
        self, queue: QueueRef, job_id: str, *, limits: FlowLimits, from_root: bool, redactor: Redactor
    ) -> FlowTree:
        """The flow the job belongs to as a tree (``queues.flows``), from its topmost ancestor
        (or, not ``from_root``, from the job), read within ``limits``. Raises ``JobNotFound``
        when there is no such job; a kind that cannot read flows raises ``NotOffered``."""
        ...


class ProbesFacet(Protocol):
    """The monitor's cheap reads between snapshots; each call is one round trip or a few."""

    def active(self, lengths: Mapping[QueueRef, int]) -> ActiveLists: ...

    def without_lock(self, jobs: Mapping[QueueRef, list[str]]) -> dict[QueueRef, list[str]]:
        """The given active jobs whose worker lock has lapsed (stalled now)."""
        ...

    def job_fields(self, jobs: Sequence[tuple[QueueRef, str]], fields: Sequence[str]) -> list[list[bytes | None]]:
        """The named fields of each job, in order (``None`` for a missing job or field)."""
        ...

    def finished_counts(
        self, queues: Sequence[QueueRef], *, minutes: Sequence[int], width_ms: int
    ) -> dict[QueueRef, list[tuple[int, int]]]:
        """(completed, failed) finishing within each minute, from finish times."""
        ...

    def due_delayed(self, queues: Sequence[QueueRef], *, now_ms: int) -> dict[QueueRef, int]:
        """Delayed jobs already due (a worker would have promoted them)."""
        ...


class CommandsFacet(Protocol):
    """State changes, through the backend's own scripts (BullMQ's Lua on Redis)."""

    def retry(self, queue: QueueRef, *, job_id: str, reset_counters: bool) -> ActionResult: ...

    def discard(self, queue: QueueRef, *, job_id: str) -> ActionResult: ...

    def promote(self, queue: QueueRef, *, job_id: str) -> ActionResult: ...

    def redrive(
        self, dlq: QueueRef, *, job_id: str, source: QueueRef, payload_field: str | None = None
    ) -> ActionResult:
        """Move a dead letter to ``source``; with ``payload_field``, the copy's data is that field
        of the dead letter's data (its envelope: ``queues.dead_letters.Envelope``)."""
        ...

    def pause(self, queue: QueueRef, *, paused: bool) -> None: ...

    def clean(self, queue: QueueRef, *, state: str, older_than_ms: int, limit: int) -> int: ...

    def add(self, queue: QueueRef, *, job: NewJob, schema: dict | None) -> AddOutcome: ...

    def edit_and_retry(self, queue: QueueRef, *, plan: EditPlan, reset_counters: bool) -> ActionResult: ...

    def settings(self, queue: QueueRef) -> QueueSettings: ...

    def set_concurrency(self, queue: QueueRef, *, concurrency: int | None) -> None: ...

    def set_rate_limit(self, queue: QueueRef, *, max_jobs: int | None, duration_ms: int | None) -> None: ...

    def remove_rate_limit_key(self, queue: QueueRef) -> bool: ...

    def rate_limit_for(self, queue: QueueRef, *, ms: int) -> None:
        """``Queue.rateLimit(ms)``: workers start no job of the queue for ``ms``."""
        ...

    def drain(self, queue: QueueRef, *, delayed: bool) -> int: ...

    def obliterate(self, queue: QueueRef) -> None: ...

    # Flows (``queues.flow_actions``): BullMQ's ``Job.removeChildDependency`` on a child its parent
    # still waits for, and ``Job.removeUnprocessedChildren`` on a parent.
    def remove_child_dependency(self, queue: QueueRef, *, job_id: str) -> ActionResult: ...

    def remove_unprocessed_children(self, queue: QueueRef, *, job_id: str) -> ActionResult: ...


class JobToolsFacet(Protocol):
    """Per-job tools beside the commands (``queues.job_tools``), through the backend's own scripts."""

    def change_priority(self, queue: QueueRef, *, job_id: str, priority: int) -> ActionResult: ...

    def change_delay(self, queue: QueueRef, *, job_id: str, delay_ms: int) -> ActionResult:
        """The delayed job becomes ready ``delay_ms`` from now."""
        ...

    def move_to_failed(self, queue: QueueRef, *, job_id: str, reason: str) -> ActionResult: ...


class DedupFacet(Protocol):
    """A queue's held deduplication keys (``queues.dedup``)."""

    def page(self, queue: QueueRef, *, cursor: str, redactor: Redactor) -> DedupPage:
        """One bounded step of the listing from ``cursor`` ("0": the start)."""
        ...

    def release(self, queue: QueueRef, *, dedup_id: str, owner: str) -> ActionResult:
        """Delete the key only if it still names ``owner``."""
        ...


class SchedulersFacet(Protocol):
    # Every scheduler of the queue (a kind may stop at a bound it documents: Redis reads 10,000),
    # for the alert rules and health checks.
    def list(self, queue: QueueRef) -> list[Scheduler]: ...

    # ``count`` schedulers from index ``start`` in the kind's order, and how many there are.
    def page(self, queue: QueueRef, *, start: int, count: int) -> tuple[builtins.list[Scheduler], int]: ...

    def spec(self, queue: QueueRef, *, scheduler_id: str) -> SchedulerSpec | None: ...

    def edit(self, queue: QueueRef, *, spec: SchedulerSpec) -> SchedulerResult: ...

    def remove(self, queue: QueueRef, *, scheduler_id: str) -> SchedulerResult: ...

    # A new scheduler (refused when the id is taken); "not offered" where edits are not.
    def create(self, queue: QueueRef, *, spec: SchedulerSpec) -> SchedulerResult: ...

    # One scheduler with its template and its pending and last iterations, for its page.
    def detail(self, queue: QueueRef, *, scheduler_id: str) -> SchedulerDetail | None: ...

    # The zone a zone-less cron pattern upserted into the queue (over ``scheduler_id``) would run
    # in: the workers' zone.
    def workers_zone(self, queue: QueueRef, *, scheduler_id: str = "") -> PatternZone | None: ...

    def migration_plan(self, queue: QueueRef, *, member: str, scheduler_id: str) -> MigrationPlan: ...

    def migrate(self, queue: QueueRef, *, plan: MigrationPlan) -> SchedulerResult: ...


class BulkFacet(Protocol):
    def run(
        self,
        *,
        plan: BulkPlan,
        store: ProgressStore,
        should_cancel: Callable[[], bool],
        on_progress: Callable[[Progress], None],
        count_limit: int | None,
    ) -> Progress:
        """Run (or resume from ``store``) a bulk task to its end. Raises ``SourceUnavailable``
        only when the backend could not be reached (the task stays resumable); any other error
        ends the task."""
        ...


class ServerFacet(Protocol):
    def health_checks(
        self,
        queues: list[QueueRef],
        *,
        state: dict | None,
        now: int,
        thresholds: Thresholds,
        is_dead_letter: Callable[[str], bool],
        snapshots: Mapping[QueueRef, QueueSnapshot] | None,
        workers: Mapping[QueueRef, list[Worker]] | None,
        workers_at: int | None,
    ) -> Iterable[CheckResult]:
        """The production-readiness checks of this connection and its queues, in any order (the
        caller sorts what it shows): a kind may produce them as it goes, a share of the queues
        at a time, for a caller that keeps little of each."""
        ...


class FiguresFacet(Protocol):
    """A queue's figures beyond its counts, read when a page shows them (``queues.figures``,
    ``queues.bullmq_metrics``); each call costs a bounded number of round trips."""

    def figures(self, queue: QueueRef) -> QueueFigures:
        """Jobs per priority (at most ``PRIORITIES_SHOWN`` priorities), active against the
        global concurrency, the global rate limit and the current rate-limit window."""
        ...

    def metrics(self, queue: QueueRef, *, kind: str, points: int) -> BullmqMetrics:
        """BullMQ's own metrics of ``kind`` ("completed" or "failed"), the newest ``points``
        data points (``Queue.getMetrics(kind, 0, points - 1)``)."""
        ...


def offered(source: Any, facet: str) -> Any:
    """The source's ``facet``, or ``NotOffered`` naming the connection and what is missing."""
    found = getattr(source, facet, None)
    if found is None:
        raise NotOffered(connection=source.spec.name, kind=source.kind, facet=FACETS[facet])
    return found


def jobs_of(source: Any) -> JobsFacet:
    return offered(source, "jobs")


def probes_of(source: Any) -> ProbesFacet:
    return offered(source, "probes")


def commands_of(source: Any) -> CommandsFacet:
    return offered(source, "commands")


def schedulers_of(source: Any) -> SchedulersFacet:
    return offered(source, "schedulers")


def bulk_of(source: Any) -> BulkFacet:
    return offered(source, "bulk")


def server_of(source: Any) -> ServerFacet:
    return offered(source, "server")


def job_tools_of(source: Any) -> JobToolsFacet:
    return offered(source, "job_tools")


def dedup_of(source: Any) -> DedupFacet:
    return offered(source, "dedup")


def figures_of(source: Any) -> FiguresFacet:
    return offered(source, "figures")
