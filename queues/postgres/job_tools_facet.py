"""The job tools and deduplication facets on PostgreSQL, through BullMQ's own command files
(``queues.postgres.job_commands``: ``change_priority``, ``change_delay``, ``move_to_failed``,
``remove_deduplication_key``), each action in one transaction, with the Redis facets' outcomes
(``queues.job_tools``, ``queues.dedup``).

Move to failed keeps BullMQ's own lock order: its finalisation and parent advisory locks first
(``lock_finalization_queues``, the same calls ``move_to_failed`` makes, which a session may take
again), then the job's row. BullMQ fails a job only from ``active``; a waiting, prioritized or
delayed job is set ``active`` in the same transaction, with the row locked, and ``move_to_failed``
runs before the commit, so no worker can claim it in between (``move_to_active`` skips locked
rows). An active job is failed only when its lock has lapsed (``locked_until_ms`` passed, the
test BullMQ's stall check makes); while a worker holds it the tool refuses.

The deduplication keys are the ``dedup`` table's rows (a key whose ``expire_at_ms`` has passed
is reclaimed lazily by BullMQ and is not listed), the pending next add ``dedup_next``'s payload;
a page is read by key, 50 at a time, from where the last stopped.
"""

from __future__ import annotations

import json
import time

from psycopg import sql

from .. import job_tools
from ..actions import ActionResult
from ..dedup import DATA_PREVIEW, PAGE_SIZE, DedupKey, DedupPage, PendingNext, release_outcome
from ..keys import QueueRef
from ..redact import Redactor
from .connection import PostgresConnection, postgres_errors
from .job_commands import run
from .snapshots import table

# (state, priority, lifo, locked_until_ms, scheduler_id, opts) of one job, its row locked.
LOCK_TOOL = (
    "SELECT state::text, priority, opts ->> 'lifo' = 'true', locked_until_ms, scheduler_id, opts "
    "FROM job WHERE queue = %s AND id = %s FOR UPDATE"
)
FINALIZATION_LOCKS = (
    "SELECT lock_finalization_queues(%s, %s), pg_advisory_xact_lock(hashtext('bullmq:parent:' || %s || ':' || %s))"
)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _shown(state: str, priority: int) -> str:
    return "prioritized" if state == "waiting" and priority else state


def keep_args(remove_on_fail: object) -> tuple[bool, int | None, int | None]:
    """(remove_all, keep_age, keep_count) as Node's PostgreSQL backend makes them of ``removeOnFail``."""
    if remove_on_fail is True:
        return True, None, None
    if isinstance(remove_on_fail, bool) or remove_on_fail is None:
        return False, None, None
    if isinstance(remove_on_fail, int):
        return False, None, remove_on_fail
    if isinstance(remove_on_fail, dict):
        age, count = remove_on_fail.get("age"), remove_on_fail.get("count")
        return False, age if isinstance(age, int) else None, count if isinstance(count, int) else None
    return False, None, None


class PostgresJobTools:
    def __init__(self, db: PostgresConnection, *, connection: str):
        self._db, self.connection = db, connection

    def _writing(self):
        return postgres_errors(self.connection, self._db.url, writing=True)

    def change_priority(self, queue: QueueRef, *, job_id: str, priority: int) -> ActionResult:
        with self._writing(), self._db.transaction(queue.prefix) as conn:
            row = conn.execute(LOCK_TOOL, (queue.name, job_id)).fetchone()
            if row is None:
                return job_tools.priority_outcome(job_id, -1, priority=priority)
            if _shown(row[0], row[1]) not in job_tools.PRIORITY_STATES:
                return job_tools.priority_outcome(job_id, -3, priority=priority)
            found = run(conn, "change_priority", (queue.name, job_id, priority, bool(row[2])))
            return job_tools.priority_outcome(job_id, int(found[0]) if found else -1, priority=priority)

    def change_delay(self, queue: QueueRef, *, job_id: str, delay_ms: int) -> ActionResult:
        now = _now_ms()
        with self._writing(), self._db.transaction(queue.prefix) as conn:
            found = run(conn, "change_delay", (queue.name, job_id, delay_ms, now))
            return job_tools.delay_outcome(job_id, int(found[0]) if found else -1, run_at_ms=now + delay_ms)

    def move_to_failed(self, queue: QueueRef, *, job_id: str, reason: str) -> ActionResult:
        now = _now_ms()
        with self._writing(), self._db.transaction(queue.prefix) as conn:
            conn.execute(FINALIZATION_LOCKS, (queue.name, job_id, queue.name, job_id))
            row = conn.execute(LOCK_TOOL, (queue.name, job_id)).fetchone()
            if row is None:
                return job_tools.failed_outcome(job_id, -1)
            state, scheduler = _shown(row[0], row[1]), row[4]
            if state not in job_tools.FAIL_STATES:
                return job_tools.failed_outcome(job_id, -3)
            if state == "active" and row[3] is not None and int(row[3]) > now:
                return job_tools.failed_outcome(job_id, -6)
            if scheduler and state != "active":
                return job_tools.scheduler_iteration(job_id)
            if state != "active":
                conn.execute("UPDATE job SET state = 'active' WHERE queue = %s AND id = %s", (queue.name, job_id))
            opts = row[5] if isinstance(row[5], dict) else {}
            remove_all, keep_age, keep_count = keep_args(opts.get("removeOnFail"))
            run(conn, "move_to_failed", (queue.name, job_id, "0", reason, None, now, remove_all, keep_age, keep_count))
            kept = conn.execute("SELECT 1 FROM job WHERE queue = %s AND id = %s", (queue.name, job_id)).fetchone()
            return job_tools.failed_outcome(job_id, 0, kept=kept is not None)


class PostgresDedup:
    def __init__(self, db: PostgresConnection, writer: PostgresConnection, *, connection: str):
        self._db, self._writer, self.connection = db, writer, connection

    def page(self, queue: QueueRef, *, cursor: str, redactor: Redactor) -> DedupPage:
        # The cursor is the last id of the previous page (hex, so any id travels in a URL's digits
        # and letters); "0" the start.
        after = bytes.fromhex(cursor[1:]).decode() if cursor.startswith("1") and len(cursor) > 1 else None
        query = sql.SQL(
            "SELECT d.dedup_id, d.job_id, d.expire_at_ms, EXISTS (SELECT 1 FROM {job} j WHERE j.queue = d.queue "
            "AND j.id = d.job_id), n.payload FROM {dedup} d LEFT JOIN {next} n ON n.queue = d.queue AND "
            "n.dedup_id = d.dedup_id WHERE d.queue = %s AND (d.expire_at_ms IS NULL OR d.expire_at_ms > %s) "
            "AND (%s::text IS NULL OR d.dedup_id > %s) ORDER BY d.dedup_id LIMIT %s"
        ).format(
            job=table(queue.prefix, "job"), dedup=table(queue.prefix, "dedup"), next=table(queue.prefix, "dedup_next")
        )
        now = _now_ms()
        with postgres_errors(self.connection, self._db.url):
            rows = self._db.rows(query, (queue.name, now, after, after, PAGE_SIZE + 1))
        keys = [self._key(row, now, redactor) for row in rows[:PAGE_SIZE]]
        more = len(rows) > PAGE_SIZE
        return DedupPage(keys=keys, cursor="1" + keys[-1].dedup_id.encode().hex() if more else "0", examined_calls=1)

    @staticmethod
    def _key(row: tuple, now: int, redactor: Redactor) -> DedupKey:
        dedup_id, owner, expire_at, exists, payload = row
        pending = None
        if isinstance(payload, dict):
            data = json.dumps(payload.get("data"), ensure_ascii=False, separators=(",", ":"))
            pending = PendingNext(
                name=str(payload.get("name") or ""),
                data_preview=redactor.text(data)[:DATA_PREVIEW],
                data_bytes=len(data.encode()),
                job_id=str(payload.get("jobId") or ""),
            )
        ttl = None if expire_at is None else max(0, int(expire_at) - now)
        return DedupKey(dedup_id=dedup_id, owner=owner, ttl_ms=ttl, owner_exists=bool(exists), pending=pending)

    def release(self, queue: QueueRef, *, dedup_id: str, owner: str) -> ActionResult:
        with postgres_errors(self.connection, self._writer.url, writing=True):
            with self._writer.transaction(queue.prefix) as conn:
                found = run(conn, "remove_deduplication_key", (queue.name, dedup_id, owner, _now_ms()))
        return release_outcome(dedup_id, owner, 1 if found else 0)
