"""The monitor: the one process that reads the monitored connections continuously.

Several copies may run; exactly one leads (``LeaderLock`` on the dashboard Redis), the others
take over within a lock TTL when the leader dies. The leader discovers queues (``discovering``),
follows every events stream (``intake``), keeps counts current from events and reads them
exactly only when a queue goes quiet or every ``QUEUEWATCH_RECONCILE_MS`` (``tracking``;
docs/live-truth.md), checks the locks of long-active jobs, renders each changed fragment once
for whoever watches it (``publishing``), stores history (``persistence``) and runs the periodic
jobs (``periodic``), all on one schedule (``cadence``: one ``queues.cron.Periodic``). The parts:
docs/architecture.md, "The monitor package".

This module is the leadership, the loop and the steps the schedule runs. Loops are defensive
(a failing queue or connection is logged and skipped, Redis reconnects back off, leadership is
dropped the moment a lock extension fails, database connections are recycled between ticks).
"""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from django.db import close_old_connections

from dashboard.actions.bulk_runner import BulkRunner
from dashboard.alerts import monitor_silence
from dashboard.alerts.outbox_runner import OutboxRunner
from dashboard.browse.search_runner import SearchRunner
from dashboard.connections.registry import Registry, get_redactor, get_registry
from dashboard.core import dash_redis
from dashboard.health import checks as health_checks
from dashboard.live import channels as live
from dashboard.live import fragments, monitor_presence
from dashboard.monitor import persistence
from dashboard.monitor.cadence import leader_schedule
from dashboard.monitor.discovering import QueueLists
from dashboard.monitor.intake import EventIntake
from dashboard.monitor.periodic import PeriodicSteps
from dashboard.monitor.publishing import ConnectionBanner, QueuePublisher
from dashboard.monitor.refreshing import Refresher
from dashboard.monitor.rolling import FULL_PASS_QUEUES, UNREAD_PER_TICK, RollingPass, share_per_tick
from dashboard.monitor.state_document import StateDocument
from dashboard.monitor.tracking import RECONCILE_MINUTES, CountTracker, QueueState, now_ms
from queues.cron import Job, Periodic
from queues.errors import SourceUnavailable
from queues.keys import QueueRef
from queues.rates import MINUTE_MS
from queues.redis.leader import LeaderLock

log = logging.getLogger("queuewatch.monitor")

# Refreshes between full ticks also rewrite the state document (/metrics, alert rules), at most
# every STATE_DOC_INTERVAL s and within STATE_DOC_SHARE of the time (docs/live-truth.md).
STATE_DOC_INTERVAL, STATE_DOC_SHARE = 0.5, 0.02
HUNG_AFTER = 60.0  # s without a loop iteration before the heartbeat gives up the lock


class Monitor:
    def __init__(
        self,
        *,
        registry: Registry | None = None,
        tick: float | None = None,
        lock_ttl_ms: int = 5000,
        name: str = "monitor",
    ):
        self.registry = registry or get_registry()
        self.tick = tick if tick is not None else settings.QUEUEWATCH_MONITOR_TICK
        self.snapshot_every = max(self.tick, settings.QUEUEWATCH_RECONCILE_MS / 1000)
        self.name = name
        self.dash = dash_redis.dashboard_redis()
        self.lock = LeaderLock(self.dash, ttl_ms=lock_ttl_ms)
        self.publisher = live.Publisher(self.dash)
        self.tracker = CountTracker(self.registry)
        self.banner = ConnectionBanner(self.publisher)
        self.rendered_languages: set[str] = set()  # other languages someone views (live fragments)
        self.queue_publisher = QueuePublisher(publisher=self.publisher, redactor=get_redactor())
        self.flusher = persistence.Flusher(name)  # writes history beside the loop
        self.intake = EventIntake(registry=self.registry, tracker=self.tracker, banner=self.banner, monitor_name=name)
        self.progress = time.monotonic()  # when the leader loop last started an iteration
        self.ticks = 0
        self.arrived: set[QueueRef] = set()  # changed during the steps (``serve_watched``): dirty after them
        self.state_due = 0.0  # monotonic time from which refreshes between ticks rewrite the state document
        self.publishes = 0  # refreshes that changed some queue's own fragments
        self.rolling = RollingPass()  # beyond FULL_PASS_QUEUES, each tick reads the due queues (``rolling``)
        self.state_document = StateDocument()
        self.refresher = Refresher(
            registry=self.registry,
            tracker=self.tracker,
            intake=self.intake,
            banner=self.banner,
            queue_publisher=self.queue_publisher,
            dash=self.dash,
        )
        self.queue_lists = QueueLists(registry=self.registry, dash=self.dash, monitor_name=name)
        self.periodic = PeriodicSteps(
            registry=self.registry,
            tracker=self.tracker,
            banner=self.banner,
            publisher=self.publisher,
            dash=self.dash,
            tick=self.tick,
            monitor_name=name,
        )

    # --- what the leader knows, for tests and probes ----------------------------------------

    @property
    def states(self) -> dict[QueueRef, QueueState]:
        return self.tracker.states

    @property
    def applied_cursors(self) -> dict[QueueRef, str]:
        return self.tracker.applied_cursors

    @property
    def health_report(self) -> health_checks.HealthReport | None:
        return self.periodic.health_report

    @property
    def stats(self) -> dict[str, int]:
        return {
            "gaps": self.intake.gaps_seen,
            "events": self.intake.events_seen,
            "ticks": self.ticks,
            "publishes": self.publishes,
        }

    # --- leadership ---------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        log.info("%s: waiting for leadership", self.name)
        silence_check = 0.0
        while not stop.is_set():
            try:
                if self.lock.acquire():
                    log.info("%s: leading", self.name)
                    try:
                        self.lead(stop)
                    finally:
                        self.lock.release()
                        log.info("%s: stopped leading", self.name)
                else:
                    if time.monotonic() >= silence_check:  # a standby notices a lock nobody leads with
                        silence_check = time.monotonic() + settings.QUEUEWATCH_STANDBY_CHECK_S
                        monitor_presence.warn_if_silent(self.dash, self.name, self.lock.holder())
                        monitor_silence.check_from_standby(self.dash)
                    stop.wait(1.0)
            except dash_redis.DashboardRedisError as exc:
                log.warning("%s: dashboard Redis unavailable (%s); retrying", self.name, exc)
                stop.wait(2.0)
            except Exception:  # a bug must not kill the monitor; log it and start over
                log.exception("%s: unexpected error; restarting the leader loop", self.name)
                stop.wait(2.0)
        self.publisher.close()

    def lead(self, stop: threading.Event) -> None:
        """One term of leadership: start from the stored cursors, run the loop until ``stop``
        or until the lock is lost."""
        parts = (self.tracker, self.banner, self.queue_publisher, self.queue_lists, self.rolling, self.state_document)
        for part in (*parts, self.flusher):  # each part's state is the term's
            part.reset()
        cursors = persistence.load_cursors()
        monitor_silence.leading_again()  # the outbox runner below sends any RESOLVED it queues
        self.intake.start()
        self.progress = time.monotonic()
        term_over = threading.Event()
        heartbeat = threading.Thread(target=self._keep_lock, args=(term_over,), name="leader-heartbeat", daemon=True)
        heartbeat.start()
        # Bulk actions (retry/discard/redrive tasks) run beside the loop, only while leading.
        bulk = BulkRunner(
            registry=self.registry, publisher=self.publisher, name=self.name, leading=lambda: self.lock.held
        )
        bulk.start()
        searches = SearchRunner(name=self.name, leading=lambda: self.lock.held)  # background searches by data
        searches.start()
        outbox = OutboxRunner(leading=lambda: self.lock.held)  # notifications, beside the loop too
        outbox.start()
        try:
            self._lead_loop(stop, cursors)
        finally:
            term_over.set()
            self.intake.stop()
            bulk.stop()
            searches.stop()
            outbox.stop()
            heartbeat.join(5)
            self.flusher.settle(self.tracker.states, timeout=30)
            # A last flush on a clean stop only: after losing the lock, a standby already
            # resumed from the stored cursors and is the one to write from now on.
            if self.lock.held and self.lock.extend():
                self.flush()

    def _keep_lock(self, stop: threading.Event) -> None:
        """Extend the leader lock from its own thread, so a long step (discovering thousands
        of queues, a slow database) cannot let it lapse; but only while the main loop makes
        progress, so a hung leader does lose leadership to a standby."""
        every = self.lock.ttl_ms / 1000 / 3
        while not stop.wait(every):
            if time.monotonic() - self.progress > HUNG_AFTER:
                log.error(
                    "%s: the leader loop made no progress for %.0f s; letting the lock lapse", self.name, HUNG_AFTER
                )
                self.lock.held = False
                return
            if not self.lock.extend():
                log.warning("%s: could not extend the leader lock", self.name)
                return

    # --- the loop -----------------------------------------------------------------------------

    def periodic_jobs(self) -> list[Job]:
        """Everything the leader runs on a schedule besides its own steps (``periodic``)."""
        return self.periodic.jobs()

    def _lead_loop(self, stop: threading.Event, cursors: dict[QueueRef, str]) -> None:
        dirty: set[QueueRef] = set()
        schedule = leader_schedule(self, cursors, dirty)
        while not stop.is_set():
            self.progress = time.monotonic()
            if not self.lock.held:
                log.warning("%s: lost the leader lock; standing down", self.name)
                return
            self.take_arrivals(self.seconds_to_wait(schedule), dirty)
            self.take_due_work(dirty)
            schedule.run_due(keep_going=lambda: self.lock.held, between=self.serve_watched)
            dirty |= self.arrived
            self.arrived.clear()

    def seconds_to_wait(self, schedule: Periodic) -> float:
        """Until the schedule's next step, a queue goes quiet or a held-back fragment is due;
        whatever the intake brings (events, viewers, outages) ends the wait sooner."""
        now = time.monotonic()
        waits = [schedule.seconds_until_next(), self.tracker.quiet.seconds_until_due(now)]
        held_until = self.queue_publisher.next_due()
        if held_until is not None:
            waits.append(held_until - now)
        return max(0.0, min(w for w in waits if w is not None))

    def take_arrivals(self, timeout: float, dirty: set[QueueRef]) -> None:
        """What the intake brings within ``timeout``: watched queues refreshed at once, the rest dirty."""
        self.refresher.take_arrivals(timeout, dirty, self.arrived, lambda queues: self.publish_state(only=queues))

    def take_due_work(self, dirty: set[QueueRef]) -> None:
        """The work events and viewers made due, done at once: held-back fragments, kept-job
        counts, exact reads of queues gone quiet."""
        t = time.monotonic()
        dirty.update(self.queue_publisher.due_again(t))
        if self.tracker.keeps.pending:  # read at once: the job may soon be trimmed away
            dirty |= self.tracker.learn_keep_counts()
        if self.tracker.duplicates.pending:
            dirty |= self.tracker.classify_duplicates()
        quiet = self.tracker.quiet_due(t)
        if quiet:
            # Quiet means exact: one targeted read of just these queues, published at once (their
            # entries of the state document too).
            self.refresh(quiet, full=False, exact=False)

    # --- the steps ----------------------------------------------------------------------------

    def discover(self, cursors: dict[QueueRef, str]) -> None:
        """Advance every connection's discovery by one budgeted step (``discovering``, with the
        queues viewers opened unlisted) and follow the new queues and forget the vanished ones
        when its list changes. ``cursors``: this term's stored stream cursors (used up)."""
        unlisted = self.intake.take_unlisted_viewed()
        for name in self.intake.followers:
            try:
                with self.registry.source(name).errors():
                    found = self.queue_lists.step(name, cursors, unlisted.get(name, ()))
            except SourceUnavailable as exc:
                self.banner.set_down(name, exc.reason)
                continue
            if found is not None:
                before = self.queue_lists.followed.get(name)
                self._follow(name, found, cursors)
                self.queue_lists.followed[name] = found
                if before is not None and not set(found) <= set(before):
                    self.queue_publisher.announce_queues()  # not a term's first list: new queues

    def _follow(self, name: str, found: list[QueueRef], cursors: dict[QueueRef, str]) -> None:
        new = self.tracker.add_queues(found)
        persistence.restore_series(self.tracker.states, new)
        # Never followed before: start the rates from finish-time scores. A queue with a
        # cursor resumes from it instead (exact), and the gap check reconciles if the
        # stream was trimmed past it meanwhile.
        self.tracker.reconcile([q for q in new if q not in cursors], since_ms=now_ms() - RECONCILE_MINUTES * MINUTE_MS)
        self.queue_publisher.forget(self.tracker.drop_missing(name, found))
        # A set: membership in the list cost cursors x queues comparisons, minutes per discovery
        # step at 10,000 queues once a term started with stored cursors (a lock lapse followed).
        found_set = set(found)
        self.intake.follow(name, found, {q: c for q, c in cursors.items() if q in found_set})
        for q in new:
            cursors.pop(q, None)  # used: a queue dropped and found again starts afresh

    def probe_stalls(self, dirty: set[QueueRef]) -> None:
        """Check the locks of long-active jobs, count failed attempts, name new jobs."""
        dirty |= self.tracker.probe_stalls()
        dirty |= self.tracker.count_attempt_failures(settled_only=False)
        self.tracker.name_jobs()

    def refresh_all(self, dirty: set[QueueRef], *, exact: bool) -> None:
        """The tick: every queue, read exactly first on a snapshot (``exact``); beyond
        ``FULL_PASS_QUEUES``, this tick's share of the rolling pass (``rolling``)."""
        self.follow_viewed_languages()
        states = self.tracker.states
        if len(states) <= FULL_PASS_QUEUES:
            self.refresh(list(states), full=True, exact=exact)
        else:
            share = self.rolling.take(
                {q: st.exact_at for q, st in states.items()},
                share_per_tick(len(states), tick=self.tick, snapshot_every=self.snapshot_every),
                now_ms=now_ms(),
                due_after_ms=int((self.snapshot_every - self.tick) * 1000),
            )
            watched = self.refresher.watched_queues()
            unread = [q for q, st in states.items() if st.live is None][:UNREAD_PER_TICK]
            changed = [q for q in dirty if q in states and states[q].live is not None]  # unread: their share
            part = dict.fromkeys([*share, *unread, *(q for q in watched if q in states), *changed])
            self.refresh(list(part), full=True, exact=False, exact_queues=set(share))
        dirty.clear()
        self.ticks += 1
        close_old_connections()

    def publish_changes(self, dirty: set[QueueRef]) -> None:
        """Between ticks, the queues events changed (the whole state document when due)."""
        queues = list(dirty)
        if len(self.tracker.states) > FULL_PASS_QUEUES:
            # A queue never read yet waits for the tick's share of them (``UNREAD_PER_TICK``):
            # in a new term every busy queue is dirty within seconds, and reading them all at
            # once here is the step the share bounds.
            queues = [q for q in queues if q in self.tracker.states and self.tracker.states[q].live is not None]
        self.refresh(queues, full=False, exact=False, state=time.monotonic() >= self.state_due)
        dirty.clear()

    def start_flush(self) -> None:
        # Built here, written beside the loop: live updates never wait for the database.
        self.flusher.start(self.tracker.states, self.tracker.applied_cursors)

    def refresh(
        self,
        queues: list[QueueRef],
        *,
        full: bool,
        exact: bool,
        state: bool | None = None,
        exact_queues: set[QueueRef] | frozenset[QueueRef] = frozenset(),
    ) -> None:
        """Publish whatever changed in these queues (``refreshing.Refresher.refresh_in_chunks``):
        the whole state document when ``state`` (default: on full refreshes), else their entries."""
        whole = full if state is None else state
        changed_overview = self.refresher.refresh_in_chunks(
            queues,
            full=full,
            exact=exact,
            exact_queues=exact_queues,
            publish_whole=self.publish_state if whole else None,
            publish_some=lambda some: self.publish_state(only=some),
            between=self.serve_watched,
        )
        self.publishes += int(changed_overview)

    def follow_viewed_languages(self) -> None:
        """Render other-language fragments only for languages someone views; when one starts
        being viewed, send every fragment afresh so its groups are complete at once."""
        try:
            viewed = dash_redis.viewed_languages(self.dash)
        except dash_redis.DashboardRedisError:
            return  # keep the current choice; the dashboard Redis trouble shows elsewhere
        if viewed - self.rendered_languages:
            self.queue_publisher.reset()
        self.rendered_languages = viewed
        fragments.only_render(viewed)

    def publish_state(self, only: list[QueueRef] | None = None) -> None:
        """The state document: every queue's entry, or ``only`` these queues' (``StateDocument``)."""
        started = time.monotonic()
        self.state_document.publish(
            self.dash,
            states=self.tracker.states,
            connection_names=self.registry.names,
            down=self.banner.down,
            monitor_name=self.name,
            only=only,
        )
        if only is None:
            # Grows with the queues (10,000 take ~100 ms: every queue's entry is looked at and the
            # order document written), though only changed entries are serialised and sent.
            took = time.monotonic() - started
            self.state_due = started + max(STATE_DOC_INTERVAL, took / STATE_DOC_SHARE)

    def serve_watched(self) -> None:
        """Between two steps, or two chunks of one: the events of watched queues (``refreshing``)."""
        self.refresher.serve_watched(self.arrived, lambda queues: self.publish_state(only=queues))

    def flush(self) -> None:
        persistence.flush(self.tracker.states, self.tracker.applied_cursors, monitor_name=self.name)

    def run_health_checks(self) -> None:
        self.periodic.run_health_checks()
