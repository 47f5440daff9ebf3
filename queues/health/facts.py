"""The facts the checks judge, as plain values: a server's ``INFO`` and ``CONFIG``, the workers of
the queues, and per queue its snapshot, oldest finished jobs, rate limiter and schedulers.

A Redis node reads them with a handful of cheap, plain commands (``queues.redis.health_facts``).
Managed Redis services often refuse ``CONFIG`` and ``CLIENT LIST``: the facts then record the
refusal, and the checks fall back instead of crashing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..keys import QueueRef
from ..schedulers import Scheduler
from ..snapshot import QueueSnapshot
from ..workers import Worker


@dataclass
class ServerFacts:
    info: dict  # INFO, keys as text
    config: dict  # CONFIG GET results that were allowed, keys as text
    config_error: str = ""  # why CONFIG GET was refused ("" when it worked)


@dataclass
class WorkerFacts:
    """The workers of one connection's queues (``queues.workers``) and where they come from."""

    by_queue: Mapping[QueueRef, list[Worker]] | None  # None: unknown (CLIENT LIST refused)
    # "monitor": the leading monitor's published reading; read here: "client-list" (Redis),
    # "pg_stat_activity" (PostgreSQL)
    source: str
    error: str = ""  # why CLIENT LIST was refused
    taken_at: int | None = None  # when the monitor read them (source "monitor"), ms


@dataclass
class QueueFacts:
    snapshot: QueueSnapshot
    oldest_completed_ms: int | None = None  # finishedOn of the oldest job in the set
    oldest_failed_ms: int | None = None
    limiter_count: int | None = None
    limiter_pttl_ms: int | None = None
    rate_max: int | None = None  # meta max / duration (global rate limit)
    rate_duration_ms: int | None = None
    schedulers: list[Scheduler] = field(default_factory=list)


@dataclass
class SchemaFacts:
    """One BullMQ-on-PostgreSQL schema's migration record (its ``migration`` table)."""

    schema: str
    version: int | None  # None: no migration table (the schema was never migrated)
    min_client_version: int | None = None  # the BullMQ major the schema requires


@dataclass
class PostgresTransaction:
    pid: int
    user: str
    application: str
    state: str
    age_ms: int
    locks_bullmq: bool  # holds a lock on a table of a BullMQ schema (job rows, say)


@dataclass
class TableFacts:
    schema: str
    live_rows: int
    dead_rows: int
    last_autovacuum_ms: int | None  # last (auto)vacuum, whichever is newer; None: never


@dataclass
class EventStream:
    """One queue's rows in its schema's ``event`` table, against the length BullMQ trims it to."""

    schema: str
    queue: str
    max_len: int  # ``opts.maxLenEvents`` of the queue's meta (BullMQ's default 10000 when unset)
    rows: int | None  # counted up to ``counted_to``; None: not counted this time (budget spent)
    counted_to: int  # the count stops there: ``rows == counted_to`` means at least that many


@dataclass
class PostgresFacts:
    """What a PostgreSQL connection's checks judge, read by ``queues.postgres.health_facts``."""

    server_version: str
    schemas: list[SchemaFacts]
    connections: int  # client backends on the whole server
    max_connections: int
    reserved_connections: int  # superuser_reserved_connections (+ reserved_connections, 16+)
    long_transactions: list[PostgresTransaction]
    sees_all_sessions: bool  # superuser or pg_monitor / pg_read_all_stats: other roles' sessions visible
    hidden_sessions: int  # sessions in this database whose transaction start is hidden from us
    job_tables: list[TableFacts] = field(default_factory=list)
    event_streams: list[EventStream] = field(default_factory=list)  # queues that may be past their length
    event_tables: list[TableFacts] = field(default_factory=list)  # each schema's ``event`` table
