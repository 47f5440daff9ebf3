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
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from django.conf import settings

from dashboard.connections.dead_letters import is_dead_letter_queue
from dashboard.connections.registry import get_registry
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


@dataclass
class ConnectionHealth:
    name: str
    display_url: str
    results: list[health.CheckResult] = field(default_factory=list)

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
        failing = self.failing
        if not failing:
            return "ok"
        return max((r.severity for r in failing), key=health.SEVERITY_RANK.__getitem__)

    def as_dict(self, *, stored: bool = False) -> dict:
        """``stored``: each result as a ``CheckResult`` (``HealthReport.as_dict``)."""
        return {
            "name": self.name,
            "display_url": self.display_url,
            "worst": self.worst,
            "results": list(self.results) if stored else [r.as_dict() for r in self.results],
        }


@dataclass
class HealthReport:
    checked_at: int  # ms since epoch
    connections: list[ConnectionHealth]
    state_taken_at: int | None  # the monitor state used, None when missing or stale
    state_note: str  # why state-based checks are unknown ("" when the state was used)
    monitor: str | None = None

    @property
    def results(self) -> list[health.CheckResult]:
        return [r for c in self.connections for r in c.results]

    def failing_at(self, severity: str) -> list[health.CheckResult]:
        return [r for r in self.results if r.fails_at(severity)]

    def for_alerts(self) -> HealthReport:
        """The report with only the results that carry alert facts (``Check.alert_facts``: the
        server settings the Redis alert rules judge), all the monitor keeps of a run between
        runs: at 10,000 queues the whole report is some 170,000 results it need not hold."""
        return replace(
            self,
            connections=[replace(c, results=[r for r in c.results if r.check.alert_facts]) for c in self.connections],
        )

    def summary(self) -> dict:
        """How many checks fail and the worst severity among them, when they were run."""
        failing = [r for r in self.results if r.failed]
        worst = max((r.severity for r in failing), key=health.SEVERITY_RANK.__getitem__, default=None)
        return {"failing": len(failing), "worst": worst, "checked_at": self.checked_at}

    def as_dict(self, *, stored: bool = False) -> dict:
        """The whole report; ``stored``: for ``store``, each result the ``CheckResult`` itself,
        which orjson writes as its fields without a dict each (80,000 results at 10,000 queues),
        and without the words its check's catalogue entry holds."""
        return {
            "checked_at": self.checked_at,
            "monitor_state": {
                "present": self.state_taken_at is not None,
                "taken_at": self.state_taken_at,
                "age_ms": None if self.state_taken_at is None else max(0, self.checked_at - self.state_taken_at),
                "monitor": self.monitor,
                "note": self.state_note or None,
            },
            "connections": [c.as_dict(stored=stored) for c in self.connections],
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
) -> HealthReport:
    """Run every check on every configured connection (or the named ones). ``snapshots``: the
    leading monitor's current figures per queue (one home for them: the checks do not read
    them again); without them (the health page, ``check_queues``) the checks read for themselves."""
    now = now if now is not None else int(time.time() * 1000)
    registry = get_registry()
    state = read_monitor_state()
    fresh, note = health.usable_state(state, now)
    workers_doc = workers_document()
    out = []
    for name in connections or registry.names:
        conn = registry.connection(name)
        report = ConnectionHealth(name=name, display_url=conn.spec.display_url)
        try:
            queues = registry.queues(name)
        except SourceUnavailable as exc:
            report.results = [health.check_connection_reachable(name, exc.reason, source=conn.source.kind)]
            out.append(report)
            continue
        server = conn.source.server
        if server is None:  # a kind without server checks: its queues answer, nothing more to judge
            report.results = [health.check_connection_reachable(name, None, source=conn.source.kind)]
        else:
            report.results = server.health_checks(
                queues,
                state=fresh,
                now=now,
                thresholds=thresholds,
                is_dead_letter=is_dead_letter_queue,
                snapshots=snapshots,
                workers=monitor_workers(workers_doc, queues),
                workers_at=workers_doc.get("taken_at"),
            )
        out.append(report)
    return HealthReport(
        checked_at=now,
        connections=out,
        state_taken_at=int(fresh["taken_at"]) if fresh else None,
        state_note=note,
        monitor=fresh.get("monitor") if fresh else None,
    )


def store(report: HealthReport) -> bool:
    """Keep the report for /metrics; False when the dashboard Redis is unavailable."""
    if not settings.QUEUEWATCH_DASHBOARD_REDIS_URL:
        return False
    try:
        client = dash_redis.dashboard_redis()
        # Bytes from orjson to Redis: the report is megabytes at 10,000 queues.
        payload = fast_json.dumps_bytes(report.as_dict(stored=True))
        dash_redis.put_json_bytes(client, HEALTH_KEY, payload, ex=HEALTH_TTL_S)
        dash_redis.put_document(client, HEALTH_SUMMARY_KEY, report.summary(), ex=HEALTH_TTL_S)
        return True
    except DashboardRedisError:
        log.warning("could not store the health report in the dashboard Redis")
        return False


def read_stored(client: DashboardRedis) -> dict | None:
    """The stored report (``HealthReport.as_dict(stored=True)``); None when there is none."""
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
    report = run_all(**kwargs)
    store(report)
    return report
