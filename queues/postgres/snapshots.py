"""Finding BullMQ's queues in a PostgreSQL schema and taking their cheap snapshot.

BullMQ-on-PostgreSQL keeps every queue of a namespace in one schema (``job``, ``meta``,
``scheduler``…, the ``queue`` column telling queues apart), so the schema plays the part the key
prefix plays on Redis. The reads follow BullMQ's own SQL (``get_counts.sql``): waiting means
state ``waiting`` with priority 0, prioritized the same state with a priority, and a paused
queue (``meta`` field ``paused`` = ``'1'``) reports its waiting jobs under ``paused`` and none
under ``waiting`` — exactly what ``Queue.getJobCounts()`` reports on this backend.

Cost per snapshot of a schema, whatever the number of queues: three statements — whether the
schema holds BullMQ's tables; every count, in one statement (one snapshot of the database); the
paused flags, scheduler counts and oldest waiting jobs. PostgreSQL has no O(1) count, so a count
reads the rows it counts; each part of the counting statement is written so the planner can
answer it from one of BullMQ's narrow partial indexes (``job_ready_idx``, ``job_delayed_idx``,
``job_active_idx``, ``job_finished_idx``, ``job_waiting_children_idx``), an index-only scan that
touches no job row — the cost of ``get_counts.sql`` without reading the payload columns. The
finished jobs, most of the rows (bounded by the queue's own ``removeOnComplete``/``removeOnFail``,
as on Redis), are counted again only when something was committed since they were last counted
(``queues.postgres.finished_reuse``); the other counts are read every time.
"""

from __future__ import annotations

import threading
import time

from psycopg import sql

from ..keys import QueueRef
from ..snapshot import QueueSnapshot
from ..states import COUNT_STATES
from .connection import PostgresConnection
from .event_window import Snapshot
from .finished_reuse import NOTHING_KEPT, KeptCounts, base_for_next_read

# getJobCounts()'s keys on this backend: Queuewatch's states, plus the paused queue's ready jobs.
PG_COUNT_STATES = (*COUNT_STATES, "paused")


def table(schema: str, name: str) -> sql.Composed:
    return sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(name))


def tables(schema: str) -> dict[str, sql.Composed]:
    """The tables a snapshot reads, for ``sql.SQL(...).format(**tables(schema))``."""
    return {name: table(schema, name) for name in ("job", "meta", "scheduler", "event")}


def schema_exists(db: PostgresConnection, schema: str) -> bool:
    """Whether ``schema`` holds BullMQ's tables (a schema named in the settings but never
    migrated holds no queue; it is not an error)."""
    rows = db.rows("SELECT to_regclass(%s) IS NOT NULL AND to_regclass(%s) IS NOT NULL", _qualified(schema))
    return bool(rows[0][0])


def _qualified(schema: str) -> list[str]:
    quoted = sql.Identifier(schema).as_string(None)
    return [f"{quoted}.job", f"{quoted}.meta"]


def discover_queue_names(db: PostgresConnection, schema: str) -> list[str]:
    """Every queue of the schema, sorted: those with jobs, with metadata (a queue BullMQ has
    opened) or with a scheduler. The job table is walked queue by queue along its primary key
    (a "skip scan"), one index probe per queue instead of a read of every job."""
    if not schema_exists(db, schema):
        return []
    query = sql.SQL(
        """
        WITH RECURSIVE walk(queue) AS (
          (SELECT queue FROM {job} ORDER BY queue LIMIT 1)
          UNION ALL
          SELECT (SELECT j.queue FROM {job} j WHERE j.queue > walk.queue ORDER BY j.queue LIMIT 1)
          FROM walk WHERE walk.queue IS NOT NULL
        )
        SELECT queue FROM walk WHERE queue IS NOT NULL
        UNION SELECT queue FROM {meta}
        UNION SELECT queue FROM {scheduler}
        """
    ).format(**tables(schema))
    return sorted(row[0] for row in db.rows(query))


def queue_exists(db: PostgresConnection, queue: QueueRef) -> bool:
    if not schema_exists(db, queue.prefix):
        return False
    query = sql.SQL(
        "SELECT EXISTS (SELECT 1 FROM {job} WHERE queue = %s) OR EXISTS (SELECT 1 FROM {meta} WHERE queue = %s)"
        " OR EXISTS (SELECT 1 FROM {scheduler} WHERE queue = %s)"
    ).format(**tables(queue.prefix))
    return bool(db.rows(query, [queue.name] * 3)[0][0])


# One statement, a part per partial index; each part's WHERE repeats its index's predicate so
# the planner can use it. Rows: (queue, state name as getJobCounts() says it, count), and
# (queue, LAST_EVENT, newest event id) read in the same statement, so with the same snapshot as
# the counts: the events an events follower may apply on top of them are those after it. The
# completed and failed jobs, most of the rows, are counted for every queue asked, or only for
# ``missing`` ones when the statement's snapshot shows the ``xmax`` of the counts kept from an
# earlier read (``queues.postgres.finished_reuse``: nothing was committed since, they are exact).
# Last, one row (NULL, the statement's snapshot, 1 when the kept counts were used else 0).
_COUNTS = """
WITH s AS (SELECT pg_current_snapshot() AS snap),
fin AS (
  SELECT CASE WHEN pg_snapshot_xmax(s.snap) = %(kept_xmax)s::text::xid8 THEN 1 ELSE 0 END AS kept,
         CASE WHEN pg_snapshot_xmax(s.snap) = %(kept_xmax)s::text::xid8 THEN %(missing)s::text[]
              ELSE %(queues)s::text[] END AS queues
    FROM s
)
SELECT queue, CASE WHEN priority = 0 THEN 'waiting' ELSE 'prioritized' END, count(*)
  FROM {job} WHERE state = 'waiting' AND queue = ANY(%(queues)s) GROUP BY queue, priority = 0
UNION ALL
SELECT queue, 'delayed', count(*) FROM {job} WHERE state = 'delayed' AND queue = ANY(%(queues)s) GROUP BY queue
UNION ALL
SELECT queue, 'active', count(*) FROM {job} WHERE state = 'active' AND queue = ANY(%(queues)s) GROUP BY queue
UNION ALL
SELECT queue, state::text, count(*) FROM {job}
  WHERE state IN ('completed', 'failed') AND queue = ANY((SELECT queues FROM fin)::text[]) GROUP BY queue, state
UNION ALL
SELECT queue, 'waiting-children', count(*) FROM {job}
  WHERE state = 'waiting-children' AND queue = ANY(%(queues)s) GROUP BY queue
UNION ALL
SELECT q.queue, 'last-event', (SELECT max(e.id) FROM {event} e WHERE e.queue = q.queue)
  FROM unnest(%(queues)s::text[]) AS q(queue)
UNION ALL
SELECT NULL, (SELECT snap::text FROM s), (SELECT kept FROM fin)
"""
LAST_EVENT = "last-event"
FINISHED = ("completed", "failed")

# Per queue: the paused flag, the number of schedulers, and the job a worker takes next among
# the unprioritized waiting ones (the tail of Redis's wait list), read through job_ready_idx.
_FACTS = """
SELECT q.queue,
       EXISTS (SELECT 1 FROM {meta} m WHERE m.queue = q.queue AND m.field = 'paused' AND m.value = '1'),
       (SELECT count(*) FROM {scheduler} s WHERE s.queue = q.queue),
       nxt.id, nxt.added_at_ms
  FROM unnest(%(queues)s::text[]) AS q(queue)
  LEFT JOIN LATERAL (
    SELECT j.id, j.added_at_ms FROM {job} j
     WHERE j.queue = q.queue AND j.state = 'waiting' AND j.priority = 0
     ORDER BY j.priority, j.seq LIMIT 1
  ) nxt ON true
"""


def read_snapshots(db: PostgresConnection, queues: list[QueueRef]) -> list[QueueSnapshot]:
    """The snapshot of each queue, every count read now (no counts kept from an earlier read)."""
    return SnapshotReader().read(db, queues)


class SnapshotReader:
    """Reads snapshots, schema by schema. The completed and failed counts, most of the rows,
    are kept between reads and used again only when PostgreSQL's snapshot proves nothing was
    committed since they were counted (``queues.postgres.finished_reuse``); every other figure
    is read every time. A source keeps one reader; ``recounted`` says how many queues' finished
    jobs the last read counted."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[str, KeptCounts] = {}
        self.recounted = 0

    def read(self, db: PostgresConnection, queues: list[QueueRef]) -> list[QueueSnapshot]:
        by_schema: dict[str, list[str]] = {}
        for q in queues:
            by_schema.setdefault(q.prefix, []).append(q.name)
        counted: dict[tuple[str, str], dict[str, int]] = {}
        facts: dict[tuple[str, str], tuple] = {}
        with self._lock:  # one read at a time: each starts from what the one before kept
            self.recounted = 0
            for schema, names in by_schema.items():
                if not schema_exists(db, schema):
                    self._kept.pop(schema, None)
                    continue
                fmt = tables(schema)
                for name, state_counts in self._read_counts(db, schema, names).items():
                    counted[(schema, name)] = state_counts
                for name, *rest in db.rows(sql.SQL(_FACTS).format(**fmt), {"queues": names}):
                    facts[(schema, name)] = tuple(rest)
        now = int(time.time() * 1000)
        return [_snapshot(q, counted.get((q.prefix, q.name), {}), facts.get((q.prefix, q.name)), now) for q in queues]

    def _read_counts(self, db: PostgresConnection, schema: str, names: list[str]) -> dict[str, dict[str, int]]:
        """Every count of these queues, from one statement (one snapshot of the database)."""
        kept = base_for_next_read(self._kept.get(schema))
        missing = [n for n in names if n not in kept.counts]
        params = {"queues": names, "missing": missing, "kept_xmax": kept.at.xmax if kept.at is not None else None}
        found: dict[str, dict[str, int]] = {n: {} for n in names}
        snap, used_kept = None, False
        for name, state, n in db.rows(sql.SQL(_COUNTS).format(**tables(schema)), params):
            if name is None:
                snap, used_kept = Snapshot.parse(state), n == 1
            elif n is not None:
                found[name][state] = int(n)
        assert snap is not None
        if used_kept:
            fresh = {n: {s: c for s, c in found[n].items() if s in FINISHED} for n in missing}
            for name in names:
                if name not in fresh:
                    found[name].update(kept.counts[name])
        else:
            fresh = {n: {s: c for s, c in found[n].items() if s in FINISHED} for n in names}
            kept = NOTHING_KEPT
        self.recounted += len(fresh)
        self._kept[schema] = kept.extended(fresh, snap)  # none kept when ``snap`` cannot vouch
        return found


def _snapshot(q: QueueRef, found: dict[str, int], facts: tuple | None, now: int) -> QueueSnapshot:
    paused, schedulers, oldest_id, oldest_ts = facts or (False, 0, None, None)
    last_event = found.get(LAST_EVENT)
    return QueueSnapshot(
        queue=q,
        counts=job_counts(found, paused=bool(paused)),
        paused=bool(paused),
        schedulers=int(schedulers),
        oldest_waiting_id=oldest_id,
        oldest_waiting_ts=int(oldest_ts) if oldest_ts is not None else None,
        last_event_id=str(last_event) if last_event is not None else None,
        taken_at=now,
    )


def job_counts(found: dict[str, int], *, paused: bool) -> dict[str, int]:
    """The counts as this backend's ``Queue.getJobCounts()`` reports them, key for key: on a
    paused queue the waiting jobs are reported under ``paused`` and none under ``waiting``."""
    counts = {state: found.get(state, 0) for state in PG_COUNT_STATES}
    if paused:
        counts["paused"], counts["waiting"] = counts["waiting"], 0
    return counts
