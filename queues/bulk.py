"""The bulk engine: crash-safe, paced, cancellable retry / discard / promote / redrive.

Used for every bulk action: redrive of the failed set (retry with counters reset), retry all
or selected, discard all or selected, promote all delayed, and redrive of an application
dead-letter queue into its source queue. It runs in the monitor process (the caller), never in
a web request, and reports progress through a ``ProgressStore`` the caller provides (the
Django side stores rows; ``MemoryStore``/``RedisStore`` here serve tests and the benchmark).

How "every job exactly once, none left behind" holds when the process dies at any point:

* Each job is moved by one atomic BullMQ script that acts only if the job is still where the
  plan expects it (``reprocessJob`` needs it in ``failed``; ``removeJob`` + add is one script
  for a redrive; ``promote`` needs it in ``delayed``). Repeating a move is therefore harmless:
  the second attempt finds the job gone and does nothing.
* The target set is fixed by ``before_ms``: a job we retried that fails again has a newer
  finish time and is not matched again.
* Jobs are taken oldest first, one batch at a time, from a ``Cursor`` that is saved with the
  counts *after* the batch. Before the batch, its ids are saved as ``in_flight``. After a crash,
  ``run_bulk`` resumes from the saved cursor: in-flight jobs that are no longer where they were
  are counted as moved (they left their state between the journal write and the crash); the
  others are simply met again by the scan and processed. Nothing behind the cursor is skipped,
  because only jobs that stay (filter mismatches, refusals) remain behind it.

Counts after a crash are exact except in one case: a job of the in-flight batch that another
actor moved during that same batch is counted as moved rather than skipped.

Retrying a whole finished set (the redrive of the failed set: no filter that reads the jobs)
takes a faster road: the batch script picks the next batch itself, so ids never travel to
Python and back, and writes a receipt (``<batch number>:<moved>``, our own key
``queuewatch:bulk-receipt:<uuid>`` in the monitored Redis, expiring after a day, deleted when
the task ends) in the same atomic step. The journal is then just the batch number: after a
crash the receipt says whether that batch ran and how many it moved, so the counts stay exact.

Pacing: ``rate`` jobs per second (default 100; ``None`` = as fast as Redis allows), in batches
small enough for several progress updates per second. Memory holds one batch, whatever the
number of jobs.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass, field, replace
from typing import Callable, Mapping, Protocol

import redis

from .actions import (DONE, MISSING, NO_SOURCE, WRONG_STATE, ActionResult, promote_call, promote_outcome,
                      redrive_call, redrive_copy_from_fields, redrive_outcome, remove_outcome, retry_outcome)
from .bullmq_scripts import scripts_for
from .dead_letters import DEFAULT_DLQ_PATTERNS, dlq_source
from .keys import QueueRef
from .selection import Cursor, JobFilter, Page, advance, next_page, preview, zset_bounds, zset_offset
from .text import to_text

ACTIONS = ("retry", "discard", "promote", "redrive")
# The states each action looks for a job in. ``active`` only matters for explicit selections
# (filters cannot select active jobs): removeJob refuses locked ones, which are counted as skipped.
ACTION_STATES = {"retry": ("failed", "completed"), "discard": ("failed", "completed", "delayed", "waiting", "active"),
                 "promote": ("delayed",), "redrive": ("waiting", "failed", "completed", "delayed")}
DEFAULT_RATE = 100.0
MAX_BATCH = 1000  # jobs per batch script: about 15 ms of Redis time


@dataclass(frozen=True)
class BulkPlan:
    """What a bulk task does, fixed at confirmation. Either ``filt`` (all jobs matching it) or
    ``job_ids`` (an explicit selection, taken in the given order) is set.

    ``before_ms``: only jobs finished (failed/completed) or created (delayed/waiting) before
    this instant are touched. ``rate``: jobs per second, ``None`` for unpaced. For ``redrive``
    the queue is the dead-letter queue; the source is ``source`` if given, else resolved per job
    with ``dead_letters.dlq_source`` from ``dlq_patterns``/``dlq_mapping``/a data field."""

    queue: QueueRef
    action: str
    before_ms: int
    filt: JobFilter | None = None
    job_ids: tuple[str, ...] | None = None
    rate: float | None = DEFAULT_RATE
    reset_counters: bool = True
    remove_children: bool = False
    source: str | None = None
    dlq_patterns: tuple[str, ...] = DEFAULT_DLQ_PATTERNS
    dlq_mapping: tuple[tuple[str, str], ...] = ()
    payload_field: str | None = None

    def __post_init__(self):
        if self.action not in ACTIONS:
            raise ValueError(f"Unknown bulk action {self.action!r}; choose one of {', '.join(ACTIONS)}.")
        if (self.filt is None) == (self.job_ids is None):
            raise ValueError("A bulk plan needs either a filter or a list of job ids, not both.")
        if self.filt is not None and self.filt.state not in ACTION_STATES[self.action]:
            raise ValueError(f"'{self.action}' cannot act on {self.filt.state} jobs "
                             f"(it acts on {', '.join(ACTION_STATES[self.action])}).")
        if self.rate is not None and not self.rate > 0:
            raise ValueError("The rate must be a positive number of jobs per second, or unpaced.")

    @property
    def batch_size(self) -> int:
        if self.rate is None:
            return MAX_BATCH
        return max(1, min(MAX_BATCH, int(self.rate / 4)))  # about four progress updates a second

    def as_dict(self) -> dict:
        d = asdict(self)
        d["queue"] = asdict(self.queue)
        d["filt"] = self.filt.as_dict() if self.filt else None
        d["job_ids"] = list(self.job_ids) if self.job_ids is not None else None
        d["dlq_patterns"] = list(self.dlq_patterns)
        d["dlq_mapping"] = [list(p) for p in self.dlq_mapping]
        return d

    @classmethod
    def from_dict(cls, d: Mapping) -> "BulkPlan":
        d = dict(d)
        d["queue"] = QueueRef(**d["queue"])
        d["filt"] = JobFilter(**d["filt"]) if d.get("filt") else None
        d["job_ids"] = tuple(d["job_ids"]) if d.get("job_ids") is not None else None
        d["dlq_patterns"] = tuple(d.get("dlq_patterns") or DEFAULT_DLQ_PATTERNS)
        d["dlq_mapping"] = tuple(tuple(p) for p in d.get("dlq_mapping") or ())
        return cls(**d)


RUNNING, DONE_STATE, CANCELLED = "running", "done", "cancelled"
GONE = "gone"  # skipped_by key: targeted, but moved elsewhere before the scan reached it


@dataclass
class Progress:
    """Counts and position of a bulk task; what the store saves and the page shows."""

    total: int = 0
    moved: int = 0
    skipped: int = 0
    failed: int = 0
    state: str = RUNNING
    cursor: dict = field(default_factory=dict)
    position: int = 0  # explicit ids: index of the next id
    in_flight: list = field(default_factory=list)  # [[job_id, state], ...] sent, not yet counted
    skipped_by: dict = field(default_factory=dict)  # outcome -> count
    errors: list = field(default_factory=list)  # the first few script errors, for the audit log
    receipt_key: str = ""  # whole-set retry: the key its batch script writes receipts to
    head_batch: int = 0  # whole-set retry: batches sent so far
    head_pending: bool = False  # whole-set retry: a batch was sent and its result not yet counted
    elapsed_s: float = 0.0  # processing time across runs (resumes add up)
    rate: float = 0.0  # jobs handled per second over the current run
    eta_s: float | None = None

    @property
    def handled(self) -> int:
        return self.moved + self.skipped + self.failed

    @property
    def remaining(self) -> int:
        """Targeted jobs not handled yet (for a cancelled task: those it left where they were)."""
        return 0 if self.state == DONE_STATE else max(0, self.total - self.handled)

    @property
    def percent(self) -> float:
        if self.state == DONE_STATE or self.total == 0:
            return 100.0 if self.state == DONE_STATE else 0.0
        return min(100.0, 100.0 * self.handled / self.total)

    def as_dict(self) -> dict:
        # Shallow copies of the containers: asdict's deep copy cost milliseconds per batch.
        d = {name: getattr(self, name) for name in self.__dataclass_fields__}
        d.update(cursor=dict(self.cursor), in_flight=list(self.in_flight), skipped_by=dict(self.skipped_by),
                 errors=list(self.errors), remaining=self.remaining, percent=round(self.percent, 1))
        return d

    def copy(self) -> "Progress":
        return replace(self, cursor=dict(self.cursor), in_flight=list(self.in_flight),
                       skipped_by=dict(self.skipped_by), errors=list(self.errors))

    @classmethod
    def from_dict(cls, d: Mapping) -> "Progress":
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        return cls(**known)


class ProgressStore(Protocol):
    """Where one bulk task's progress lives. ``save`` must be durable when it returns: the
    engine's crash safety rests on it (the Django side writes a row in a transaction)."""

    def load(self) -> Progress | None: ...

    def save(self, progress: Progress) -> None: ...


class MemoryStore:
    def __init__(self):
        self.progress: Progress | None = None

    def load(self) -> Progress | None:
        return self.progress.copy() if self.progress else None

    def save(self, progress: Progress) -> None:
        self.progress = progress.copy()


class RedisStore:
    """Progress as one JSON string key (in the dashboard Redis, or a test's)."""

    def __init__(self, client: redis.Redis, key: str):
        self.client, self.key = client, key

    def load(self) -> Progress | None:
        raw = self.client.get(self.key)
        return Progress.from_dict(json.loads(raw)) if raw else None

    def save(self, progress: Progress) -> None:
        self.client.set(self.key, json.dumps(progress.as_dict()))


class BulkLock:
    """At most one running bulk task per queue: a token-checked lock with a TTL, extended by
    the engine after every batch, so a dead runner's lock lapses and a resume can take over."""

    RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
    EXTEND = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"

    def __init__(self, client: redis.Redis, *, queue: QueueRef, owner: str | None = None, ttl_ms: int = 30000,
                 namespace: str = "queuewatch:bulk-lock"):
        self.client, self.queue, self.ttl_ms = client, queue, ttl_ms
        self.owner = owner or uuid.uuid4().hex
        self.key = f"{namespace}:{queue.connection}:{queue.prefix}:{queue.name}"

    def acquire(self) -> bool:
        return bool(self.client.set(self.key, self.owner, nx=True, px=self.ttl_ms)) or self.holder() == self.owner

    def extend(self) -> bool:
        return bool(self.client.eval(self.EXTEND, 1, self.key, self.owner, self.ttl_ms))

    def release(self) -> None:
        self.client.eval(self.RELEASE, 1, self.key, self.owner)

    def holder(self) -> str | None:
        raw = self.client.get(self.key)
        return to_text(raw) if raw is not None else None


class LockLost(Exception):
    """The queue's bulk lock was lost (expired or taken): stop, another runner may be active."""


def plan_total(client: redis.Redis, plan: BulkPlan) -> int:
    """How many jobs the plan targets now (the preview count; explicit ids: their number)."""
    if plan.job_ids is not None:
        return len(plan.job_ids)
    return preview(client, queue=plan.queue, filt=plan.filt, before_ms=plan.before_ms, sample=0).count


# ---------------------------------------------------------------------------------------------
# One batch


def _state_check(pipe, queue: QueueRef, job_id: str, state: str) -> None:
    if state in ("waiting", "active"):
        pipe.lpos(queue.state_key(state), job_id, rank=-1)
    else:
        pipe.zscore(queue.state_key(state), job_id)


def _still_there(value, state: str, before_ms: int) -> bool:
    if value is None:
        return False
    return state not in ("failed", "completed") or float(value) < before_ms


def _explicit_page(client: redis.Redis, plan: BulkPlan, position: int) -> tuple[list[tuple[str, str]], int]:
    """The next batch of an explicit selection, each id with the state the action finds it in
    (None when it is in none of the action's states)."""
    ids = list(plan.job_ids[position: position + plan.batch_size])
    states = ACTION_STATES[plan.action]
    pipe = client.pipeline(transaction=False)
    for job_id in ids:
        for st in states:
            _state_check(pipe, plan.queue, job_id, st)
    found = pipe.execute()
    items = []
    for n, job_id in enumerate(ids):
        values = found[n * len(states):(n + 1) * len(states)]
        state = next((st for st, v in zip(states, values) if _still_there(v, st, plan.before_ms)), None)
        items.append((job_id, state))
    return items, position + len(ids)


def _resolve_source(plan: BulkPlan) -> str | None:
    """The operator's choice or configuration; never the job's data (see ``dlq_source``)."""
    if plan.source:
        return plan.source
    return dlq_source(dlq_name=plan.queue.name, patterns=plan.dlq_patterns, mapping=dict(plan.dlq_mapping))


def execute_batch(client: redis.Redis, plan: BulkPlan, items: list[tuple[str, str | None]], *, now_ms: int) -> list[ActionResult | Exception]:
    """Run the plan's action on a batch; results in item order (moved jobs share ``MOVED``). Retry, discard and promote run
    as one batch script per state (one round trip, one atomic step); a redrive reads the
    dead-letter jobs in one pipelined round trip and runs one composed script per job in a
    second. A script error is returned (not raised) so one bad job cannot stop the batch."""
    q = plan.queue
    results: list = [None] * len(items)
    by_state: dict[str, list[int]] = {}
    for n, (job_id, state) in enumerate(items):
        if state is None:
            results[n] = ActionResult(job_id, WRONG_STATE, f"Job {job_id} is no longer in a state this action applies to.")
        else:
            by_state.setdefault(state, []).append(n)
    if plan.action == "redrive":
        _redrive_batch(client, plan, items, [n for ns in by_state.values() for n in ns], results, now_ms=now_ms)
        return results
    scripts = scripts_for(client)
    for state, positions in by_state.items():
        ids = [items[n][0] for n in positions]
        try:
            if plan.action == "retry":
                keys = [q.key(s) for s in ("events", STATE_SET[state], "wait", "meta", "active", "marker", "prioritized", "pc")]
                codes = scripts.retry_batch(keys=keys, args=[q.base, state, "failedReason" if state == "failed" else "returnvalue",
                                                            "1" if plan.reset_counters else "0", *ids])
                made = [MOVED if c == 1 else retry_outcome(j, int(c), state=state) for j, c in zip(ids, codes)]
            elif plan.action == "discard":
                codes = scripts.remove_batch(keys=[q.key("repeat")], args=[q.base, "1" if plan.remove_children else "0", *ids])
                made = [MOVED if c == 1 else remove_outcome(j, int(c)) for j, c in zip(ids, codes)]
            else:
                keys, _ = promote_call(q, "")
                codes = scripts.promote_batch(keys=keys, args=[q.base, *ids])
                made = [MOVED if c == 0 else promote_outcome(j, int(c)) for j, c in zip(ids, codes)]
        except redis.ResponseError as exc:
            made = [exc] * len(ids)
        for n, result in zip(positions, made):
            results[n] = result
    return results


# The result of every job a batch moved: one shared object (a message per job would cost more
# than the move itself at bulk speed); refusals keep their own id and message.
MOVED = ActionResult("", DONE, "moved")

STATE_SET = {"failed": "failed", "completed": "completed", "delayed": "delayed", "waiting": "wait", "active": "active"}


def _redrive_batch(client: redis.Redis, plan: BulkPlan, items, positions: list[int], results: list, *, now_ms: int) -> None:
    q = plan.queue
    read = client.pipeline(transaction=False)
    for n in positions:
        read.hmget(q.job_key(items[n][0]), ["name", "data", "opts", "timestamp"])
    pipe = client.pipeline(transaction=False)
    calls = []
    script = scripts_for(client).redrive
    for n, (name, data, opts, ts) in zip(positions, read.execute() if positions else []):
        job_id = items[n][0]
        if ts is None and name is None:
            results[n] = ActionResult(job_id, MISSING, f"Job {job_id} no longer exists.")
            continue
        source_name = _resolve_source(plan)
        if not source_name:
            results[n] = ActionResult(job_id, NO_SOURCE, f"No source queue found for job {job_id} of {q.name}.")
            continue
        source = QueueRef(q.connection, q.prefix, source_name)
        copy = redrive_copy_from_fields(name, data, opts, ts, payload_field=plan.payload_field)
        keys, args = redrive_call(dlq=q, job_id=job_id, source=source, copy=copy, now_ms=now_ms)
        script(keys=keys, args=args, client=pipe)
        calls.append((n, job_id, source))
    if calls:
        for (n, job_id, source), reply in zip(calls, pipe.execute(raise_on_error=False)):
            results[n] = reply if isinstance(reply, Exception) else redrive_outcome(job_id, reply, dlq=q, source=source)


# ---------------------------------------------------------------------------------------------
# The loop


RECEIPT_NAMESPACE = "queuewatch:bulk-receipt"


def head_mode(plan: BulkPlan) -> bool:
    """Whether the plan retries a whole finished set up to ``before_ms`` (no filter reading the
    jobs, no lower time bound): then the batch script picks its own batches (``_head_batch``)."""
    f = plan.filt
    return (plan.action == "retry" and f is not None and f.state in ("failed", "completed")
            and not f.reads_jobs and f.finished_from_ms is None)


def _reconcile_head(client: redis.Redis, progress: Progress) -> None:
    """After a crash during a whole-set batch: its receipt says whether it ran and what it moved
    (the jobs it did not move are still ahead of the saved cursor)."""
    if progress.head_pending:
        raw = to_text(client.get(progress.receipt_key))
        batch, _, moved = raw.partition(":")
        if batch == str(progress.head_batch):
            progress.moved += int(moved)
        progress.head_pending = False


def _head_batch(client: redis.Redis, plan: BulkPlan, progress: Progress, store: ProgressStore,
                cursor: Cursor) -> tuple[int, bool, Cursor]:
    """One batch of a whole-set retry; returns (jobs taken, exhausted, new cursor)."""
    q, state = plan.queue, plan.filt.state
    key = q.state_key(state)
    lo, hi = zset_bounds(plan.filt, plan.before_ms)
    offset = zset_offset(client, key=key, lo=lo, cursor=cursor)
    progress.head_batch += 1
    progress.head_pending = True
    store.save(progress)  # the journal: the receipt of this batch number decides after a crash
    keys = [q.key(s) for s in ("events", STATE_SET[state], "wait", "meta", "active", "marker", "prioritized", "pc",
                               "paused")] + [progress.receipt_key]
    reply = scripts_for(client).retry_head(keys=keys, args=[
        q.base, state, "failedReason" if state == "failed" else "returnvalue", "1" if plan.reset_counters else "0",
        hi, offset, plan.batch_size, progress.head_batch])
    taken, moved = int(reply[0]), int(reply[1])
    progress.moved += moved
    refused = reply[4:]
    for job_id, code in zip(refused[0::2], refused[1::2]):
        r = retry_outcome(to_text(job_id), int(code), state=state)
        progress.skipped += 1
        progress.skipped_by[r.outcome] = progress.skipped_by.get(r.outcome, 0) + 1
    progress.head_pending = False
    if taken:
        cursor = Cursor(score=float(reply[3]), member=to_text(reply[2]))
    return taken, taken < plan.batch_size, cursor


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
        _state_check(pipe, plan.queue, job_id, state)
    there = [(i, s) for (i, s), v in zip(live, pipe.execute()) if _still_there(v, s, plan.before_ms)]
    progress.moved += len(live) - len(there)
    if plan.job_ids is not None:
        gone_before = [(i, None) for i, s in progress.in_flight if s is None]
        _tally(progress, execute_batch(client, plan, gone_before + there, now_ms=now_ms))
        progress.position += len(progress.in_flight)
    progress.in_flight = []


# Refusals after which the job is no longer where the scan found it (so it cannot anchor it).
LEFT_STATE = frozenset({MISSING, WRONG_STATE})


def _tally(progress: Progress, results: list) -> set[str]:
    """Add a batch's results to the counts; return the ids that stay where they were."""
    stayed = set()
    for r in results:
        if isinstance(r, Exception):
            progress.failed += 1
            if len(progress.errors) < 20:
                progress.errors.append(str(r)[:300])
        elif r.outcome == DONE:
            progress.moved += 1
        else:
            progress.skipped += 1
            progress.skipped_by[r.outcome] = progress.skipped_by.get(r.outcome, 0) + 1
            if r.outcome not in LEFT_STATE:
                stayed.add(r.job_id)
    return stayed


def run_bulk(client: redis.Redis, *, plan: BulkPlan, store: ProgressStore,
             should_cancel: Callable[[], bool] = lambda: False,
             on_progress: Callable[[Progress], None] = lambda p: None,
             lock: BulkLock | None = None,
             clock: Callable[[], float] = time.monotonic,
             sleep: Callable[[float], None] = time.sleep,
             now_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> Progress:
    """Run (or resume) a bulk task to the end, cancellation, or a lost lock (``LockLost``).

    Starting fresh when the store is empty; otherwise resuming from the stored cursor (a
    finished or cancelled task returns at once). ``should_cancel`` is checked before every
    batch: what moved stays moved. ``on_progress`` gets the progress after every batch."""
    progress = store.load()
    if progress is None:
        progress = Progress(total=plan_total(client, plan))
        store.save(progress)
    if progress.state != RUNNING:
        return progress
    head = head_mode(plan)
    if head and not progress.receipt_key:
        progress.receipt_key = f"{RECEIPT_NAMESPACE}:{uuid.uuid4().hex}"
    _reconcile_head(client, progress)
    _reconcile(client, plan, progress, now_ms=now_ms())
    store.save(progress)

    started, handled_at_start, elapsed_before = clock(), progress.handled, progress.elapsed_s
    cursor = Cursor.from_dict(progress.cursor)
    while True:
        if should_cancel():
            progress.state = CANCELLED
            store.save(progress)
            on_progress(progress.copy())
            return progress
        if lock is not None and not lock.extend():
            raise LockLost(f"Lost the bulk lock of queue {plan.queue.name}; another runner may hold it.")
        batch_started = clock()
        if head:
            taken, exhausted, cursor = _head_batch(client, plan, progress, store, cursor)
            progress.cursor = cursor.as_dict()
            items, page = [None] * taken, None  # only the number of jobs matters below
        elif plan.job_ids is not None:
            items, next_position = _explicit_page(client, plan, progress.position)
            exhausted = next_position >= len(plan.job_ids)
            page: Page | None = None
        else:
            page = next_page(client, queue=plan.queue, filt=plan.filt, before_ms=plan.before_ms,
                             cursor=cursor, size=plan.batch_size)
            items = [(i, plan.filt.state) for i in page.match_ids]
            exhausted = page.exhausted
        if items and not head:
            # Explicit ids journal the whole batch (see _reconcile); a scan only the matches.
            progress.in_flight = [[i, s] for i, s in items]
            store.save(progress)  # the journal: see the module docstring
            results = execute_batch(client, plan, items, now_ms=now_ms())
            stayed = _tally(progress, results)
        else:
            stayed = set()
        progress.in_flight = []
        if head:
            pass  # the cursor moved with the batch
        elif page is not None:
            matched = set(page.match_ids)
            cursor = advance(cursor, page, remaining={i for i, _ in page.passed if i not in matched} | stayed)
            progress.cursor = cursor.as_dict()
        else:
            progress.position = next_position
        # Pacing: a batch of n jobs takes at least n / rate seconds. Its paced end counts as
        # its end, so the reported rate is the pace the user sees, not the burst speed.
        now = clock()
        paced_end = batch_started + len(items) / plan.rate if plan.rate is not None and items else now
        run_time = max(now, paced_end) - started
        progress.elapsed_s = elapsed_before + run_time
        progress.rate = (progress.handled - handled_at_start) / run_time if run_time > 0 else 0.0
        if exhausted:
            progress.state = DONE_STATE
            if progress.receipt_key:
                client.delete(progress.receipt_key)
            # Targeted jobs the scan never met were moved or removed by someone else (a
            # worker, another operator, removeOnFail) before we reached them: skipped.
            gone = progress.total - progress.handled
            if gone > 0:
                progress.skipped += gone
                progress.skipped_by[GONE] = progress.skipped_by.get(GONE, 0) + gone
            progress.total = max(progress.total, progress.handled)
        progress.eta_s = progress.remaining / progress.rate if progress.rate > 0 and progress.state == RUNNING else None
        store.save(progress)
        on_progress(progress.copy())
        if exhausted:
            return progress
        wait = paced_end - clock()
        if wait > 0:
            sleep(wait)
