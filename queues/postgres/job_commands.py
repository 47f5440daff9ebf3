"""BullMQ's command files on PostgreSQL, and the per-job actions built on them, each run inside
a transaction the caller holds (the commands facet opens one per action; the bulk engine one per
batch, so a batch commits or rolls back whole).

A command is BullMQ's own ``bullmq/postgres/commands/<name>.sql`` of the pinned PyPI package
(the same text Node BullMQ 6.7 runs), unchanged. Our own statements only read: each per-job
action first locks the job's row (``SELECT … FOR UPDATE``) to tell apart what BullMQ's
functions fold into one code (``remove`` returns 0 both for a missing job and for one a worker
holds), then calls the command. The row stays locked until the commit, so what was read is what
the command acts on, and a worker's own command on that job waits for the commit.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import psycopg

from .. import actions
from ..keys import QueueRef
from ..states import FINISHED_STATES

SCHEDULER_JOB = -8  # ``remove`` raises BM001 with this DETAIL for a job scheduler's job


def _commands_dir() -> Path:
    spec = importlib.util.find_spec("bullmq")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("The bullmq package (requirements.txt) is not installed.")
    return Path(spec.submodule_search_locations[0]).resolve() / "postgres" / "commands"


@functools.cache
def command_sql(name: str) -> str:
    """BullMQ's command file, unchanged (it names no schema: the transaction's search path does)."""
    return (_commands_dir() / f"{name}.sql").read_text()


def run(conn: psycopg.Connection, name: str, params: tuple) -> tuple | None:
    """Run BullMQ's command ``name`` as Node does: its numbered ``$1`` placeholders bound by
    the server (a raw cursor; psycopg's own ``%s`` would need the text rewritten). The first
    row, or ``None``."""
    with psycopg.RawCursor(conn) as cur:
        cur.execute(command_sql(name), params)
        return cur.fetchone() if cur.description else None


def run_all(conn: psycopg.Connection, name: str, params: tuple) -> list[tuple]:
    with psycopg.RawCursor(conn) as cur:
        cur.execute(command_sql(name), params)
        return cur.fetchall() if cur.description else []


# (state, lifo, finished_at_ms, added_at_ms, priority) of one job, its row locked until the commit.
LOCK_JOB = (
    "SELECT state::text, opts ->> 'lifo' = 'true', finished_at_ms, added_at_ms, priority "
    "FROM job WHERE queue = %s AND id = %s FOR UPDATE"
)


def lock_job(conn: psycopg.Connection, queue: QueueRef, job_id: str) -> tuple | None:
    return conn.execute(LOCK_JOB, (queue.name, job_id)).fetchone()


def shown_state(row: tuple) -> str:
    """Queuewatch's name for a locked row's state: a waiting job with a priority is ``prioritized``."""
    return "prioritized" if row[0] == "waiting" and row[4] else row[0]


def within(row: tuple, before_ms: int | None) -> bool:
    """Whether a locked job is one a bulk task fixed at ``before_ms`` targets: finished before
    it, or (not finished) created before it. ``None``: no bound (a single action)."""
    if before_ms is None:
        return True
    stamp = row[2] if row[0] in FINISHED_STATES else row[3]
    return stamp is not None and int(stamp) < before_ms


def retry_locked(
    conn: psycopg.Connection, queue: QueueRef, job_id: str, row: tuple, *, reset_counters: bool
) -> actions.ActionResult:
    """``reprocess_job`` on a job whose row ``lock_job`` returned (a finished job back to waiting)."""
    state, lifo = row[0], row[1]
    found = run(conn, "reprocess_job", (queue.name, job_id, state, bool(lifo), reset_counters, reset_counters))
    return actions.retry_outcome(job_id, int(found[0]) if found else -1, state=state)


def discard_locked(conn: psycopg.Connection, queue: QueueRef, job_id: str) -> actions.ActionResult:
    """``remove`` on a job whose row is locked (and there)."""
    try:
        with conn.transaction():  # a savepoint: BullMQ's refusal is an exception
            found = run(conn, "remove", (queue.name, job_id, False))
    except psycopg.Error as exc:
        if exc.sqlstate == "BM001" and exc.diag.message_detail == str(SCHEDULER_JOB):
            return actions.scheduler_iteration_refusal(job_id)
        raise
    # The row was locked and is there: 0 removed means a worker holds its lock.
    return actions.removed(job_id) if found and int(found[0]) > 0 else actions.locked_refusal(job_id)


def promote_locked(conn: psycopg.Connection, queue: QueueRef, job_id: str) -> actions.ActionResult:
    found = run(conn, "promote", (queue.name, job_id))
    return actions.promote_outcome(job_id, int(found[0]) if found else -1)
