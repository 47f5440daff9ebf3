"""The jobs facet on PostgreSQL: pages of jobs per state and one job's detail, read from
BullMQ's ``job`` table (plus ``job_log`` and ``job_dependency`` for the job page).

Results are the Redis facet's types (``JobPage``, ``JobSummary``, ``JobDetail``, ``JobLive``),
built by the same rules: a row's columns are handed to ``queues.jobs`` under the names BullMQ
gives them in a Redis job hash, so parsing, payload caps and redaction have one home.

Orders are those the queue page shows on Redis: waiting, prioritized and delayed in the order
they will run (``seq``, LIFO jobs first with their negative ``seq``; ``priority, seq``;
``process_at_ms``), active and waiting-children newest first, completed and failed by finish
time, newest first. Each ordering is one of BullMQ's partial indexes, so a page costs an index
range and the rows shown.

A bulk task's preview counts with the bulk engine's scan (``queues.postgres.bulk_scan``). The other
bounded scans (exports, error groups, retry advice) are not built yet: they raise ``NotOffered``.
A search by data is one bounded jsonb statement per step (``queues.postgres.data_search``).
The reads that feed actions (an edit plan, a job to duplicate) use ``queues.postgres.job_add``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, NoReturn

from psycopg import sql

from queues.text import to_text

from .. import data_search, edit_retry, error_groups, flows, job_add, jobs, listing, retry_advice, selection
from ..errors import JobNotFound, NotOffered
from ..keys import QueueRef
from ..messages import _
from ..redact import Redactor
from ..safe_json import parse_json
from . import bulk_scan as scan
from . import data_search as pg_data_search
from . import job_add as pg_job_add
from .connection import PostgresConnection, postgres_errors
from .snapshots import table

# What a Redis job hash calls each summary field, as a column of ``job`` (text, or NULL).
SUMMARY_COLUMNS = {
    "name": "name",
    "timestamp": "added_at_ms::text",
    "processedOn": "processed_at_ms::text",
    "finishedOn": "finished_at_ms::text",
    "atm": "attempts_made::text",
    "attemptsMade": "attempts_made::text",
    "ats": "attempts_started::text",
    "stc": "stalled_count::text",
    "opts": "opts::text",
    "delay": "delay_ms::text",
    "priority": "priority::text",
    "failedReason": "failed_reason",
    "rjk": "scheduler_id",
    "deid": "dedup_id",
    "parentKey": "parent_key",
    "defa": "deferred_failure",
}
_SUMMARY_SELECT = ", ".join(SUMMARY_COLUMNS[f] for f in jobs.SUMMARY_FIELDS)
_PARENT_AT = jobs.SUMMARY_FIELDS.index("parentKey")


def qualified_key(schema: str, key: str | None) -> str | None:
    """A job key as every kind shows it, ``<prefix>:<queue>:<id>``. BullMQ's PostgreSQL backend
    stores a flow's keys (``parent_key``, ``job_dependency.child_key``) as ``<queue>:<id>``,
    within the schema the whole flow lives in: the schema is this kind's prefix, so a parent or
    child link resolves like a Redis key (``queues.keys.parse_job_key``)."""
    return None if key is None else f"{schema}:{key}"


def _with_qualified_parent(schema: str, fields: list) -> list:
    fields[_PARENT_AT] = qualified_key(schema, fields[_PARENT_AT])
    return fields


# Fields of the job page and the raw download, by their Redis names.
PAYLOAD_COLUMNS = {
    "data": "data::text",
    "opts": "opts::text",
    "returnvalue": "return_value::text",
    "progress": "progress::text",
    "stacktrace": "stacktrace::text",
    "failedReason": "failed_reason",
}
# Queuewatch's state → (the rows in it, their display order). Paused is a flag, not a state.
STATE_ROWS = {
    "waiting": ("state = 'waiting' AND priority = 0", "seq"),
    "prioritized": ("state = 'waiting' AND priority > 0", "priority, seq"),
    "delayed": ("state = 'delayed'", "process_at_ms, seq"),
    "active": ("state = 'active'", "seq DESC"),
    "waiting-children": ("state = 'waiting-children'", "seq DESC"),
    "completed": ("state = 'completed'", "finished_at_ms DESC, seq DESC"),
    "failed": ("state = 'failed'", "finished_at_ms DESC, seq DESC"),
}
SCAN_WORDS = _("job exports and error groups")
# BullMQ's getState order for a row: a waiting row with a priority is "prioritized".
STATE_OF_ROW = "CASE WHEN state = 'waiting' AND priority > 0 THEN 'prioritized' ELSE state::text END"


def _score(due_ms: int | None) -> float | None:
    """A delayed job's due time as Redis encodes it in its score (``JobSummary.due_at``)."""
    return float(due_ms * 4096) if due_ms is not None else None


class PostgresJobs:
    kind = "postgres"

    def __init__(self, db: PostgresConnection, *, connection: str):
        self.db, self.connection = db, connection

    def _rows(self, query: sql.Composed | sql.SQL, params: Any = None) -> list[tuple]:
        with postgres_errors(self.connection, self.db.url):
            return self.db.rows(query, params)

    def _ids_in(self, queue: QueueRef, state: str, *, offset: int, limit: int) -> tuple[list[str], list[float] | None]:
        if state not in STATE_ROWS:
            return [], None
        where, order = STATE_ROWS[state]
        query = sql.SQL("SELECT id, process_at_ms FROM {job} WHERE queue = %s AND {where} ORDER BY {order}").format(
            job=table(queue.prefix, "job"), where=sql.SQL(where), order=sql.SQL(order)
        ) + sql.SQL(" OFFSET %s LIMIT %s")
        rows = self._rows(query, [queue.name, offset, limit])
        scores = [_score(due) or 0.0 for _, due in rows] if state == "delayed" else None
        return [row[0] for row in rows], scores

    def _length(self, queue: QueueRef, state: str) -> int:
        if state not in STATE_ROWS:
            return 0
        query = sql.SQL("SELECT count(*) FROM {job} WHERE queue = %s AND {where}").format(
            job=table(queue.prefix, "job"), where=sql.SQL(STATE_ROWS[state][0])
        )
        return int(self._rows(query, [queue.name])[0][0])

    def page(
        self,
        queue: QueueRef,
        state: str,
        *,
        page: int,
        page_size: int,
        name_filter: str,
        scan_limit: int,
        redactor: Redactor,
    ) -> listing.JobPage:
        page = max(1, page)
        total = self._length(queue, state)
        start = (page - 1) * page_size
        if not name_filter:
            ids, scores = self._ids_in(queue, state, offset=start, limit=page_size)
            found = self.summaries(queue, ids, scores, redactor=redactor)
            return listing.JobPage(state, found, total, page, page_size, has_next=start + page_size < total)
        # As on Redis: only the first ``scan_limit`` jobs of the state (in display order) are
        # looked at, and the page says how far it got.
        ids, scores = self._ids_in(queue, state, offset=0, limit=min(scan_limit, total))
        needle = name_filter.lower()
        matches = [
            job
            for job in self.summaries(queue, ids, scores, redactor=redactor)
            if job.exists and needle in job.name.lower()
        ]
        return listing.JobPage(
            state,
            matches[start : start + page_size],
            total,
            page,
            page_size,
            name_filter=name_filter,
            scanned=len(ids),
            scan_complete=len(ids) >= total,
            has_next=len(matches) > start + page_size,
        )

    def first_page(self, queue: QueueRef, state: str, *, size: int) -> tuple[list[str], list[float] | None]:
        return self._ids_in(queue, state, offset=0, limit=size)

    def summaries(
        self, queue: QueueRef, ids: list[str], scores: list[float] | None = None, *, redactor: Redactor
    ) -> list[jobs.JobSummary]:
        if not ids:
            return []
        query = sql.SQL("SELECT id, {fields} FROM {job} WHERE queue = %s AND id = ANY(%s)").format(
            fields=sql.SQL(_SUMMARY_SELECT), job=table(queue.prefix, "job")
        )
        by_id = {
            row[0]: _with_qualified_parent(queue.prefix, list(row[1:])) for row in self._rows(query, [queue.name, ids])
        }
        missing = [None] * len(jobs.SUMMARY_FIELDS)
        given: list[float | None] = list(scores) if scores else [None] * len(ids)
        found = [jobs.summary_or_unreadable(i, by_id.get(i, missing), s) for i, s in zip(ids, given)]
        return [j.redacted(redactor) for j in found]

    def _job_row(self, queue: QueueRef, job_id: str, columns: list[str]) -> tuple | None:
        query = sql.SQL("SELECT {state}, process_at_ms, {fields} FROM {job} WHERE queue = %s AND id = %s").format(
            state=sql.SQL(STATE_OF_ROW), fields=sql.SQL(", ".join(columns)), job=table(queue.prefix, "job")
        )
        rows = self._rows(query, [queue.name, job_id])
        return rows[0] if rows else None

    def _logs(self, queue: QueueRef, job_id: str, tail: int) -> tuple[list[str], int]:
        query = sql.SQL(
            "SELECT row, count(*) OVER () FROM {log} WHERE queue = %s AND job_id = %s ORDER BY idx DESC LIMIT %s"
        ).format(log=table(queue.prefix, "job_log"))
        rows = self._rows(query, [queue.name, job_id, tail])
        return [row[0] for row in reversed(rows)], (int(rows[0][1]) if rows else 0)

    def detail(self, queue: QueueRef, job_id: str, *, cap: int, redactor: Redactor) -> jobs.JobDetail:
        payload_names = list(PAYLOAD_COLUMNS)
        row = self._job_row(queue, job_id, [_SUMMARY_SELECT, *PAYLOAD_COLUMNS.values(), "coalesce(processed_by, '')"])
        if row is None:
            raise JobNotFound(queue.name, job_id)
        state, due = row[0], row[1]
        n = len(jobs.SUMMARY_FIELDS)
        summary = jobs.summary_from_fields(
            job_id,
            _with_qualified_parent(queue.prefix, list(row[2 : 2 + n])),
            _score(due) if state == "delayed" else None,
        ).redacted(redactor)
        raw = dict(zip(payload_names, row[2 + n : 2 + n + len(payload_names)]))
        logs, logs_total = self._logs(queue, job_id, jobs.LOG_TAIL)
        children = self._children(queue, job_id)

        def payload(name: str) -> jobs.Payload:
            return jobs.prepare_payload(raw[name] or "", cap=cap, redactor=redactor)

        return jobs.JobDetail(
            queue=queue,
            id=job_id,
            state=state,
            summary=summary,
            data=payload("data"),
            opts=payload("opts"),
            returnvalue=payload("returnvalue"),
            progress=payload("progress"),
            failed_reason=redactor.text(raw["failedReason"] or ""),
            stacktrace=[redactor.text(line) for line in _stack_lines(raw["stacktrace"])],
            logs=[redactor.text(line) for line in logs],
            logs_total=logs_total,
            parent=summary.parent_key,
            children_pending=list(children.get("pending", {})),
            children_processed=list(children.get("processed", {})),
            children_ignored=list(children.get("ignored", {})),
            children_failed=list(children.get("failed", {})),
            child_outcomes={
                key: jobs.child_outcome(value, redactor)
                for kind in ("processed", "ignored", "failed")
                for key, value in children.get(kind, {}).items()
                if value is not None
            },
            processed_by=row[-1],
        )

    def _children(self, queue: QueueRef, job_id: str) -> dict[str, dict[str, str | None]]:
        """Status -> {child key: stored value} (``get_dependencies.sql``'s columns: the return
        value of a processed child, the reason of an ignored one), at most ``LIST_CAP`` per status."""
        query = sql.SQL(
            """
            SELECT status::text, child_key, COALESCE(value #>> '{{}}', value::text) FROM (
              SELECT status, child_key, value,
                     row_number() OVER (PARTITION BY status ORDER BY child_key) AS n
                FROM {deps} WHERE parent_queue = %s AND parent_id = %s
            ) d WHERE n <= %s ORDER BY child_key
            """
        ).format(deps=table(queue.prefix, "job_dependency"))
        found: dict[str, dict[str, str | None]] = {}
        for status, child_key, value in self._rows(query, [queue.name, job_id, jobs.LIST_CAP]):
            found.setdefault(status, {})[qualified_key(queue.prefix, child_key) or ""] = value
        return found

    def live_detail(self, queue: QueueRef, job_id: str, *, redactor: Redactor) -> jobs.JobLive | None:
        row = self._job_row(queue, job_id, [_SUMMARY_SELECT, PAYLOAD_COLUMNS["progress"]])
        if row is None:
            return None
        state, due = row[0], row[1]
        n = len(jobs.SUMMARY_FIELDS)
        summary = jobs.summary_from_fields(
            job_id,
            _with_qualified_parent(queue.prefix, list(row[2 : 2 + n])),
            _score(due) if state == "delayed" else None,
        ).redacted(redactor)
        logs, logs_total = self._logs(queue, job_id, 50)
        return jobs.JobLive(
            queue=queue,
            id=job_id,
            state=state,
            summary=summary,
            progress=jobs.prepare_payload(row[-1] or "", cap=4096, redactor=redactor),
            logs=[redactor.text(line) for line in logs],
            logs_total=logs_total,
            failed_reason=redactor.text(to_text(row[2 + jobs.SUMMARY_FIELDS.index("failedReason")])),
        )

    def raw_field(self, queue: QueueRef, job_id: str, field: str, *, redactor: Redactor) -> str:
        column = PAYLOAD_COLUMNS.get(field, "NULL::text")
        row = self._job_row(queue, job_id, [column])
        if row is None:
            raise JobNotFound(queue.name, job_id)
        ok, value = parse_json(row[-1] or "")
        return json.dumps(redactor.value(value), ensure_ascii=False) if ok else redactor.text(row[-1] or "")

    def exists(self, queue: QueueRef, job_id: str) -> bool:
        query = sql.SQL("SELECT 1 FROM {job} WHERE queue = %s AND id = %s").format(job=table(queue.prefix, "job"))
        return bool(self._rows(query, [queue.name, job_id]))

    def stored_data(self, queue: QueueRef, job_id: str) -> bytes | None:
        query = sql.SQL("SELECT data::text FROM {job} WHERE queue = %s AND id = %s").format(
            job=table(queue.prefix, "job")
        )
        rows = self._rows(query, [queue.name, job_id])
        return rows[0][0].encode() if rows else None

    def _not_built(self) -> NoReturn:
        raise NotOffered(connection=self.connection, kind=self.kind, facet=SCAN_WORDS)

    def preview(
        self,
        queue: QueueRef,
        *,
        filt: selection.JobFilter,
        before_ms: int,
        sample: int,
        limit: int | None,
        redactor: Redactor,
    ) -> selection.Preview:
        """How many jobs a bulk task's filter matches now: the bulk engine's own scan
        (``queues.postgres.bulk_scan``), so the preview counts what the task will take."""
        with postgres_errors(self.connection, self.db.url):
            counted = scan.count_matches(self.db, queue, filt, before_ms=before_ms, sample=sample, limit=limit)
        shown = self.summaries(queue, counted.sample_ids, redactor=redactor) if counted.sample_ids else []
        return selection.Preview(
            counted.count, shown, scanned=counted.examined, complete=counted.complete, in_state=counted.in_state
        )

    def error_groups(self, queue: QueueRef, *, scan_limit: int, redactor: Redactor) -> error_groups.ErrorGroups:
        self._not_built()

    def search_data(
        self,
        queue: QueueRef,
        state: str,
        *,
        query: data_search.DataQuery,
        offset: int,
        scan_limit: int,
        data_cap: int,
        redactor: Redactor,
    ) -> data_search.DataSearch:
        with postgres_errors(self.connection, self.db.url):
            return pg_data_search.search_data(
                self.db.rows,
                lambda ids, scores: self.summaries(queue, ids, scores, redactor=redactor),
                STATE_ROWS,
                queue,
                state,
                total=self._length(queue, state),
                query=query,
                offset=offset,
                scan_limit=scan_limit,
                data_cap=data_cap,
                redactor=redactor,
                score=_score,
            )

    def export(
        self, queue: QueueRef, *, fmt: str, filt: selection.JobFilter, before_ms: int, redactor: Redactor
    ) -> Iterator[str]:
        self._not_built()

    def option_sample(self, queue: QueueRef, *, now_ms: int) -> retry_advice.Sample:
        self._not_built()

    def flow(
        self, queue: QueueRef, job_id: str, *, limits: flows.FlowLimits, from_root: bool, redactor: Redactor
    ) -> flows.FlowTree:
        # Not built on PostgreSQL yet: BullMQ's job_dependency rows could serve it, level by level.
        raise NotOffered(connection=self.connection, kind=self.kind, facet=flows.FLOW_WORDS)

    def edit_plan(self, queue: QueueRef, *, job_id: str, patch: Any, schema: dict | None) -> edit_retry.EditPlan | None:
        query = sql.SQL(
            "SELECT state::text, data::text, opts ->> 'lifo' = 'true' FROM {job} WHERE queue = %s AND id = %s"
        )
        rows = self._rows(query.format(job=table(queue.prefix, "job")), [queue.name, job_id])
        return pg_job_add.plan_edit(rows[0] if rows else None, job_id=job_id, patch=patch, schema=schema)

    def duplicate_source(self, queue: QueueRef, *, job_id: str) -> job_add.SourceJob | None:
        query = sql.SQL("SELECT name, data::text, opts FROM {job} WHERE queue = %s AND id = %s")
        return pg_job_add.read_source(
            lambda q, i: self._rows(query.format(job=table(q.prefix, "job")), [q.name, i]), queue, job_id
        )


def _stack_lines(raw: str | None) -> list[str]:
    """BullMQ keeps the stack traces of every attempt as a JSON array of strings."""
    ok, stack = parse_json(raw or "[]")
    if ok and isinstance(stack, list):
        return [s if isinstance(s, str) else json.dumps(s) for s in stack]
    return [raw or ""]
