"""The one interface between the features and wherever BullMQ keeps its queues.

A *source* is one monitored connection of one kind (today a single Redis node; next Redis
Cluster, Sentinel, BullMQ's PostgreSQL backend). Everything that knows what the connection is
made of lives behind this interface, in the source kind's own module: making clients, finding
queues, the cheap per-queue snapshot, following events, running BullMQ's scripts and turning the
backend's failures into errors a user can read. Features hold sources (through
``dashboard.connections.registry``) and never build clients themselves.

What every kind promises is written on each member below; ``docs/sources.md`` has the recipe
for adding a kind.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

from ..errors import QueuewatchError

if TYPE_CHECKING:
    from ..events import Event
    from ..keys import QueueRef
    from ..snapshot import QueueSnapshot
    from ..workers import Worker
    from .facets import (
        BulkFacet,
        CommandsFacet,
        DedupFacet,
        FiguresFacet,
        JobsFacet,
        JobToolsFacet,
        ProbesFacet,
        SchedulersFacet,
        ServerFacet,
    )
    from .spec import ConnectionSpec


class UnsupportedBySource(QueuewatchError):
    """A core member a kind cannot give (an events follower for a kind without events, the
    workers of a kind that cannot tell): callers treat it as "not known", never as an outage."""

    def __init__(self, *, kind: str, connection: str, what: str):
        self.kind, self.connection, self.what = kind, connection, what
        super().__init__(f"Connection '{connection}' is a {kind} source, which has no {what}.")


@runtime_checkable
class EventsReader(Protocol):
    """Follows the events of a set of queues on one connection (``queues.redis.events.EventsFollower``
    is the Redis one). Holds a connection of its own: reads block."""

    last_ids: dict[QueueRef, str]  # per followed queue, the id of the last event read

    def follow(self, queues: list[QueueRef], start_ids: dict[QueueRef, str] | None = None) -> list[QueueRef]:
        """Follow exactly these queues; a new one starts at ``start_ids`` or at the current end.
        Returns the newly followed queues."""
        ...

    def recent(self, queues: list[QueueRef], *, count: int) -> list[Event]:
        """Up to ``count`` events of each queue from just before its start position, oldest
        first (read once per queue per term, so in-flight jobs are known without recounting)."""
        ...

    def read(self, block_ms: int | None = None) -> tuple[list[Event], dict[QueueRef, tuple[int, int]]]:
        """Wait up to ``block_ms`` for events: (events in order per queue, gaps), a gap being
        the (from, to) ms between which a queue's events were lost and must be reconciled."""
        ...


@runtime_checkable
class Source(Protocol):
    """One monitored connection. Built by ``queues.sources.source_for(spec)`` only, which calls
    ``Kind(spec, socket_timeout=seconds)``: the timeout for the reads pages wait on.

    Methods raise the backend's own exceptions (callers that show pages wrap them in
    ``errors()``); nothing here opens a connection before it is needed, so building a source
    for an unreachable server succeeds and the first read reports it."""

    kind: ClassVar[str]  # short name, e.g. "redis"
    label: ClassVar[str]  # for messages, e.g. "Redis" in "not a valid Redis URL"
    schemes: ClassVar[tuple[str, ...]]  # URL schemes this kind serves; unique across kinds

    spec: ConnectionSpec

    def __init__(self, spec: ConnectionSpec, *, socket_timeout: float = 5.0) -> None: ...

    # The facets (``queues.sources.facets``): ``None`` where the kind does not offer one yet.
    # Read-only for the type check, so a kind may declare its own facet classes (a plain
    # attribute holding a ``RedisJobs`` satisfies ``jobs``).
    @property
    def jobs(self) -> JobsFacet | None: ...
    @property
    def probes(self) -> ProbesFacet | None: ...
    @property
    def commands(self) -> CommandsFacet | None: ...
    @property
    def schedulers(self) -> SchedulersFacet | None: ...
    @property
    def bulk(self) -> BulkFacet | None: ...
    @property
    def server(self) -> ServerFacet | None: ...
    @property
    def job_tools(self) -> JobToolsFacet | None: ...
    @property
    def dedup(self) -> DedupFacet | None: ...
    @property
    def figures(self) -> FiguresFacet | None: ...

    @classmethod
    def check_url(cls, url: str) -> None:
        """Raise ``ValueError`` saying what is wrong with ``url`` (called while settings load,
        so a bad URL fails at start-up, never on the first page)."""
        ...

    def discover(self) -> list[QueueRef]:
        """Every queue under the spec's prefixes: prefixes in the spec's order, names sorted
        within each. Must not block the server (no KEYS on Redis)."""
        ...

    def queue_exists(self, queue: QueueRef) -> bool:
        """Whether ``queue`` exists now, in O(1) on the server (a page naming a queue that is
        not on the discovered list yet asks this instead of discovering again)."""
        ...

    def snapshots(self, queues: list[QueueRef]) -> list[QueueSnapshot]:
        """The cheap snapshot of each queue, in the order given; cost O(queues), not O(jobs).
        ``last_event_id`` is the newest event the counts already include."""
        ...

    def workers(self, queues: list[QueueRef]) -> dict[QueueRef, list[Worker]]:
        """The workers connected to each of ``queues`` (every one gets a list, empty when none),
        from the names BullMQ gives worker connections (``queues.workers``). Raises where the
        backend cannot tell (a server refusing ``CLIENT LIST``, a kind without connections):
        callers then show workers as unknown, never as none. Called once per period by the
        monitor, never per request."""
        ...

    def events_follower(self, *, block_ms: int) -> EventsReader:
        """A follower on a connection of its own, checked reachable (raises if not)."""
        ...

    def errors(self) -> AbstractContextManager[None]:
        """A context that turns this backend's failures into ``SourceUnavailable`` naming the
        connection, never its URL or password (for the core members above; facets translate
        their own)."""
        ...

    def close(self) -> None:
        """Release pooled connections."""
        ...
