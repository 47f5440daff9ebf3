"""The monitor's probes on PostgreSQL: active jobs and their lapsed locks, single fields of jobs
met as events, finish counts per minute and due delayed jobs, each one statement per schema.

A job is stalled on this backend when its row is ``active`` and its ``locked_until_ms`` has
passed: the worker that took it stopped extending its lock (``extend_lock``), and the next
``move_stalled_jobs_to_wait`` of a live worker marks it, then moves it back to waiting. The
lock is a column, not a key, so "without lock" is the same test BullMQ's recovery makes
(``locked_until_ms < now``), read through ``job_active_idx (queue, locked_until_ms)``. A row
whose ``locked_until_ms`` is NULL is not a lapsed lock (BullMQ leaves such rows alone too).

``job_fields`` answers the Redis job-hash field names the monitor asks for (``atm``, ``ats``,
``stc``, ``finishedOn``, ``name``, ``opts``…) from the columns that hold them, as text.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from psycopg import sql

from ..keys import QueueRef
from ..stalls import ActiveLists
from .connection import PostgresConnection, postgres_errors
from .jobs_facet import SUMMARY_COLUMNS
from .snapshots import table

READ_BUDGET = 50_000  # active ids read per call across all queues, as on Redis

# Redis job-hash field → the column holding it, as text (the summary's, plus the payloads).
FIELD_COLUMNS = {
    **SUMMARY_COLUMNS,
    "data": "data::text",
    "returnvalue": "return_value::text",
    "progress": "progress::text",
}


def _by_schema(queues) -> dict[str, list[QueueRef]]:
    out: dict[str, list[QueueRef]] = {}
    for q in queues:
        out.setdefault(q.prefix, []).append(q)
    return out


class PostgresProbes:
    def __init__(self, db: PostgresConnection, *, connection: str):
        self.db, self.connection = db, connection

    def _rows(self, query, params=None) -> list[tuple]:
        with postgres_errors(self.connection, self.db.url):
            return self.db.rows(query, params)

    def active(self, lengths: Mapping[QueueRef, int]) -> ActiveLists:
        """Every active job of each queue, newest first (as Redis's list reads head first). A
        queue past what is left of the budget gets its oldest jobs read (a crashed worker's
        jobs are those) and is reported partial."""
        result = ActiveLists(ids={q: [] for q in lengths})
        left = READ_BUDGET
        for schema, queues in _by_schema(q for q, n in lengths.items() if n > 0).items():
            whole, tails = [], []
            for q in queues:
                if lengths[q] <= left:
                    whole.append(q.name)
                    left -= lengths[q]
                else:
                    tails.append((q, left))
                    left = 0
            job = table(schema, "job")
            if whole:
                query = sql.SQL(
                    "SELECT queue, id FROM {} WHERE state = 'active' AND queue = ANY(%s) ORDER BY queue, seq DESC"
                ).format(job)
                by_name = {q.name: q for q in queues}
                for name, job_id in self._rows(query, (whole,)):
                    result.ids[by_name[name]].append(job_id)
            for q, budget in tails:
                result.partial.add(q)
                if budget <= 0:
                    continue
                query = sql.SQL(
                    "SELECT id FROM (SELECT id, seq FROM {} WHERE state = 'active' AND queue = %s"
                    " ORDER BY seq LIMIT %s) oldest ORDER BY seq DESC"
                ).format(job)
                result.ids[q] = [row[0] for row in self._rows(query, (q.name, budget))]
        return result

    def without_lock(self, jobs: Mapping[QueueRef, list[str]]) -> dict[QueueRef, list[str]]:
        now = int(time.time() * 1000)
        result: dict[QueueRef, list[str]] = {}
        for schema, queues in _by_schema(q for q, ids in jobs.items() if ids).items():
            query = sql.SQL(
                "SELECT j.queue, j.id FROM {job} j"
                " JOIN unnest(%s::text[], %s::text[]) AS w(queue, id) ON j.queue = w.queue AND j.id = w.id"
                " WHERE j.state = 'active' AND j.locked_until_ms IS NOT NULL AND j.locked_until_ms < %s"
            ).format(job=table(schema, "job"))
            names = [q.name for q in queues for _ in jobs[q]]
            ids = [j for q in queues for j in jobs[q]]
            lapsed = {(name, job_id) for name, job_id in self._rows(query, (names, ids, now))}
            for q in queues:
                stalled = [j for j in jobs[q] if (q.name, j) in lapsed]
                if stalled:
                    result[q] = stalled
        return result

    def job_fields(self, jobs: Sequence[tuple[QueueRef, str]], fields: Sequence[str]) -> list[list[bytes | None]]:
        columns = sql.SQL(", ").join(sql.SQL(FIELD_COLUMNS.get(f, "NULL::text")) for f in fields)
        found: dict[tuple[QueueRef, str], list[bytes | None]] = {}
        for schema, queues in _by_schema(dict.fromkeys(q for q, _ in jobs)).items():
            by_name = {q.name: q for q in queues}
            wanted = [(q.name, j) for q, j in jobs if q.prefix == schema]
            query = sql.SQL(
                "SELECT j.queue, j.id, {columns} FROM {job} j"
                " JOIN unnest(%s::text[], %s::text[]) AS w(queue, id) ON j.queue = w.queue AND j.id = w.id"
            ).format(columns=columns, job=table(schema, "job"))
            for name, job_id, *values in self._rows(query, ([n for n, _ in wanted], [j for _, j in wanted])):
                found[(by_name[name], job_id)] = [None if v is None else str(v).encode() for v in values]
        missing: list[bytes | None] = [None] * len(fields)
        return [found.get((q, j), missing) for q, j in jobs]

    def finished_counts(
        self, queues: Sequence[QueueRef], *, minutes: Sequence[int], width_ms: int
    ) -> dict[QueueRef, list[tuple[int, int]]]:
        out = {q: [(0, 0) for _ in minutes] for q in queues}
        if not minutes:
            return out
        start, end = min(minutes), max(minutes) + width_ms
        index = {m: i for i, m in enumerate(minutes)}
        for schema, qs in _by_schema(queues).items():
            by_name = {q.name: q for q in qs}
            # job_finished_idx (queue, state, finished_at_ms) answers each range.
            query = sql.SQL(
                "SELECT queue, state::text, %(start)s + ((finished_at_ms - %(start)s) / %(width)s) * %(width)s,"
                " count(*) FROM {} WHERE state IN ('completed', 'failed') AND queue = ANY(%(queues)s)"
                " AND finished_at_ms >= %(start)s AND finished_at_ms < %(end)s GROUP BY 1, 2, 3"
            ).format(table(schema, "job"))
            params = {"start": start, "end": end, "width": width_ms, "queues": list(by_name)}
            for name, state, minute, n in self._rows(query, params):
                i = index.get(int(minute))
                if i is None:
                    continue
                q = by_name[name]
                completed, failed = out[q][i]
                out[q][i] = (completed + int(n), failed) if state == "completed" else (completed, failed + int(n))
        return out

    def due_delayed(self, queues: Sequence[QueueRef], *, now_ms: int) -> dict[QueueRef, int]:
        out = dict.fromkeys(queues, 0)
        for schema, qs in _by_schema(queues).items():
            by_name = {q.name: q for q in qs}
            query = sql.SQL(
                "SELECT queue, count(*) FROM {} WHERE state = 'delayed' AND queue = ANY(%s)"
                " AND process_at_ms <= %s GROUP BY queue"
            ).format(table(schema, "job"))
            for name, n in self._rows(query, (list(by_name), now_ms)):
                out[by_name[name]] = int(n)
        return out
