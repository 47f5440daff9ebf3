"""The steps the leading monitor runs on a schedule besides its tick, snapshots, probes and
flush: history roll-up, health checks, the workers read, alert rules and the optional digest
(``PeriodicSteps.jobs``), on the leader's one schedule (``cadence``) after its own steps; this
module is what each job does with the figures the loop keeps.
"""

from __future__ import annotations

import datetime as dt
import logging
from concurrent.futures import Future, ThreadPoolExecutor

from django.conf import settings

from dashboard.alerts import monitoring as alert_monitoring
from dashboard.connections.registry import Registry
from dashboard.core import dash_redis
from dashboard.health import checks as health_checks
from dashboard.live import channels as live
from dashboard.live import history
from dashboard.monitor.gc_tuning import give_back_freed_memory
from dashboard.monitor.publishing import ConnectionBanner
from dashboard.monitor.tracking import CountTracker
from queues.cron import Job

log = logging.getLogger("queuewatch.monitor")

ROLLUP_INTERVAL, HEALTH_INTERVAL = 300.0, 60.0


class PeriodicSteps:
    """The periodic jobs of one monitor, over the parts it shares with the loop; keeps the last
    health report for the Redis alert rules."""

    def __init__(
        self,
        *,
        registry: Registry,
        tracker: CountTracker,
        banner: ConnectionBanner,
        publisher: live.Publisher,
        dash: dash_redis.DashboardRedis,
        tick: float,
        monitor_name: str,
    ):
        self.registry = registry
        self.tracker = tracker
        self.banner = banner
        self.publisher = publisher
        self.dash = dash
        self.tick = tick
        self.name = monitor_name
        # What the Redis alert rules read of the last report (``carries_alert_facts``); the
        # whole report is stored in the dashboard Redis for the pages and /metrics.
        self.health_report: health_checks.HealthReport | None = None
        # The scheduled health run works beside the loop (``start_health_checks``).
        self._health_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="health")
        self._health_run: Future | None = None

    def jobs(self) -> list[Job]:
        """Everything the leader runs on a schedule besides its tick, snapshots, probes and
        flush. (The notification outbox is delivered by ``OutboxRunner``, a thread beside the
        loop, so a slow receiver never holds it up.)"""
        jobs = [
            Job("rollup", history.rollup_and_prune, every=ROLLUP_INTERVAL),
            # Health checks and rules wait for the first ticks: they read what ticks gathered.
            Job("health", self.start_health_checks, every=HEALTH_INTERVAL, first_after=2 * self.tick),
            # Workers (CLIENT LIST) before the first alert evaluation, so "no workers" is known.
            Job("workers", self.read_workers, every=settings.QUEUEWATCH_WORKERS_INTERVAL_S, first_after=self.tick),
            Job("alerts", self.evaluate_alerts, every=settings.QUEUEWATCH_ALERT_INTERVAL_S, first_after=2 * self.tick),
        ]
        if settings.QUEUEWATCH_DIGEST_CRON:
            jobs.append(
                Job("digest", self.write_digest, cron=settings.QUEUEWATCH_DIGEST_CRON, tz=settings.QUEUEWATCH_DIGEST_TZ)
            )
        return jobs

    def run_health_checks(self) -> None:
        """The production-readiness checks, stored for the health page, the overview, /metrics and
        the Redis alert rules. They judge the figures this monitor keeps (reading every queue
        again cost the monitored Redis ~12 commands per queue)."""
        self._check_health(self.tracker.current_snapshots())

    def start_health_checks(self) -> bool:
        """``run_health_checks`` on a thread of its own, unless the last run still works; whether
        one was started. At 10,000 queues a run took seconds, and every tick behind it started
        that much late. The figures are taken here, on the loop's thread, so they are one
        moment's."""
        if self._health_run is not None and not self._health_run.done():
            return False
        self._health_run = self._health_pool.submit(self._check_health, self.tracker.current_snapshots())
        return True

    def _check_health(self, snapshots) -> None:
        try:
            self.health_report = health_checks.run_and_store(
                snapshots=snapshots, keep=health_checks.carries_alert_facts
            )
        except Exception:
            log.exception("%s: health checks failed; will retry", self.name)
        finally:
            give_back_freed_memory()  # what the run's shares of results took

    def evaluate_alerts(self) -> None:
        """Evaluate every alert rule on what the last tick saw (rows and outbox notifications
        are written by ``dashboard.alerts``), and refresh the firing-alerts banner."""
        states = self.tracker.states
        signals = [st.signals for st in states.values() if st.signals is not None]
        reachable = [st for q, st in states.items() if not self.banner.is_down(q.connection)]
        alert_monitoring.evaluate(
            signals=signals,
            registry=self.registry,
            down=dict(self.banner.down),
            report=self.health_report,
            now=dt.datetime.now(dt.UTC),
            publisher=self.publisher,
            complete=all(st.signals is not None for st in reachable),
        )

    def read_workers(self) -> None:
        """Workers per queue: one CLIENT LIST per connection per period (never per request or
        tab); the next tick's signals and overview rows carry the counts, and the document
        feeds the queue pages."""
        doc = self.tracker.read_workers(dict(self.banner.down))
        try:
            dash_redis.publish_workers(self.dash, doc, every_s=settings.QUEUEWATCH_WORKERS_INTERVAL_S)
        except dash_redis.DashboardRedisError:
            log.warning("%s: could not publish the workers document", self.name)

    def write_digest(self) -> None:
        alert_monitoring.write_digest(now=dt.datetime.now(dt.UTC))
