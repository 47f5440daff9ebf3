"""The schedulers facet on PostgreSQL: BullMQ's ``scheduler`` table, read like the Redis
``repeat`` set and hashes (``queues.redis.schedulers``).

One row per scheduler: its pattern or ``every_ms``, zone, dates, ``limit_count``,
``iteration_count`` and ``next_run_ms`` (the due time of its current iteration, whose job id is
``repeat:<scheduler id>:<next_run_ms>`` as on Redis). A scheduler BullMQ has finished (limit
reached, end date passed) keeps its row with its last run as ``next_run_ms``: the same rule
(``queues.schedulers.is_finished``) tells it apart from a late one, reading whether that last
iteration's job still waits for a worker.

Edits are not offered on this kind: BullMQ's upsert (``add_job_scheduler``) takes the next run
as computed by the client's cron library and the template's delayed-job options as the client
builds them, and Queuewatch's edit path is built on the Redis script's arguments; calling the SQL
function with arguments that differ from Node's would schedule differently. Reads only: the list
(the spec for the edit form is not offered either)."""

from __future__ import annotations

import builtins
import time
from typing import NoReturn

from psycopg import sql

from .. import scheduler_edit, scheduler_migration
from ..errors import NotOffered
from ..keys import QueueRef
from ..messages import _
from ..scheduler_runs import Iteration, SchedulerDetail, iteration_id
from ..scheduler_zone import PatternZone, stored_zone, upsert_zone
from ..schedulers import Scheduler, is_finished
from .connection import PostgresConnection, postgres_errors
from .snapshots import table

MAX_SCHEDULERS = 10_000  # as on Redis: every scheduler, for the alert rules and health checks
EDIT_WORDS = _("job scheduler edits")

_COLUMNS = (
    "s.scheduler_id, COALESCE(s.name, ''), COALESCE(s.pattern, ''), s.every_ms, COALESCE(s.tz, ''), s.next_run_ms,"
    " s.iteration_count, s.limit_count, s.start_date_ms, s.end_date_ms, s.offset_ms,"
    " it.added_at_ms IS NOT NULL AND it.processed_at_ms IS NULL"
)


class PostgresSchedulers:
    kind = "postgres"
    edits = False  # pages offer no edit, remove or migrate links for this kind

    def __init__(self, db: PostgresConnection, *, connection: str, cron_tz: str = ""):
        self.db, self.connection, self.cron_tz = db, connection, cron_tz

    def _rows(self, query, params) -> list[tuple]:
        with postgres_errors(self.connection, self.db.url):
            return self.db.rows(query, params)

    def _read(
        self, queue: QueueRef, where: str, params: list, *, start: int = 0, count: int = MAX_SCHEDULERS
    ) -> list[Scheduler]:
        # The current iteration's job, joined by its id (the job table's primary key).
        query = sql.SQL(
            "SELECT {columns} FROM {scheduler} s LEFT JOIN {job} it"
            " ON it.queue = s.queue AND it.id = 'repeat:' || s.scheduler_id || ':' || s.next_run_ms"
            " WHERE s.queue = %s {where} ORDER BY s.next_run_ms NULLS LAST, s.scheduler_id LIMIT %s OFFSET %s"
        ).format(
            columns=sql.SQL(_COLUMNS),
            scheduler=table(queue.prefix, "scheduler"),
            job=table(queue.prefix, "job"),
            where=sql.SQL(where),
        )
        now_ms = int(time.time() * 1000)
        return [self._entry(row, now_ms) for row in self._rows(query, [queue.name, *params, count, start])]

    def _entry(self, row: tuple, now_ms: int) -> Scheduler:
        sid, name, pattern, every, tz, next_run, iterations, limit, start, end, offset, pending = row
        s = Scheduler(
            id=sid,
            name=name,
            pattern=pattern,
            every=every,
            tz=tz,
            next_run=next_run,
            iterations=iterations,
            limit=limit,
            start_date=start,
            end_date=end,
            zone=stored_zone(pattern=pattern, tz=tz, score=next_run, configured=self.cron_tz),
            offset=offset if every else None,
        )
        if (
            next_run is not None
            and (limit is not None or end is not None)
            and is_finished(
                iterations=iterations,
                limit=limit,
                end_date=end,
                pattern=pattern,
                tz=s.pattern_tz,
                last_run=next_run,
                last_run_pending=bool(pending),
                now_ms=now_ms,
            )
        ):
            s.finished, s.next_run = True, None
        return s

    def list(self, queue: QueueRef) -> list[Scheduler]:
        return self._read(queue, "", [])

    def page(self, queue: QueueRef, *, start: int, count: int) -> tuple[builtins.list[Scheduler], int]:
        query = sql.SQL("SELECT count(*) FROM {scheduler} WHERE queue = %s").format(
            scheduler=table(queue.prefix, "scheduler")
        )
        ((total,),) = self._rows(query, [queue.name])
        return self._read(queue, "", [], start=start, count=count), int(total)

    def spec(self, queue: QueueRef, *, scheduler_id: str) -> scheduler_edit.SchedulerSpec | None:
        # Only the edit form and the edits' audit read a spec: not offered with them.
        self._not_offered()

    def _not_offered(self) -> NoReturn:
        raise NotOffered(connection=self.connection, kind=self.kind, facet=EDIT_WORDS)

    def edit(self, queue: QueueRef, *, spec: scheduler_edit.SchedulerSpec) -> scheduler_edit.SchedulerResult:
        self._not_offered()

    def create(self, queue: QueueRef, *, spec: scheduler_edit.SchedulerSpec) -> scheduler_edit.SchedulerResult:
        self._not_offered()

    def detail(self, queue: QueueRef, *, scheduler_id: str) -> SchedulerDetail | None:
        """The listed entry and its pending iteration; the template (like the spec) and the last
        run are not read on this kind."""
        found = self._read(queue, "AND s.scheduler_id = %s", [scheduler_id], count=1)
        if not found:
            return None
        s = found[0]
        pending = Iteration(iteration_id(s.id, s.next_run), s.next_run, "") if s.next_run is not None else None
        return SchedulerDetail(scheduler=s, spec=None, pending=pending, last_run=None)

    def workers_zone(self, queue: QueueRef, *, scheduler_id: str = "") -> PatternZone | None:
        return upsert_zone(pattern="* * * * *", tz="", configured=self.cron_tz, stored=None)

    def remove(self, queue: QueueRef, *, scheduler_id: str) -> scheduler_edit.SchedulerResult:
        self._not_offered()

    def migration_plan(self, queue: QueueRef, *, member: str, scheduler_id: str) -> scheduler_migration.MigrationPlan:
        self._not_offered()

    def migrate(self, queue: QueueRef, *, plan: scheduler_migration.MigrationPlan) -> scheduler_edit.SchedulerResult:
        self._not_offered()
