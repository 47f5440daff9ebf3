"""Health checks for the web edge: runs ``queues.health`` over every configured connection,
and keeps the latest result in the dashboard Redis for ``/metrics``.

Who runs the checks: the health page (on request — they are cheap: a few plain commands per
queue), ``manage.py check_queues``, and the leading monitor on its schedule, which hands over
its own current figures of every queue so they are not read twice. Wherever they run, the
``queue.no_workers`` check judges the workers the leading monitor last published
(``channels.read_workers``; the document expires after three missed periods, so one that exists
is fresh), and reads ``CLIENT LIST`` itself only without one (no monitor) or for a connection
the document does not cover. Every run stores its result as one JSON document, ``queuewatch:health``,
with the time it was taken. ``/metrics`` only *reads* that document, so a scrape never touches
the monitored Redis; its ``queuewatch_health_age_seconds`` says how old the results are.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from django.conf import settings

from dashboard.connections.dead_letters import is_dead_letter_queue
from dashboard.connections.registry import Monitored, Registry, get_registry
from dashboard.core import dash_redis, fast_json, state_store
from dashboard.core.dash_redis import DashboardRedis, DashboardRedisError
from dashboard.live.workers_document import queue_workers, workers_document
from queues import health
from queues.errors import SourceUnavailable
from queues.keys import QueueRef
from queues.snapshot import QueueSnapshot
from queues.workers import Worker

log = logging.getLogger("queuewatch.health")

HEALTH_KEY = "queuewatch:health"
# What the overview shows of the report, stored beside it: at 10,000 queues the whole report is
# megabytes, and parsing it on every overview request was most of that page's time.
HEALTH_SUMMARY_KEY = "queuewatch:health:summary"
HEALTH_TTL_S = 3600  # stored results older than this disappear from /metrics altogether


def every_result(result: health.CheckResult) -> bool:
    """``run_all``'s ``keep`` for a caller that shows every result (the health page, ``check_queues``)."""
    return True


def carries_alert_facts(result: health.CheckResult) -> bool:
    """``run_all``'s ``keep`` for the monitor: the results the Redis alert rules judge (the
    server settings a ``Check.alert_facts`` names), all it holds of a run between runs."""
    return bool(result.check.alert_facts)


@dataclass
class ConnectionHealth:
    name: str
    display_url: str
    # The results ``run_all`` kept (its ``keep``), worst first; the counts cover every result.
    results: list[health.CheckResult] = field(default_factory=list)
    failing_by_severity: Counter[str] = field(default_factory=Counter)

    def take(self, result: health.CheckResult, keep: Callable[[health.CheckResult], bool]) -> None:
        if result.failed:
            self.failing_by_severity[result.severity] += 1
        if keep(result):
            self.results.append(result)

    @property
    def failing(self) -> list[health.CheckResult]:
        return [r for r in self.results if r.failed]

    @property
    def unknown(self) -> list[health.CheckResult]:
        return [r for r in self.results if r.status == health.UNKNOWN]

    @property
    def passing(self) -> list[health.CheckResult]:
        return [r for r in self.results if r.status == health.PASS]

    @property
    def worst(self) -> str:
        """``ok``, or the highest severity among failing results."""
        failed = [s for s, n in self.failing_by_severity.items() if n]
        return max(failed, key=health.SEVERITY_RANK.__getitem__) if failed else "ok"

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "display_url": self.display_url,
            "worst": self.worst,
            "results": [r.as_dict() for r in self.results],
        }


@dataclass
class HealthReport:
    checked_at: int  # ms since epoch
    connections: list[ConnectionHealth]
    state_taken_at: int | None  # the monitor state used, None when missing or stale
    state_note: str  # why state-based checks are unknown ("" when the state was used)
    monitor: str | None = None
    stored: bool = False  # written to the dashboard Redis (``run_all(store=True)``)

    @property
    def results(self) -> list[health.CheckResult]:
        return [r for c in self.connections for r in c.results]

    def failing_at(self, severity: str) -> list[health.CheckResult]:
        return [r for r in self.results if r.fails_at(severity)]

    def summary(self) -> dict:
        """How many checks fail and the worst severity among them (of every result, kept or
        not), when they were run."""
        failing = Counter[str]()
        for c in self.connections:
            failing.update(c.failing_by_severity)
        worst = max((s for s, n in failing.items() if n), key=health.SEVERITY_RANK.__getitem__, default=None)
        return {"failing": failing.total(), "worst": worst, "checked_at": self.checked_at}

    def monitor_state(self) -> dict:
        return {
            "present": self.state_taken_at is not None,
            "taken_at": self.state_taken_at,
            "age_ms": None if self.state_taken_at is None else max(0, self.checked_at - self.state_taken_at),
            "monitor": self.monitor,
            "note": self.state_note or None,
        }

    def as_dict(self) -> dict:
        """The kept results, each with every word (``check_queues --json``)."""
        return {
            "checked_at": self.checked_at,
            "monitor_state": self.monitor_state(),
            "connections": [c.as_dict() for c in self.connections],
        }


def read_monitor_state() -> dict | None:
    try:
        return state_store.read_state(dash_redis.dashboard_redis())
    except (DashboardRedisError, ValueError):
        return None


def monitor_workers(doc: dict, queues: list[QueueRef]) -> dict[QueueRef, list[Worker]] | None:
    """The workers of those of ``queues`` the monitor read, from its published workers document
    (``{}`` when none exists: it expires after three missed periods, so one that exists is
    fresh); None without a document. Queues it did not read (a connection it could not read,
    a queue found since) are left out, and the checks read that connection themselves."""
    if not doc.get("taken_at"):
        return None
    found = {q: queue_workers(q, doc) for q in queues}
    return {q: w.workers for q, w in found.items() if w.known}


def run_all(
    *,
    now: int | None = None,
    connections: list[str] | None = None,
    thresholds: health.Thresholds = health.DEFAULT_THRESHOLDS,
    snapshots: Mapping[QueueRef, QueueSnapshot] | None = None,
    keep: Callable[[health.CheckResult], bool] = every_result,
    store: bool = False,
) -> HealthReport:
    """Run every check on every configured connection (or the named ones). ``snapshots``: the
    leading monitor's current figures per queue (one home for them: the checks do not read
    them again); without them (the health page, ``check_queues``) the checks read for themselves.

    ``keep``: which results the report holds whole (its counts cover all). ``store``: write
    the report for ``/metrics`` as the results come (``StoredReport``). A source may produce its
    results a share of its queues at a time, so with a narrow ``keep`` the results of every
    queue never exist at once: at 10,000 queues they were the monitor's largest moment."""
    now = now if now is not None else int(time.time() * 1000)
    registry = get_registry()
    state = read_monitor_state()
    fresh, note = health.usable_state(state, now)
    workers_doc = workers_document()
    report = HealthReport(
        checked_at=now,
        connections=[],
        state_taken_at=int(fresh["taken_at"]) if fresh else None,
        state_note=note,
        monitor=fresh.get("monitor") if fresh else None,
    )
    stored = StoredReport.begin(report) if store else None
    for name in connections or registry.names:
        conn = registry.connection(name)
        found = ConnectionHealth(name=name, display_url=conn.spec.display_url)
        if stored is not None:
            stored.begin_connection(found.name, found.display_url)
        for result in _connection_results(registry, conn, name, fresh, now, thresholds, snapshots, workers_doc):
            found.take(result, keep)
            if stored is not None:
                stored.add(result)
        found.results.sort(key=health.sort_key)
        if stored is not None:
            stored.end_connection(found.worst)
        report.connections.append(found)
    if stored is not None:
        report.stored = stored.commit(report)
    return report


def _connection_results(
    registry: Registry,
    conn: Monitored,
    name: str,
    fresh: dict | None,
    now: int,
    thresholds: health.Thresholds,
    snapshots: Mapping[QueueRef, QueueSnapshot] | None,
    workers_doc: dict,
) -> Iterable[health.CheckResult]:
    """What ``run_all`` folds of one connection, as its source produces them."""
    try:
        queues = registry.queues(name)
    except SourceUnavailable as exc:
        return [health.check_connection_reachable(name, exc.reason, source=conn.source.kind)]
    server = conn.source.server
    if server is None:  # a kind without server checks: its queues answer, nothing more to judge
        return [health.check_connection_reachable(name, None, source=conn.source.kind)]
    return server.health_checks(
        queues,
        state=fresh,
        now=now,
        thresholds=thresholds,
        is_dead_letter=is_dead_letter_queue,
        snapshots=snapshots,
        workers=monitor_workers(workers_doc, queues),
        workers_at=workers_doc.get("taken_at"),
    )


class StoredReport:
    """The report as ``/metrics`` reads it (``read_stored``), written to the dashboard Redis as
    the run goes (``dash_redis.DocumentStream``): ``{"checked_at", "monitor_state", "connections":
    [{"name", "display_url", "results": [CheckResult's fields…], "worst"}]}``. Each result keeps
    its fields, not the words its check's catalogue entry holds (title, explanation, fix: at
    10,000 queues they were 39 of the report's 67 MB). Without a dashboard Redis, or when it
    fails part-way, nothing is stored and the run goes on."""

    RESULTS_PER_PART = 2000  # results serialised and appended at a time

    def __init__(self, stream: dash_redis.DocumentStream):
        self.stream: dash_redis.DocumentStream | None = stream
        self.pending: list[health.CheckResult] = []
        self.connections = 0  # entries begun
        self.results = 0  # results written in the current entry

    @classmethod
    def begin(cls, report: HealthReport) -> StoredReport | None:
        if not settings.QUEUEWATCH_DASHBOARD_REDIS_URL:
            return None
        try:
            stream = dash_redis.DocumentStream(dash_redis.dashboard_redis(), HEALTH_KEY, ex=HEALTH_TTL_S)
        except DashboardRedisError:
            log.warning("could not store the health report in the dashboard Redis")
            return None
        stored = cls(stream)
        head = fast_json.dumps_bytes({"checked_at": report.checked_at, "monitor_state": report.monitor_state()})
        stored._write(head[:-1] + b',"connections":[')
        return stored

    def begin_connection(self, name: str, display_url: str) -> None:
        head = fast_json.dumps_bytes({"name": name, "display_url": display_url})
        self._write((b"," if self.connections else b"") + head[:-1] + b',"results":[')
        self.connections += 1
        self.results = 0

    def add(self, result: health.CheckResult) -> None:
        self.pending.append(result)
        if len(self.pending) >= self.RESULTS_PER_PART:
            self._flush()

    def end_connection(self, worst: str) -> None:
        self._flush()
        self._write(b'],"worst":' + fast_json.dumps_bytes(worst) + b"}")

    def commit(self, report: HealthReport) -> bool:
        """Finish the document and put it in place, with the summary beside it; whether both
        were stored."""
        self._write(b"]}")
        if self.stream is None:
            return False
        try:
            self.stream.commit()
            dash_redis.put_document(self.stream.client, HEALTH_SUMMARY_KEY, report.summary(), ex=HEALTH_TTL_S)
            return True
        except DashboardRedisError:
            self._failed()
            return False

    def _flush(self) -> None:
        if self.pending:
            # Each result as its dataclass fields (orjson), the list's brackets left off.
            part = fast_json.dumps_bytes(self.pending)[1:-1]
            self._write((b"," if self.results else b"") + part)
            self.results += len(self.pending)
            self.pending = []

    def _write(self, part: bytes) -> None:
        if self.stream is None:
            return
        try:
            self.stream.write(part)
        except DashboardRedisError:
            self._failed()

    def _failed(self) -> None:
        log.warning("could not store the health report in the dashboard Redis")
        if self.stream is not None:
            self.stream.abandon()
        self.stream = None


def read_stored(client: DashboardRedis) -> dict | None:
    """The stored report (``StoredReport``); None when there is none."""
    try:
        text = dash_redis.get_json(client, HEALTH_KEY)
        return None if text is None else fast_json.loads(text)
    except ValueError:
        return None


def read_stored_summary(client: DashboardRedis) -> dict | None:
    """``HealthReport.summary`` of the last stored report (None: none stored)."""
    try:
        return dash_redis.get_document(client, HEALTH_SUMMARY_KEY)
    except ValueError:
        return None


def run_and_store(**kwargs) -> HealthReport:
    return run_all(store=True, **kwargs)
