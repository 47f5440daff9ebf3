"""BullMQ on PostgreSQL (``postgres://``, ``postgresql://``): BullMQ 6's PostgreSQL backend keeps
every queue of a namespace in one schema, which is this kind's prefix (``?schema=`` in the URL
names the default one, ``QUEUEWATCH_PREFIXES_<NAME>`` may list several; ``bullmq`` otherwise).

Offered so far: discovery, snapshots (counts as ``getJobCounts()`` reports them), the job
lists and job pages, an events follower (``LISTEN bullmq_events`` and the ``event`` table:
``queues.postgres.events``) and the commands facet's retry, discard, promote, pause and resume
(``queues.postgres.commands_facet``, on a writable connection of its own; its other commands
raise ``NotOffered``), the health checks (``queues.postgres.server_facet``), the monitor's probes (stalls from
``locked_until_ms``, attempt counters: ``queues.postgres.probes_facet``), the job schedulers
(read only: ``queues.postgres.schedulers_facet``) and the workers (the
sessions BullMQ names in ``pg_stat_activity``: ``queues.postgres.workers``), the job tools and the
deduplication keys (``queues.postgres.job_tools_facet``). Not yet: bulk tasks
(``None``, shown as "not offered").
"""

from __future__ import annotations

from typing import ClassVar

from ..keys import QueueRef
from ..postgres import snapshots
from ..postgres.bulk import PostgresBulk
from ..postgres.commands_facet import PostgresCommands
from ..postgres.connection import DEFAULT_SCHEMA, PostgresConnection, check_schema_name, postgres_errors, split_url
from ..postgres.events import EventWindows, PostgresEventsFollower, listen_connection
from ..postgres.job_tools_facet import PostgresDedup, PostgresJobTools
from ..postgres.jobs_facet import PostgresJobs
from ..postgres.probes_facet import PostgresProbes
from ..postgres.schedulers_facet import PostgresSchedulers
from ..postgres.server_facet import PostgresServer
from ..postgres.workers import read_workers
from ..snapshot import QueueSnapshot
from ..workers import Worker
from .base import EventsReader
from .spec import ConnectionSpec


class PostgresSource:
    kind: ClassVar[str] = "postgres"
    label: ClassVar[str] = "PostgreSQL"
    schemes: ClassVar[tuple[str, ...]] = ("postgres", "postgresql")

    bulk = None
    figures = None  # not offered yet: jobs per priority, the rate-limit window, BullMQ's metrics

    def __init__(self, spec: ConnectionSpec, *, socket_timeout: float = 5.0):
        self.spec = spec
        for schema in spec.prefixes:
            check_schema_name(schema)
        self._db = PostgresConnection(spec.url, statement_timeout_s=socket_timeout)  # connects on first use
        self.jobs = PostgresJobs(self._db, connection=spec.name)
        self.probes = PostgresProbes(self._db, connection=spec.name)
        self.schedulers = PostgresSchedulers(self._db, connection=spec.name, cron_tz=spec.cron_tz)
        # Actions write: they get their own connection, so the reads' stays read-only.
        self._writer = PostgresConnection(spec.url, statement_timeout_s=socket_timeout, read_only=False)
        self.commands = PostgresCommands(self._writer, connection=spec.name)
        self.bulk = PostgresBulk(self._writer, connection=spec.name)
        self.job_tools = PostgresJobTools(self._writer, connection=spec.name)
        self.dedup = PostgresDedup(self._db, self._writer, connection=spec.name)
        self.server = PostgresServer(self._db, connection=spec.name, schemas=tuple(spec.prefixes))
        # Keeps the finished-job counts between reads while nothing is committed (snapshots.py).
        self._snapshots = snapshots.SnapshotReader()
        # The events cursors outlive each follower: one made after a lost connection resumes.
        self._event_windows: EventWindows = {}

    @classmethod
    def check_url(cls, url: str) -> None:
        _, schema = split_url(url)
        if schema is not None:
            check_schema_name(schema)

    @classmethod
    def default_prefixes(cls, url: str) -> tuple[str, ...]:
        """The schema the URL names (``?schema=``), else BullMQ's default."""
        return (split_url(url)[1] or DEFAULT_SCHEMA,)

    def discover(self) -> list[QueueRef]:
        return [
            QueueRef(self.spec.name, schema, name)
            for schema in self.spec.prefixes
            for name in snapshots.discover_queue_names(self._db, schema)
        ]

    def queue_exists(self, queue: QueueRef) -> bool:
        return snapshots.queue_exists(self._db, queue)

    def snapshots(self, queues: list[QueueRef]) -> list[QueueSnapshot]:
        return self._snapshots.read(self._db, queues)

    def workers(self, queues: list[QueueRef]) -> dict[QueueRef, list[Worker]]:
        return read_workers(self._db, queues)  # one read of pg_stat_activity

    def events_follower(self, *, block_ms: int) -> EventsReader:
        conn = listen_connection(self.spec.url)
        return PostgresEventsFollower(conn, connection=self.spec.name, windows=self._event_windows, block_ms=block_ms)

    def errors(self):
        return postgres_errors(self.spec.name, self.spec.url)

    def close(self) -> None:
        self._db.close()
        self._writer.close()
