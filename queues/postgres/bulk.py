"""Bulk tasks on PostgreSQL: retry, discard, promote, redrive and edit-and-retry of many jobs,
paced, cancellable, resumable after a crash, with the plan and progress every kind shares
(``queues.bulk``: ``BulkPlan``, ``Progress``, ``ProgressStore``).

Each batch is one transaction. Every job in it is acted on by the single-job code the commands
facet uses (``queues.postgres.job_commands``, ``redrive``, ``job_add``): its row locked, its
state checked against the plan (the action's states, and finished or created before the plan's
``before_ms``), then BullMQ's own command (``reprocess_job``, ``remove``, ``promote``; for a
redrive ``add_job`` + ``remove``; for an edit ``update_data`` + ``reprocess_job``), in a
savepoint, so one job's error is that job's and not the batch's. A job a worker holds is refused
by BullMQ's own check, as on Redis.

Which jobs: an explicit selection is taken in its order, by position; a filter scans the state
(``queues.postgres.bulk_scan``) from a cursor saved after every batch. Jobs the task moves leave
the state; those it leaves (refused, or not matching) stay behind the cursor.

Crash safety, exact: before its transaction commits, the batch saves a journal in the store —
the transaction's id (``pg_current_xact_id()``) and the progress as it will be once the batch
has committed. On resume, ``pg_xact_status`` says whether that transaction committed (the
journalled progress is taken) or not (it is dropped; the jobs are still there and the scan meets
them again). So no job is moved twice or left behind, and the counts are exact whatever moment
the process died at. A retry of a whole finished set takes the fast road of ``bulk_head``
(BullMQ's ``retry_jobs``, a batch per statement) wherever no flow child is in the batch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg

from ..actions import DONE, MISSING, WRONG_STATE, ActionResult
from ..bulk.plan import ACTION_STATES, BulkPlan
from ..bulk.progress import CANCELLED, DONE_STATE, GONE, RUNNING, Progress, ProgressStore
from ..dead_letters import dlq_source
from ..edit_retry import PatchError
from ..errors import SourceUnavailable
from ..job_schema import INVALID_DATA
from ..keys import QueueRef
from ..messages import _, as_data
from ..redrive_rules import NO_SOURCE
from .bulk_head import head_road, retry_head
from .bulk_scan import plan_total, scan_page
from .connection import WRITE_REFUSED, PostgresConnection, describe
from .job_add import edit_and_retry_in, plan_edit
from .job_commands import discard_locked, lock_job, promote_locked, retry_locked, shown_state, within
from .redrive import redrive_in

JOURNAL = "journal"  # Progress.cursor's key for the batch in flight: {"txid", "after"}
MAX_ERRORS = 20
MAX_REPORTED = 20
BAD_DATA = "bad_data"  # edit-retry: the job's stored data is not JSON (the Redis engine's outcome)
REPORTED = frozenset({NO_SOURCE, BAD_DATA, INVALID_DATA})  # per-job refusals whose message the task page keeps
# Codes that mean "try the batch again" (a deadlock with a worker, a serialization conflict).
RETRIED_BATCHES = 3
# How long a resume waits for the server to end a dead runner's transaction (its status stays
# "in progress" until the server notices the lost client).
JOURNAL_WAIT_S = 30.0


# --- one batch ------------------------------------------------------------------------------


def _source_of(plan: BulkPlan) -> str | None:
    """The operator's choice or configuration; never the job's data (see ``dlq_source``)."""
    return plan.source or dlq_source(
        dlq_name=plan.queue.name, patterns=plan.dlq_patterns, mapping=dict(plan.dlq_mapping)
    )


def _act(conn: psycopg.Connection, plan: BulkPlan, job_id: str, *, expected: str | None, now_ms: int) -> ActionResult:
    """The plan's action on one job, if it is still where the plan expects it."""
    q = plan.queue
    row = lock_job(conn, q, job_id)
    if row is None:
        return ActionResult(job_id, MISSING, _("Job {id} no longer exists.", id=job_id))
    state = shown_state(row)
    if state not in ACTION_STATES[plan.action] or (expected and state != expected) or not within(row, plan.before_ms):
        return ActionResult(
            job_id, WRONG_STATE, _("Job {id} is no longer in a state this action applies to.", id=job_id)
        )
    if plan.action == "retry":
        return retry_locked(conn, q, job_id, row, reset_counters=plan.reset_counters)
    if plan.action == "discard":
        return discard_locked(conn, q, job_id)
    if plan.action == "promote":
        return promote_locked(conn, q, job_id)
    if plan.action == "edit-retry":
        return _edit_locked(conn, plan, job_id)
    source = _source_of(plan)
    if not source:
        return ActionResult(
            job_id, NO_SOURCE, _("No source queue found for job {id} of {queue}.", id=job_id, queue=q.name)
        )
    return redrive_in(
        conn,
        dlq=q,
        job_id=job_id,
        source=QueueRef(q.connection, q.prefix, source),
        payload_field=plan.payload_field,
        now_ms=now_ms,
    )


def _edit_locked(conn: psycopg.Connection, plan: BulkPlan, job_id: str) -> ActionResult:
    """The plan's merge patch on the job's data as stored (its row locked), then the retry."""
    row = conn.execute(
        "SELECT state::text, data::text, opts ->> 'lifo' = 'true' FROM job WHERE queue = %s AND id = %s",
        (plan.queue.name, job_id),
    ).fetchone()
    try:
        edit = plan_edit(row, job_id=job_id, patch=plan.patch, schema=plan.schema)
    except PatchError:
        return ActionResult(
            job_id,
            BAD_DATA,
            _(
                "Job {id}'s stored data is not valid JSON, so the merge patch cannot be applied; it was left failed.",
                id=job_id,
            ),
        )
    if edit is None:
        return ActionResult(job_id, MISSING, _("Job {id} no longer exists.", id=job_id))
    return edit_and_retry_in(conn, plan.queue, edit, reset_counters=plan.reset_counters)


def _fatal(exc: psycopg.Error) -> bool:
    """Errors that are the batch's (or the connection's), not one job's."""
    return isinstance(
        exc,
        psycopg.OperationalError | psycopg.InterfaceError | psycopg.errors.InsufficientPrivilege,
    ) or bool(exc.sqlstate and exc.sqlstate.startswith("40"))


def run_batch(conn: psycopg.Connection, plan: BulkPlan, ids: list[str], *, expected: str | None, now_ms: int) -> list:
    """The plan's action on each job, each in a savepoint; an error of one job is its result."""
    results: list[ActionResult | Exception] = []
    for job_id in ids:
        try:
            with conn.transaction():
                results.append(_act(conn, plan, job_id, expected=expected, now_ms=now_ms))
        except psycopg.Error as exc:
            if _fatal(exc):
                raise
            results.append(exc)
    return results


def tally(progress: Progress, results: list) -> None:
    for r in results:
        if isinstance(r, Exception):
            progress.failed += 1
            if len(progress.errors) < MAX_ERRORS:
                progress.errors.append(str(r)[:300])
        elif r.outcome == DONE:
            progress.moved += 1
            for item in r.kept:
                progress.kept_by[item] = progress.kept_by.get(item, 0) + 1
        else:
            _skip(progress, r.outcome)
            if r.outcome in REPORTED and len(progress.refusals) < MAX_REPORTED:
                progress.refusals.append(as_data(r.message))


def _skip(progress: Progress, outcome: str, count: int = 1) -> None:
    if count > 0:
        progress.skipped += count
        progress.skipped_by[outcome] = progress.skipped_by.get(outcome, 0) + count


# --- the journal ----------------------------------------------------------------------------


def _xact_status(db: PostgresConnection, txid: str) -> str | None:
    return db.rows("SELECT pg_xact_status(%s::xid8)", (txid,))[0][0]


def reconcile(
    db: PostgresConnection, progress: Progress, *, sleep: Callable[[float], None], clock: Callable[[], float]
) -> Progress:
    """After a crash: the journalled batch's progress if its transaction committed, else the
    progress from before it."""
    journal = progress.cursor.get(JOURNAL)
    if not journal:
        return progress
    deadline = clock() + JOURNAL_WAIT_S
    status = _xact_status(db, journal["txid"])
    while status == "in progress" and clock() < deadline:
        sleep(0.1)
        status = _xact_status(db, journal["txid"])
    if status == "in progress":
        raise SourceUnavailable("", "a dead runner's transaction is still open; the task resumes when it ends")
    if status == "committed":
        return Progress.from_dict(journal["after"])
    progress.cursor = {k: v for k, v in progress.cursor.items() if k != JOURNAL}
    return progress


# --- the loop -------------------------------------------------------------------------------


def run_bulk(
    db: PostgresConnection,
    *,
    plan: BulkPlan,
    store: ProgressStore,
    should_cancel: Callable[[], bool] = lambda: False,
    on_progress: Callable[[Progress], None] = lambda p: None,
    count_limit: int | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    now_ms: Callable[[], int] = lambda: int(time.time() * 1000),
) -> Progress:
    """Run (or resume) a bulk task to its end or its cancellation (the contract of
    ``queues.redis.bulk.run_bulk``)."""
    progress = store.load()
    if progress is None:
        total, counting = plan_total(db, plan, limit=count_limit)
        progress = Progress(total=total, in_state=counting)
        store.save(progress)
    if progress.state != RUNNING:
        return progress
    progress = reconcile(db, progress, sleep=sleep, clock=clock)
    store.save(progress)
    if progress.state != RUNNING:  # the journalled batch was the last, and it committed
        on_progress(progress.copy())
        return progress
    started, handled_at_start, elapsed_before = clock(), progress.handled, progress.elapsed_s
    while True:
        if should_cancel():
            progress.state = CANCELLED
            store.save(progress)
            on_progress(progress.copy())
            return progress
        batch_started = clock()
        after, batch_jobs = _batch(db, plan, progress, store, now_ms=now_ms())
        progress = after
        exhausted = progress.state == DONE_STATE
        now = clock()
        paced_end = batch_started + batch_jobs / plan.rate if plan.rate is not None and batch_jobs else now
        run_time = max(now, paced_end) - started
        progress.elapsed_s = elapsed_before + run_time
        progress.rate = (progress.handled - handled_at_start) / run_time if run_time > 0 else 0.0
        left = progress.remaining
        progress.eta_s = left / progress.rate if left is not None and progress.rate > 0 and not exhausted else None
        store.save(progress)
        on_progress(progress.copy())
        if exhausted:
            return progress
        wait = paced_end - clock()
        if wait > 0:
            sleep(wait)


def _batch(db: PostgresConnection, plan: BulkPlan, progress: Progress, store: ProgressStore, *, now_ms: int):
    """One batch, committed with its journal saved first: (the progress after it, its jobs)."""
    for attempt in range(RETRIED_BATCHES):
        try:
            with db.transaction(plan.queue.prefix) as conn:
                txid = conn.execute("SELECT pg_current_xact_id()::text").fetchone()[0]  # type: ignore[index]
                after = progress.copy()
                after.cursor = {k: v for k, v in after.cursor.items() if k != JOURNAL}
                if plan.job_ids is not None:
                    ids = list(plan.job_ids[progress.position : progress.position + plan.batch_size])
                    results = run_batch(conn, plan, ids, expected=None, now_ms=now_ms)
                    after.position += len(ids)
                    exhausted = after.position >= len(plan.job_ids)
                    acted = len(ids)
                elif head_road(plan, after) and (head := retry_head(conn, plan)) is not None:
                    results = []
                    after.moved += head.moved
                    _skip(after, WRONG_STATE, head.examined - head.moved)  # none while the rows are locked
                    after.examined += head.examined
                    after.cursor = head.cursor
                    exhausted = head.exhausted
                    acted = head.examined
                else:
                    filt = plan.scan_filter
                    page = scan_page(
                        conn, plan.queue, filt, before_ms=plan.before_ms, cursor=after.cursor, size=plan.batch_size
                    )
                    results = run_batch(conn, plan, page.match_ids, expected=filt.state, now_ms=now_ms)
                    after.examined += len(page.rows)
                    after.cursor = page.cursor_after(after.cursor)
                    exhausted = page.exhausted
                    acted = len(page.match_ids)
                tally(after, results)
                if exhausted:
                    _finish(after)
                if acted:  # the journal: what the progress is once this transaction has committed
                    progress.cursor = {**progress.cursor, JOURNAL: {"txid": txid, "after": after.as_dict()}}
                    store.save(progress)
            return after, acted
        except psycopg.Error as exc:
            if exc.sqlstate and exc.sqlstate.startswith("40") and attempt + 1 < RETRIED_BATCHES:
                continue  # a deadlock or serialization conflict with a worker: the batch again
            raise
    raise AssertionError("unreachable")


def _finish(progress: Progress) -> None:
    progress.state = DONE_STATE
    # Targeted jobs the scan never met were moved or removed by someone else (a worker, another
    # operator, removeOnFail) before the task reached them: skipped. A total still being counted
    # is what the scan met.
    gone = 0 if progress.total is None else progress.total - progress.handled
    if gone > 0:
        progress.skipped += gone
        progress.skipped_by[GONE] = progress.skipped_by.get(GONE, 0) + gone
    progress.total = max(progress.total or 0, progress.handled)


# --- the facet ------------------------------------------------------------------------------


@contextmanager
def _task_errors(connection: str, url: str) -> Iterator[None]:
    """An unreachable server as ``SourceUnavailable`` (the task stays resumable); a refused
    command as the error that ends the task, in words."""
    try:
        yield
    except psycopg.errors.InsufficientPrivilege:
        raise PermissionError(WRITE_REFUSED) from None
    except SourceUnavailable as exc:
        raise SourceUnavailable(connection, exc.reason) from None
    except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
        raise SourceUnavailable(connection, describe(exc)) from None


class PostgresBulk:
    def __init__(self, db: PostgresConnection, *, connection: str):
        self._db, self.connection = db, connection

    def run(
        self,
        *,
        plan: BulkPlan,
        store: ProgressStore,
        should_cancel: Callable[[], bool],
        on_progress: Callable[[Progress], None],
        count_limit: int | None,
    ) -> Progress:
        with _task_errors(self.connection, self._db.url):
            return run_bulk(
                self._db,
                plan=plan,
                store=store,
                should_cancel=should_cancel,
                on_progress=on_progress,
                count_limit=count_limit,
            )
