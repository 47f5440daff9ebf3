"""The scan of a bulk task on PostgreSQL, and of its preview: the jobs of one state matching a
filter, oldest first by (finish time, id) for finished states and (creation time, id) for the
others — a key a job keeps while it stays in the state — from a resumable cursor, fixed by the
plan's ``before_ms``. The query applies the state, the bound, the finish-time range and the name;
the failure reason's words and error group are matched here. Only reads.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
from psycopg import sql

from ..bulk.plan import BulkPlan
from ..error_groups import matches_fingerprint
from ..keys import QueueRef
from ..selection import JobFilter
from ..states import FINISHED_STATES
from .connection import PostgresConnection
from .snapshots import table


def _state_condition(state: str) -> sql.Composable:
    if state == "waiting":
        return sql.SQL("state = 'waiting' AND priority = 0")
    if state == "prioritized":
        return sql.SQL("state = 'waiting' AND priority > 0")
    return sql.SQL("state = {}").format(sql.Literal(state))


def _key_column(state: str) -> sql.Composable:
    return sql.Identifier("finished_at_ms" if state in FINISHED_STATES else "added_at_ms")


def _scan_query(queue: QueueRef, filt: JobFilter, *, after: bool) -> sql.Composed:
    key = _key_column(filt.state)
    conditions = [sql.SQL("queue = %(queue)s"), _state_condition(filt.state), sql.SQL("{} < %(before)s").format(key)]
    if filt.finished_from_ms is not None:
        conditions.append(sql.SQL("finished_at_ms >= %(from)s"))
    if filt.finished_to_ms is not None:
        conditions.append(sql.SQL("finished_at_ms <= %(to)s"))
    if filt.name is not None:
        conditions.append(sql.SQL("name = %(name)s"))
    if filt.name_contains:
        conditions.append(sql.SQL("strpos(lower(name), lower(%(name_contains)s)) > 0"))
    if after:
        conditions.append(sql.SQL("({}, id) > (%(key)s, %(id)s)").format(key))
    return sql.SQL(
        "SELECT id, {key}, failed_reason FROM {job} WHERE {where} ORDER BY {key}, id LIMIT %(limit)s"
    ).format(key=key, job=table(queue.prefix, "job"), where=sql.SQL(" AND ").join(conditions))


def _scan_params(queue: QueueRef, filt: JobFilter, before_ms: int, cursor: dict, limit: int) -> dict:
    return {
        "queue": queue.name,
        "before": before_ms,
        "from": filt.finished_from_ms,
        "to": filt.finished_to_ms,
        "name": filt.name,
        "name_contains": filt.name_contains,
        "key": cursor.get("score"),
        "id": cursor.get("member"),
        "limit": limit,
    }


def matches(filt: JobFilter, reason: str | None) -> bool:
    """The part of a filter the query does not apply: the failure reason's words and group."""
    text = reason or ""
    if filt.reason_contains and filt.reason_contains.lower() not in text.lower():
        return False
    return not filt.fingerprint or matches_fingerprint(text, filt.fingerprint)


@dataclass
class Page:
    rows: list[tuple]  # (id, key, failed_reason) in scan order
    match_ids: list[str]
    exhausted: bool

    def cursor_after(self, cursor: dict) -> dict:
        if not self.rows:
            return cursor
        last_id, last_key, _ = self.rows[-1]
        return {"score": int(last_key), "member": last_id}


def scan_page(
    conn: psycopg.Connection | PostgresConnection,
    queue: QueueRef,
    filt: JobFilter,
    *,
    before_ms: int,
    cursor: dict,
    size: int,
) -> Page:
    query = _scan_query(queue, filt, after=cursor.get("member") is not None)
    params = _scan_params(queue, filt, before_ms, cursor, size)
    rows = conn.rows(query, params) if isinstance(conn, PostgresConnection) else conn.execute(query, params).fetchall()
    return Page(rows, [r[0] for r in rows if matches(filt, r[2])], len(rows) < size)


def in_state(db: PostgresConnection, queue: QueueRef, filt: JobFilter, *, before_ms: int) -> int:
    """The entries a scan of ``filt`` passes (before the reasons are read)."""
    counted = sql.SQL("SELECT count(*) FROM ({}) AS s").format(_scan_query(queue, filt, after=False))
    return int(db.rows(counted, _scan_params(queue, filt, before_ms, {}, 2**62))[0][0])


@dataclass
class Count:
    count: int
    sample_ids: list[str]
    examined: int
    complete: bool
    in_state: int | None


def count_matches(
    db: PostgresConnection, queue: QueueRef, filt: JobFilter, *, before_ms: int, sample: int, limit: int | None
) -> Count:
    """How many jobs match now (examining at most ``limit`` entries), and the first ``sample``."""
    cursor: dict = {}
    found, examined = 0, 0
    ids: list[str] = []
    while True:
        size = 1000 if limit is None else max(1, min(1000, limit - examined))
        page = scan_page(db, queue, filt, before_ms=before_ms, cursor=cursor, size=size)
        examined += len(page.rows)
        found += len(page.match_ids)
        ids += page.match_ids[: max(0, sample - len(ids))]
        cursor = page.cursor_after(cursor)
        if page.exhausted:
            return Count(found, ids, examined, True, None)
        if limit is not None and examined >= limit:
            return Count(found, ids, examined, False, in_state(db, queue, filt, before_ms=before_ms))


def plan_total(db: PostgresConnection, plan: BulkPlan, *, limit: int | None) -> tuple[int | None, int]:
    """(the jobs the plan targets now, or ``None`` past ``limit`` examined; the entries the scan
    will pass when the total is not known) — ``queues.redis.bulk.plan_total``'s contract."""
    if plan.job_ids is not None:
        return len(plan.job_ids), 0
    counted = count_matches(db, plan.queue, plan.scan_filter, before_ms=plan.before_ms, sample=0, limit=limit)
    return (counted.count, 0) if counted.complete else (None, counted.in_state or 0)
