"""Reading the facts a PostgreSQL connection's health checks judge (``queues.health.facts.
PostgresFacts``; the checks are ``queues.health.postgres_checks``), with a handful of cheap
statements over the reads' read-only connection:

* one row of settings and ``pg_stat_activity`` counts (``max_connections``, the client backends,
  whether this role sees other roles' sessions: superuser or ``pg_read_all_stats``, which
  ``pg_monitor`` includes);
* the transactions of this database open longer than the threshold, and whether each holds a
  lock on a table of a BullMQ schema (``pg_locks``, readable by any role);
* per schema, BullMQ's migration record (``MAX(version)``, ``MAX(min_client_version)`` of its
  ``migration`` table, as BullMQ's own ``assertSchemaCompatibility`` reads it);
* the job tables' row statistics (``pg_stat_user_tables``);
* per queue, the oldest finished job of a completed or failed set large enough to matter;
* per queue, its rows in the ``event`` table against the length BullMQ trims it to
  (``read_event_streams``).

Without ``pg_read_all_stats`` PostgreSQL hides other roles' transaction starts (and even their
``backend_type``): those sessions of this database are counted (``hidden_sessions``) so the
check can say it cannot judge them."""

from __future__ import annotations

from collections.abc import Mapping

from psycopg import sql

from ..health.facts import EventStream, PostgresFacts, PostgresTransaction, QueueFacts, SchemaFacts, TableFacts
from ..keys import QueueRef
from ..snapshot import QueueSnapshot
from .connection import PostgresConnection
from .snapshots import read_snapshots, table

SERVER = """
SELECT current_setting('server_version'),
       current_setting('max_connections')::int,
       current_setting('superuser_reserved_connections')::int
         + COALESCE(NULLIF(current_setting('reserved_connections', true), '')::int, 0),
       (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'),
       COALESCE((SELECT rolsuper FROM pg_roles WHERE rolname = current_user), false)
         OR pg_has_role(current_user, 'pg_read_all_stats', 'MEMBER'),
       (SELECT count(*) FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid()
           AND usesysid IS NOT NULL AND NOT pg_has_role(usesysid, 'MEMBER'))
"""

LONG_TRANSACTIONS = """
SELECT a.pid, COALESCE(a.usename, ''), COALESCE(a.application_name, ''), COALESCE(a.state, ''),
       (extract(epoch FROM clock_timestamp() - a.xact_start) * 1000)::bigint,
       EXISTS (SELECT 1 FROM pg_locks l
                 JOIN pg_class c ON c.oid = l.relation
                 JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE l.pid = a.pid AND n.nspname = ANY(%(schemas)s))
  FROM pg_stat_activity a
 WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()
   AND a.backend_type = 'client backend'
   AND a.xact_start < clock_timestamp() - make_interval(secs => %(seconds)s)
 ORDER BY a.xact_start
 LIMIT 50
"""

JOB_TABLES = """
SELECT schemaname, n_live_tup, n_dead_tup,
       (extract(epoch FROM GREATEST(last_autovacuum, last_vacuum)) * 1000)::bigint
  FROM pg_stat_user_tables
 WHERE relname = %s AND schemaname = ANY(%s)
 ORDER BY schemaname
"""

# BullMQ's trim (``publish_event``): ``opts.maxLenEvents`` of the queue's meta, 10000 when unset;
# 0 or less keeps every event. It deletes the queue's events with ids up to the new event's id
# minus that length, and only when the new (global) id is a multiple of 256 and no other trim of
# the queue holds its lock: a queue's rows run a few hundred past the length, and this slack
# keeps a check from calling that growth (4096 events without a trim: odds below e^-16).
DEFAULT_MAX_LEN_EVENTS = 10_000
TRIM_SLACK = 4096
COUNT_BUDGET = 500_000  # event index entries counted per health run, across queues

# Per queue: its maxLenEvents and the span of its event ids (two probes of the primary key). A
# queue cannot hold more rows than its span, so only those whose span is past what BullMQ keeps
# are counted.
EVENT_SPANS = """
SELECT q.queue,
       (SELECT m.value FROM {meta} m WHERE m.queue = q.queue AND m.field = 'opts.maxLenEvents'),
       (SELECT min(e.id) FROM {event} e WHERE e.queue = q.queue),
       (SELECT max(e.id) FROM {event} e WHERE e.queue = q.queue)
  FROM unnest(%s::text[]) AS q(queue)
"""
EVENT_ROWS = "SELECT count(*) FROM (SELECT 1 FROM {event} WHERE queue = %s LIMIT %s) kept"


def read_server_facts(db: PostgresConnection, schemas: tuple[str, ...], *, long_ms: int) -> PostgresFacts:
    version, max_conn, reserved, used, sees_all, hidden = db.rows(SERVER)[0]
    long = [
        PostgresTransaction(pid, user, app, state, int(age), bool(locks))
        for pid, user, app, state, age, locks in db.rows(
            LONG_TRANSACTIONS, {"schemas": list(schemas), "seconds": long_ms / 1000}
        )
    ]
    tables = [
        TableFacts(schema, int(live), int(dead), None if vacuumed is None else int(vacuumed))
        for schema, live, dead, vacuumed in db.rows(JOB_TABLES, ("job", list(schemas)))
    ]
    event_tables = [
        TableFacts(schema, int(live), int(dead), None if vacuumed is None else int(vacuumed))
        for schema, live, dead, vacuumed in db.rows(JOB_TABLES, ("event", list(schemas)))
    ]
    return PostgresFacts(
        server_version=version,
        schemas=[read_schema(db, s) for s in schemas],
        connections=int(used),
        max_connections=int(max_conn),
        reserved_connections=int(reserved),
        long_transactions=long,
        sees_all_sessions=bool(sees_all),
        hidden_sessions=0 if sees_all else int(hidden),
        job_tables=tables,
        event_tables=event_tables,
    )


def read_schema(db: PostgresConnection, schema: str) -> SchemaFacts:
    ledger = table(schema, "migration")
    # Node's migrator records the BullMQ major a schema requires (``min_client_version``);
    # Python bullmq's ledger has no such column.
    exists, has_min = db.rows(
        "SELECT to_regclass(%s) IS NOT NULL, EXISTS (SELECT 1 FROM pg_attribute"
        " WHERE attrelid = to_regclass(%s) AND attname = 'min_client_version' AND NOT attisdropped)",
        (ledger.as_string(None), ledger.as_string(None)),
    )[0]
    if not exists:
        return SchemaFacts(schema, None)
    min_client = sql.SQL("MAX(min_client_version)::int" if has_min else "NULL::int")
    version, required = db.rows(
        sql.SQL("SELECT COALESCE(MAX(version), 0)::int, {} FROM {}").format(min_client, ledger)
    )[0]
    return SchemaFacts(schema, int(version), None if required is None else int(required))


def read_queue_facts(
    db: PostgresConnection,
    queues: list[QueueRef],
    snapshots: Mapping[QueueRef, QueueSnapshot] | None,
    *,
    oldest_from: int,
) -> list[QueueFacts]:
    """Each queue's snapshot (the caller's when it holds one), and the oldest finished job of a
    completed or failed set of at least ``oldest_from`` jobs (``job_finished_idx`` answers it)."""
    held = snapshots or {}
    missing = [q for q in queues if q not in held]
    read = {s.queue: s for s in read_snapshots(db, missing)} if missing else {}
    facts = []
    for q in queues:
        snap = held.get(q) or read.get(q)
        if snap is None:
            continue
        f = QueueFacts(snapshot=snap)
        for state in ("completed", "failed"):
            if snap.counts.get(state, 0) >= oldest_from:
                oldest = db.rows(
                    sql.SQL("SELECT MIN(finished_at_ms) FROM {} WHERE queue = %s AND state = %s").format(
                        table(q.prefix, "job")
                    ),
                    (q.name, state),
                )[0][0]
                setattr(f, f"oldest_{state}_ms", None if oldest is None else int(oldest))
        facts.append(f)
    return facts


def kept_events(max_len: int) -> int:
    """The most rows BullMQ's trimming leaves a queue with (``TRIM_SLACK`` past its length);
    a queue that keeps every event (length 0 or less) is judged against BullMQ's default."""
    return (max_len if max_len > 0 else DEFAULT_MAX_LEN_EVENTS) + TRIM_SLACK


def read_event_streams(
    db: PostgresConnection, queues: list[QueueRef], *, budget: int = COUNT_BUDGET
) -> list[EventStream]:
    """The queues whose ``event`` rows may be past what BullMQ keeps, each counted up to one
    past that (the widest spans first, within ``budget`` index entries; the rest uncounted).
    Queues that cannot be past it (their id span is shorter) are left out."""
    by_schema: dict[str, list[str]] = {}
    for q in queues:
        by_schema.setdefault(q.prefix, []).append(q.name)
    wide: list[tuple[int, str, str, int]] = []
    for schema, names in by_schema.items():
        fmt = {"meta": table(schema, "meta"), "event": table(schema, "event")}
        for name, raw_len, low, high in db.rows(sql.SQL(EVENT_SPANS).format(**fmt), (names,)):
            if low is None:
                continue
            try:
                max_len = int(raw_len) if raw_len is not None else DEFAULT_MAX_LEN_EVENTS
            except ValueError:
                max_len = DEFAULT_MAX_LEN_EVENTS  # BullMQ's ::integer cast would fail the same way
            span = int(high) - int(low) + 1
            if span > kept_events(max_len):
                wide.append((span, schema, name, max_len))
    streams = []
    for _span, schema, name, max_len in sorted(wide, reverse=True):
        limit = kept_events(max_len) + 1
        rows = None
        if limit <= budget:
            rows = int(db.rows(sql.SQL(EVENT_ROWS).format(event=table(schema, "event")), (name, limit))[0][0])
            budget -= limit
        streams.append(EventStream(schema, name, max_len, rows, limit))
    return streams
