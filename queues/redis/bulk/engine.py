"""The bulk loop: run (or resume) a task batch by batch, paced, cancellable, journalled so a
crash at any point loses or repeats nothing (see the package docstring for why that holds)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from itertools import repeat

import redis

from ...actions import DONE, MISSING, WRONG_STATE
from ...bulk.plan import BulkPlan
from ...bulk.progress import CANCELLED, DONE_STATE, GONE, RUNNING, Progress, ProgressStore
from ...edit_growth import TOO_BIG, Budget
from ...job_schema import INVALID_DATA
from ...messages import as_data
from ...selection import Cursor, Page, advance
from ..selection import next_page
from .batches import MOVED, execute_batch, explicit_page, state_check, still_there
from .edit import BAD_DATA, read_page, reads_its_page
from .head import RECEIPT_NAMESPACE, HeadRun, head_mode, reconcile_head
from .lock import BulkLock, LockLost
from .totals import plan_total


def _reconcile(client: redis.Redis, plan: BulkPlan, progress: Progress, *, now_ms: int) -> None:
    """After a crash: count the in-flight jobs that left their state as moved.

    Filter plans: the others are still ahead of the saved cursor; the scan meets them again.
    Explicit ids: the batch (journalled whole, ``None`` state included) is finished here: the
    jobs still there are acted on again, and the position moves past the batch."""
    if not progress.in_flight:
        return
    live = [(i, s) for i, s in progress.in_flight if s is not None]
    pipe = client.pipeline(transaction=False)
    for job_id, state in live:
        state_check(pipe, plan.queue, job_id, state)
    there = [(i, s) for (i, s), v in zip(live, pipe.execute()) if still_there(v, s, plan.before_ms)]
    progress.moved += len(live) - len(there)
    if plan.job_ids is not None:
        gone_before = [(i, None) for i, s in progress.in_flight if s is None]
        _tally(progress, _execute(client, plan, gone_before + there, progress, now_ms=now_ms))
        progress.position += len(progress.in_flight)
    progress.in_flight = []


def _execute(client: redis.Redis, plan: BulkPlan, items: list, progress: Progress, *, now_ms: int) -> list:
    """One batch; an edit's growth (what it added to its jobs' data) is kept in the progress, so
    the task's bound holds across batches and resumes."""
    budget = Budget(plan.growth_bounds, used=progress.grown)
    results = execute_batch(client, plan, items, now_ms=now_ms, budget=budget)
    progress.grown = budget.used
    return results


# Refusals after which the job is no longer where the scan found it (so it cannot anchor it).
LEFT_STATE = frozenset({MISSING, WRONG_STATE})
# Per-job refusals whose message (which job, and why) is kept for the task page and audit log.
REPORTED = frozenset({BAD_DATA, INVALID_DATA, TOO_BIG})
MAX_REPORTED = 20


def _tally(progress: Progress, results: list) -> set[str]:
    """Add a batch's results to the counts; return the ids that stay where they were."""
    stayed = set()
    others = [r for r in results if r is not MOVED]  # most results: one shared object, nothing kept
    progress.moved += len(results) - len(others)
    for r in others:
        if isinstance(r, Exception):
            progress.failed += 1
            if len(progress.errors) < 20:
                progress.errors.append(str(r)[:300])
        elif r.outcome == DONE:
            progress.moved += 1
            for item in r.kept:
                progress.kept_by[item] = progress.kept_by.get(item, 0) + 1
        else:
            progress.skipped += 1
            progress.skipped_by[r.outcome] = progress.skipped_by.get(r.outcome, 0) + 1
            if r.outcome in REPORTED and len(progress.refusals) < MAX_REPORTED:
                progress.refusals.append(as_data(r.message))  # translated when shown
            if r.outcome not in LEFT_STATE:
                stayed.add(r.job_id)
    return stayed


def run_bulk(
    client: redis.Redis,
    *,
    plan: BulkPlan,
    store: ProgressStore,
    should_cancel: Callable[[], bool] = lambda: False,
    on_progress: Callable[[Progress], None] = lambda p: None,
    lock: BulkLock | None = None,
    count_limit: int | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    now_ms: Callable[[], int] = lambda: int(time.time() * 1000),
) -> Progress:
    """Run (or resume) a bulk task to the end, cancellation, or a lost lock (``LockLost``).

    Starting fresh when the store is empty; otherwise resuming from the stored cursor (a
    finished or cancelled task returns at once). ``should_cancel`` is checked before every
    batch: what moved stays moved. ``on_progress`` gets the progress after every batch.
    ``count_limit``: how many entries counting the total may examine before the first batch
    (``plan_total``); past it the total is known when the scan ends."""
    progress = store.load()
    if progress is None:
        total, in_state = plan_total(client, plan, limit=count_limit)
        progress = Progress(total=total, in_state=in_state)
        store.save(progress)
    if progress.state != RUNNING:
        return progress
    head = head_mode(plan)
    if head and not progress.receipt_key:
        progress.receipt_key = f"{RECEIPT_NAMESPACE}:{uuid.uuid4().hex}"
    reconcile_head(client, plan, progress)
    _reconcile(client, plan, progress, now_ms=now_ms())
    store.save(progress)

    started, handled_at_start, elapsed_before = clock(), progress.handled, progress.elapsed_s
    cursor = Cursor.from_dict(progress.cursor)
    # Unpaced, the head road keeps up to four batches in flight (``head.AHEAD``), each sent after
    # the cancellation check of the iteration that sends it; a cancel still reads and counts them.
    head_run = HeadRun(client, plan, progress, store) if head else None
    try:
        while True:
            if should_cancel():
                if head_run is not None:
                    progress.cursor = head_run.drain(cursor).as_dict()  # batches already sent run: count them
                progress.state = CANCELLED
                store.save(progress)
                on_progress(progress.copy())
                return progress
            if lock is not None and not lock.extend():
                raise LockLost(f"Lost the bulk lock of queue {plan.queue.name}; another runner may hold it.")
            batch_started = clock()
            items: list[tuple[str, str | None]] = []  # the head road sends no ids
            page: Page | None = None
            if head_run is not None:
                taken, exhausted, cursor = head_run.step(cursor)
                progress.cursor = cursor.as_dict()
                batch_jobs = taken
            elif plan.job_ids is not None:
                items, next_position = explicit_page(client, plan, progress.position)
                exhausted = next_position >= len(plan.job_ids)
                batch_jobs = len(items)
            else:
                filt = plan.scan_filter
                if reads_its_page(plan):
                    page = read_page(client, plan, cursor, progress)
                else:
                    page = next_page(
                        client,
                        queue=plan.queue,
                        filt=filt,
                        before_ms=plan.before_ms,
                        cursor=cursor,
                        size=plan.batch_size,
                    )
                items = list(zip(page.match_ids, repeat(filt.state)))
                exhausted = page.exhausted
                progress.examined += len(page.passed)
                batch_jobs = len(items)
            if items and not head:
                # Explicit ids journal the whole batch (see _reconcile); a scan only the matches.
                progress.in_flight = items  # (id, state) pairs, saved as lists
                store.save(progress)  # the journal: see the package docstring
                results = _execute(client, plan, items, progress, now_ms=now_ms())
                stayed = _tally(progress, results)
            else:
                stayed = set()
            progress.in_flight = []
            if head:
                pass  # the cursor moved with the batch
            elif page is not None:
                remaining = None  # a sorted set's page: its last score is the cursor
                if page.passed and page.passed[-1][1] is None:  # the waiting list: anchored on an id that stays
                    matched = set(page.match_ids)
                    remaining = {i for i, _ in page.passed if i not in matched} | stayed
                cursor = advance(cursor, page, remaining=remaining)
                progress.cursor = cursor.as_dict()
            else:
                progress.position = next_position
            # Pacing: a batch of n jobs takes at least n / rate seconds. Its paced end counts as
            # its end, so the reported rate is the pace the user sees, not the burst speed.
            now = clock()
            paced_end = batch_started + batch_jobs / plan.rate if plan.rate is not None and batch_jobs else now
            run_time = max(now, paced_end) - started
            progress.elapsed_s = elapsed_before + run_time
            progress.rate = (progress.handled - handled_at_start) / run_time if run_time > 0 else 0.0
            if exhausted:
                progress.state = DONE_STATE
                if progress.receipt_key:
                    client.delete(progress.receipt_key)
                # Targeted jobs the scan never met were moved or removed by someone else (a
                # worker, another operator, removeOnFail) before we reached them: skipped. A
                # total still being counted is what the scan met.
                gone = 0 if progress.total is None else progress.total - progress.handled
                if gone > 0:
                    progress.skipped += gone
                    progress.skipped_by[GONE] = progress.skipped_by.get(GONE, 0) + gone
                progress.total = max(progress.total or 0, progress.handled)
            left = progress.remaining
            progress.eta_s = (
                left / progress.rate if left is not None and progress.rate > 0 and progress.state == RUNNING else None
            )
            store.save(progress)
            on_progress(progress.copy())
            if exhausted:
                return progress
            wait = paced_end - clock()
            if wait > 0:
                sleep(wait)
    finally:
        if head_run is not None:
            head_run.close()
