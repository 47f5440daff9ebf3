"""The commands facet on PostgreSQL: retry, discard, promote, pause and resume, each through
BullMQ's own command file (``bullmq/postgres/commands/<name>.sql`` of the pinned PyPI package,
the same text Node BullMQ 6.7 runs) in one transaction, with the Redis facet's outcomes.

Our own statements only read: each action first locks the job's row (``SELECT … FOR UPDATE``)
to tell apart what BullMQ's functions fold into one code (``remove`` returns 0 both for a
missing job and for one a worker holds), then calls the command. The row stays locked until
the commit, so what was read is what the command acts on.

One difference from Redis: a retry with ``reset_counters`` resets the attempts made and
started (``reprocess_job``'s own flags) but not the stall counter, which no BullMQ command
resets on PostgreSQL (on Redis our composed script deletes ``stc``). The other commands
(clean, redrive, add, edit-and-retry, queue settings, drain, obliterate) are not built yet:
they raise ``NotOffered`` naming the action.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import NoReturn

import psycopg

from .. import actions, edit_retry, job_add, queue_settings
from ..errors import NotOffered
from ..job_options import NewJob
from ..keys import QueueRef
from ..messages import _
from ..states import RETRYABLE_STATES
from .connection import PostgresConnection, postgres_errors

KIND = "postgres"
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
    the server (a raw cursor; psycopg's own ``%s`` would need the text rewritten)."""
    with psycopg.RawCursor(conn) as cur:
        cur.execute(command_sql(name), params)
        return cur.fetchone() if cur.description else None


_LOCK_JOB = "SELECT state::text, opts ->> 'lifo' = 'true' FROM job WHERE queue = %s AND id = %s FOR UPDATE"


class PostgresCommands:
    def __init__(self, db: PostgresConnection, *, connection: str):
        self._db, self.connection = db, connection

    def _not_offered(self, what: str) -> NoReturn:
        raise NotOffered(connection=self.connection, kind=KIND, facet=what)

    def retry(self, queue: QueueRef, *, job_id: str, reset_counters: bool) -> actions.ActionResult:
        with postgres_errors(self.connection, self._db.url, writing=True), self._db.transaction(queue.prefix) as conn:
            row = conn.execute(_LOCK_JOB, (queue.name, job_id)).fetchone()
            if row is None:
                return actions.ActionResult(job_id, actions.MISSING, actions.gone(job_id))
            state, lifo = row
            if state not in RETRYABLE_STATES:
                return actions.not_retryable(job_id)
            found = run(conn, "reprocess_job", (queue.name, job_id, state, bool(lifo), reset_counters, reset_counters))
            return actions.retry_outcome(job_id, int(found[0]) if found else -1, state=state)

    def discard(self, queue: QueueRef, *, job_id: str) -> actions.ActionResult:
        with postgres_errors(self.connection, self._db.url, writing=True), self._db.transaction(queue.prefix) as conn:
            if conn.execute(_LOCK_JOB, (queue.name, job_id)).fetchone() is None:
                return actions.ActionResult(job_id, actions.MISSING, actions.gone(job_id))
            try:
                with conn.transaction():  # a savepoint: BullMQ's refusal is an exception
                    found = run(conn, "remove", (queue.name, job_id, False))
            except psycopg.Error as exc:
                if exc.sqlstate == "BM001" and exc.diag.message_detail == str(SCHEDULER_JOB):
                    return actions.scheduler_iteration_refusal(job_id)
                raise
            # The row was locked above and is there: 0 removed means a worker holds its lock.
            return actions.removed(job_id) if found and int(found[0]) > 0 else actions.locked_refusal(job_id)

    def promote(self, queue: QueueRef, *, job_id: str) -> actions.ActionResult:
        with postgres_errors(self.connection, self._db.url, writing=True), self._db.transaction(queue.prefix) as conn:
            if conn.execute(_LOCK_JOB, (queue.name, job_id)).fetchone() is None:
                return actions.ActionResult(job_id, actions.MISSING, actions.gone(job_id))
            found = run(conn, "promote", (queue.name, job_id))
            return actions.promote_outcome(job_id, int(found[0]) if found else -1)

    def pause(self, queue: QueueRef, *, paused: bool) -> None:
        with postgres_errors(self.connection, self._db.url, writing=True), self._db.transaction(queue.prefix) as conn:
            run(conn, "pause", (queue.name, paused))

    def redrive(
        self, dlq: QueueRef, *, job_id: str, source: QueueRef, payload_field: str | None = None
    ) -> actions.ActionResult:
        self._not_offered(_("redriving dead letters"))

    def clean(self, queue: QueueRef, *, state: str, older_than_ms: int, limit: int) -> int:
        self._not_offered(_("cleaning a queue"))

    def add(self, queue: QueueRef, *, job: NewJob, schema: dict | None) -> job_add.AddOutcome:
        self._not_offered(_("adding jobs"))

    def edit_and_retry(
        self, queue: QueueRef, *, plan: edit_retry.EditPlan, reset_counters: bool
    ) -> actions.ActionResult:
        self._not_offered(_("editing and retrying jobs"))

    def settings(self, queue: QueueRef) -> queue_settings.QueueSettings:
        self._not_offered(_("queue settings"))

    def set_concurrency(self, queue: QueueRef, *, concurrency: int | None) -> None:
        self._not_offered(_("queue settings"))

    def set_rate_limit(self, queue: QueueRef, *, max_jobs: int | None, duration_ms: int | None) -> None:
        self._not_offered(_("queue settings"))

    def remove_rate_limit_key(self, queue: QueueRef) -> bool:
        self._not_offered(_("queue settings"))

    def drain(self, queue: QueueRef, *, delayed: bool) -> int:
        self._not_offered(_("draining a queue"))

    def obliterate(self, queue: QueueRef) -> None:
        self._not_offered(_("obliterating a queue"))
