"""A source kind that offers every facet with no Redis at all: ``FullMemorySource``, serving
``memory://<store>`` (in place of the minimal ``MemorySource``) from an in-memory BullMQ-like
store (``MemStore``). It is the recipe of docs/sources.md followed to its end: one class and one
entry in
``queues.sources.factory.SOURCE_KINDS`` (``register_full_memory_kind``), and every page, API
endpoint, action, bulk task and the monitor read and change its queues through the facets only
(``tests/project/test_tour_memory_kind.py``).

The data model is BullMQ's, kept as plain Python: a queue holds jobs (each in one state), job
schedulers, a paused flag and its global settings. The facets live in ``memory_jobs`` (jobs,
probes) and ``memory_commands`` (commands, schedulers, bulk, server). Its own connection-level
health check (``memory.reachable``) joins the catalogue here, as a kind's module declares it."""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from typing import ClassVar
from urllib.parse import urlsplit

from queues.errors import SourceUnavailable
from queues.health import Check, register_checks
from queues.keys import QueueRef
from queues.messages import _
from queues.scheduler_edit import SchedulerSpec
from queues.snapshot import COUNT_STATES, QueueSnapshot
from queues.sources import UnsupportedBySource, factory
from queues.sources.spec import ConnectionSpec

FINISHED = ("completed", "failed")

REACHABLE = "memory.reachable"
MEMORY_CHECKS = register_checks(
    Check(
        REACHABLE,
        "connection",
        _("In-memory store reachable"),
        "critical",
        _("Queuewatch could not read the in-memory store: its queues cannot be listed or changed."),
        _("Bring the store back online: tests set `MemStore.offline` back to False."),
        source="memory",
    )
)
DELAY_FACTOR = 4096  # BullMQ scores a delayed job ``due_ms * 4096 + seq``; listings show that score


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class MemJob:
    id: str
    name: str
    state: str
    data: str = "{}"  # JSON text, exactly as stored
    opts: dict = field(default_factory=dict)  # BullMQ's stored option names
    timestamp: int = field(default_factory=now_ms)
    processed_on: int | None = None
    finished_on: int | None = None
    attempts_made: int = 0
    attempts_started: int = 0
    stalled: int = 0
    failed_reason: str = ""
    stacktrace: list[str] = field(default_factory=list)
    returnvalue: str | None = None  # JSON text
    progress: str = ""
    logs: list[str] = field(default_factory=list)
    scheduler_id: str = ""
    locked: bool = False  # an active job whose worker holds its lock
    seq: int = 0  # insertion order (BullMQ's list order)

    @property
    def delay(self) -> int:
        return int(self.opts.get("delay") or 0)

    @property
    def priority(self) -> int:
        return int(self.opts.get("priority") or 0)

    @property
    def due(self) -> int:
        return self.timestamp + self.delay

    def score(self) -> float | None:
        """The score the job would have in its state's sorted set (None in a list)."""
        if self.state in FINISHED:
            return float(self.finished_on or 0)
        if self.state == "delayed":
            return float(self.due * DELAY_FACTOR + self.seq % DELAY_FACTOR)
        if self.state == "prioritized":
            return float(self.priority)
        if self.state == "waiting-children":
            return float(self.timestamp)
        return None

    def fields(self) -> dict[str, bytes]:
        """The job as BullMQ's hash holds it (field name → bytes), so the readers' pure parsers
        (``queues.jobs.summary_from_fields``…) apply unchanged."""
        values = {
            "name": self.name,
            "data": self.data,
            "opts": json.dumps(self.opts),
            "timestamp": self.timestamp,
            "processedOn": self.processed_on,
            "finishedOn": self.finished_on,
            "atm": self.attempts_made,
            "ats": self.attempts_started,
            "stc": self.stalled,
            "delay": self.delay,
            "priority": self.priority,
            "failedReason": self.failed_reason or None,
            "stacktrace": json.dumps(self.stacktrace),
            "returnvalue": self.returnvalue,
            "progress": self.progress or None,
            "rjk": self.scheduler_id or None,
        }
        return {k: str(v).encode() for k, v in values.items() if v is not None}


@dataclass
class MemScheduler:
    spec: SchedulerSpec
    next_run: int
    iterations: int = 0


@dataclass
class MemQueue:
    name: str
    jobs: dict[str, MemJob] = field(default_factory=dict)
    schedulers: dict[str, MemScheduler] = field(default_factory=dict)
    paused: bool = False
    concurrency: int | None = None
    rate_max: int | None = None
    rate_duration_ms: int | None = None
    limited_until_ms: int = 0  # the rate-limit key: workers wait until then
    ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    def in_state(self, state: str) -> list[MemJob]:
        """The jobs of ``state`` in the order the queue page shows them: waiting in run order
        (oldest first), active newest first, delayed/prioritized by score, finished newest first."""
        jobs = [j for j in self.jobs.values() if j.state == state]
        if state in ("delayed", "prioritized", "waiting-children"):
            return sorted(jobs, key=lambda j: (j.score(), j.seq))
        if state in FINISHED:
            return sorted(jobs, key=lambda j: (j.score(), j.seq), reverse=True)
        return sorted(jobs, key=lambda j: j.seq, reverse=state == "active")

    def counts(self) -> dict[str, int]:
        return {s: sum(1 for j in self.jobs.values() if j.state == s) for s in COUNT_STATES}

    def put(self, job: MemJob) -> MemJob:
        job.seq = next(self.ids) if not job.seq else job.seq
        self.jobs[job.id] = job
        return job

    def new_id(self) -> str:
        while True:
            candidate = str(next(self.ids))
            if candidate not in self.jobs:
                return candidate


class StoreOffline(Exception):
    """The store's own failure, which only the kind's ``errors()`` (and its facets) translate."""


class MemStore:
    """Queues by (prefix, name); one lock, since the monitor's threads and the request thread
    read and change the store at once."""

    def __init__(self):
        self.queues: dict[tuple[str, str], MemQueue] = {}
        self.lock = threading.RLock()
        self.offline = False

    def queue(self, ref: QueueRef) -> MemQueue | None:
        return self.queues.get((ref.prefix, ref.name))

    def create(self, prefix: str, name: str) -> MemQueue:
        return self.queues.setdefault((prefix, name), MemQueue(name))

    def check(self) -> None:
        if self.offline:
            raise StoreOffline()


STORES: dict[str, MemStore] = {}  # by the URL's store name: every source of memory://shop shares one


def store_named(name: str) -> MemStore:
    return STORES.setdefault(name, MemStore())


@contextlib.contextmanager
def translated(connection: str):
    """The store's failure as ``SourceUnavailable`` naming the connection (never its URL)."""
    try:
        yield
    except StoreOffline:
        raise SourceUnavailable(connection, "the in-memory store is offline") from None


class FullMemorySource:
    kind: ClassVar[str] = "memory"
    label: ClassVar[str] = "in-memory BullMQ store"
    schemes: ClassVar[tuple[str, ...]] = ("memory",)

    def __init__(self, spec: ConnectionSpec, *, socket_timeout: float = 5.0):
        from tests.support.memory_commands import MemBulk, MemCommands, MemSchedulers, MemServer
        from tests.support.memory_job_tools import MemDedup, MemJobTools
        from tests.support.memory_jobs import MemJobs, MemProbes

        self.spec = spec
        self.store = store_named(urlsplit(spec.url).netloc)
        store, name = self.store, spec.name
        self.jobs = MemJobs(store=store, connection=name)
        self.probes = MemProbes(store=store, connection=name)
        self.commands = MemCommands(store=store, connection=name)
        self.schedulers = MemSchedulers(store=store, connection=name)
        self.bulk = MemBulk(commands=self.commands, store=store, connection=name)
        self.server = MemServer(store=store, connection=name)
        self.job_tools = MemJobTools(store=store, connection=name)
        self.dedup = MemDedup(store=store, connection=name)
        self.figures = None  # not offered by the memory kind

    @classmethod
    def check_url(cls, url: str) -> None:
        if not urlsplit(url).netloc:
            raise ValueError("name the store, e.g. memory://shop")

    def discover(self) -> list[QueueRef]:
        with self.store.lock:
            self.store.check()
            return [
                QueueRef(self.spec.name, prefix, name)
                for prefix in self.spec.prefixes
                for (p, name) in sorted(self.store.queues)
                if p == prefix
            ]

    def queue_exists(self, queue: QueueRef) -> bool:
        with self.store.lock:
            self.store.check()
            return self.store.queue(queue) is not None

    def snapshots(self, queues: list[QueueRef]) -> list[QueueSnapshot]:
        with self.store.lock:
            self.store.check()
            return [self._snapshot(q) for q in queues]

    def _snapshot(self, ref: QueueRef) -> QueueSnapshot:
        q = self.store.queue(ref)
        if q is None:
            return QueueSnapshot(queue=ref, counts={s: 0 for s in COUNT_STATES}, paused=False, schedulers=0)
        waiting = q.in_state("waiting")
        return QueueSnapshot(
            queue=ref,
            counts=q.counts(),
            paused=q.paused,
            schedulers=len(q.schedulers),
            oldest_waiting_id=waiting[0].id if waiting else None,
            oldest_waiting_ts=waiting[0].timestamp if waiting else None,
        )

    def workers(self, queues: list[QueueRef]):
        raise UnsupportedBySource(kind=self.kind, connection=self.spec.name, what="worker connections")

    def events_follower(self, *, block_ms: int):
        # No events: the monitor reads this kind's queues exactly on every tick.
        raise UnsupportedBySource(kind=self.kind, connection=self.spec.name, what="events follower")

    def errors(self):
        return translated(self.spec.name)

    def close(self) -> None:
        pass


def register_full_memory_kind(monkeypatch) -> None:
    """The one line of the recipe: the kind's entry in the factory's table."""
    monkeypatch.setattr(factory, "SOURCE_KINDS", (*factory.SOURCE_KINDS, FullMemorySource))


def seeded_shop() -> MemStore:
    """A store with a queue ``bull:orders`` holding a job in every state (figures nobody types
    by accident, so a page showing them proves where they came from) and a scheduler, its
    dead-letter queue ``bull:orders-dlq``, and a small paused ``bull:emails``."""
    store = MemStore()
    orders, emails = store.create("bull", "orders"), store.create("bull", "emails")
    t = now_ms() - 3_600_000  # an hour ago: old enough to clean
    for job in (
        MemJob("w1", "charge-card", "waiting", data='{"order": 7301}', timestamp=t),
        MemJob("w2", "charge-card", "waiting", data='{"order": 7302}', timestamp=t + 1),
        MemJob(
            "a1",
            "ship-parcel",
            "active",
            data='{"order": 7303}',
            timestamp=t,
            processed_on=t + 5,
            attempts_started=1,
            locked=True,
            progress="40",
            logs=["picked from shelf 19"],
        ),
        MemJob("d1", "remind-buyer", "delayed", opts={"delay": 86_400_000}, timestamp=t),
        MemJob("p1", "vip-order", "prioritized", opts={"priority": 3}, timestamp=t),
        MemJob(
            "c1",
            "charge-card",
            "completed",
            timestamp=t,
            processed_on=t + 10,
            finished_on=t + 20,
            attempts_made=1,
            returnvalue='{"receipt": "RCPT-5521"}',
        ),
        MemJob(
            "f1",
            "charge-card",
            "failed",
            data='{"order": 7304, "amount": 12}',
            opts={"attempts": 3},
            timestamp=t,
            processed_on=t + 10,
            finished_on=t + 30,
            attempts_made=3,
            attempts_started=3,
            failed_reason="CardDeclined: issuer said no (7304)",
            stacktrace=["CardDeclined at pay.js:41"],
        ),
        MemJob(
            "f2",
            "charge-card",
            "failed",
            data='{"order": 7305}',
            timestamp=t,
            finished_on=t + 40,
            attempts_made=1,
            failed_reason="CardDeclined: issuer said no (7305)",
        ),
        MemJob(
            "f3",
            "ship-parcel",
            "failed",
            data='{"order": 7306}',
            timestamp=t,
            finished_on=t + 50,
            attempts_made=1,
            failed_reason="Timeout talking to carrier",
        ),
        MemJob("gc1", "bundle", "waiting-children", timestamp=t),
    ):
        orders.put(job)
    dead = store.create("bull", "orders-dlq")  # a dead-letter queue by the default patterns: redrive goes to orders
    dead.put(MemJob("x1", "charge-card", "waiting", data='{"order": 6601, "dead": true}', timestamp=t))
    emails.put(MemJob("e1", "welcome", "completed", timestamp=t, finished_on=t + 5))
    emails.put(MemJob("e2", "welcome", "waiting", timestamp=t))
    emails.paused = True
    orders.schedulers["nightly-report"] = MemScheduler(
        SchedulerSpec(scheduler_id="nightly-report", name="report", pattern="0 3 * * *"), next_run=t + 86_400_000
    )
    return store
