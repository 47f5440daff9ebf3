"""The monitor: the one process that reads the monitored Redis continuously.

Several copies may run; exactly one leads (``LeaderLock`` on the dashboard Redis), the others
wait and take over within a lock TTL when the leader dies. The leader:

* follows every queue's events stream (one thread per connection, blocking ``XREAD`` on a
  dedicated connection) and counts completions, failures, stalls and adds per minute;
* keeps every queue's counts current from those events (``queues.live_counts``) and takes an
  exact pipelined snapshot of every queue only every ``QUEUEWATCH_RECONCILE_MS`` to correct
  them: reading counts on every change would cost the monitored Redis more than the polling
  dashboards Queuewatch replaces; and reads one queue exactly once it has been quiet for a
  second (``queues.quiet``: quiet means exact, see docs/live-truth.md);
* checks the locks of jobs active for more than a second, so a stalled job shows within about
  a second, and renders each changed fragment once for its group;
* re-renders what someone is watching (job lists, job pages), whatever the number of tabs;
* flushes minute counters, gauges and stream cursors in one database transaction, so a
  standby that takes over continues exactly where the leader's last flush left off;
* rolls minutes up into hours and prunes history, runs health checks, evaluates alert rules
  and (optionally) writes a daily digest — all through one scheduler (``queues.cron.Periodic``).

Loops are defensive: a failing queue or connection is logged and skipped, Redis reconnects back
off, leadership is dropped the moment a lock extension fails, and database connections are
recycled between ticks.
"""

from __future__ import annotations

import datetime as dt
import logging
import queue as queue_mod
import threading
import time
from dataclasses import dataclass, field

import redis
from django.conf import settings
from django.db import close_old_connections, transaction

from dashboard.health import checks as health
from dashboard.live import fragments
from dashboard.live import channels as live
from dashboard.alerts import monitoring as alert_monitoring
from dashboard.alerts.outbox_runner import OutboxRunner
from dashboard.actions.bulk_runner import BulkRunner
from dashboard.live.models import QueuePoint, StreamCursor
from dashboard.registry import Registry, get_redactor, get_registry
from dashboard.live.rates import QueueSignals, build_signals, display_key
from queues.attempts import AttemptFailures
from queues.connections import client_for
from queues.cron import Job, Periodic
from queues.events import EventsFollower
from queues.jobs import JobSummary, read_job_live, read_summaries
from queues.keys import BROWSABLE_STATES, QueueRef
from queues.leader import LeaderLock
from queues.listing import JobPage, page_one_ids
from queues.live_counts import FINISHED, STATE_AFTER, JobStates, LiveCounts
from queues.rates import COUNTERS, MINUTE_MS, Minute, QueueSeries, count_event, minute_of
from queues.snapshot import QueueSnapshot, read_snapshots
from queues.quiet import QuietReads
from queues.stalls import read_active, without_lock

log = logging.getLogger("queuewatch.monitor")

RECONCILE_MINUTES = 15
DIRTY_PUBLISH_INTERVAL = 0.05  # s: coalesce bursts of events into one refresh per queue
# A queue's own fragments (overview row, queue header) are re-rendered at most this often:
# people cannot read counts that change faster, the overview is batched at 0.5 s anyway, and
# on a busy system rendering them is most of the monitor's CPU. Watched job lists and job
# pages are not held back.
FRAGMENT_MIN_INTERVAL = 0.5
MIN_READ_INTERVAL = 0.05  # s between XREADs that returned events
DISCOVERY_INTERVAL = 10.0
FLUSH_INTERVAL = 1.0
ROLLUP_INTERVAL = 300.0
HEALTH_INTERVAL = 60.0
STALL_PROBE_INTERVAL = 1.0  # s between lock checks of long-active jobs
STALL_PROBE_AFTER_MS = 1000  # a job's lock lives lockDuration from activation: no need to look sooner
HUNG_AFTER = 60.0  # s without a loop iteration before the heartbeat gives up the lock
TOTALLED_EVENTS = ("completed", "failed", "stalled", "added", "duplicated")
GAUGES = ["waiting", "active", "delayed", "prioritized", "failed_depth", "stalled_now", "oldest_age_ms"]
POINT_KEY = ["connection", "prefix", "queue", "resolution", "start"]


def _apply_moves(ids: tuple[str, ...], moves, state: str) -> tuple[str, ...]:
    """Page-1 ids of a finished set (newest first) after these moves, in event order."""
    out = list(ids)
    for job_id, old, new in moves:
        if old == state or new == state:
            if job_id in out:
                out.remove(job_id)
            if new == state:
                out.insert(0, job_id)
    return tuple(out)


def now_ms() -> int:
    return int(time.time() * 1000)


def ms_to_dt(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)


# ------------------------------------------------------------------------------------------
# Event following, one thread per connection


class FollowerThread(threading.Thread):
    """Reads one connection's event streams and hands batches to the monitor's queue."""

    def __init__(self, name: str, registry: Registry, out: queue_mod.Queue, stop: threading.Event, block_ms: int = 1000):
        super().__init__(name=f"follow-{name}", daemon=True)
        self.conn_name = name
        self.spec = registry.connection(name).spec
        self.out = out
        self.stop_event = stop
        self.block_ms = block_ms
        self._wanted: tuple[list[QueueRef], dict[QueueRef, str]] | None = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self.follower: EventsFollower | None = None

    def follow(self, queues: list[QueueRef], start_ids: dict[QueueRef, str]) -> None:
        with self._lock:
            self._wanted = (list(queues), dict(start_ids))
        self._wake.set()

    def run(self) -> None:
        backoff = 0.5
        while not self.stop_event.is_set():
            try:
                if self.follower is None:
                    # Dedicated connection; its socket timeout must exceed the XREAD block.
                    client = client_for(self.spec, socket_timeout=self.block_ms / 1000 + 5)
                    client.ping()
                    self.follower = EventsFollower(client, block_ms=self.block_ms)
                    if backoff > 0.5:
                        self.out.put(("up", self.conn_name, None))
                with self._lock:
                    wanted, self._wanted = self._wanted, None
                if wanted is not None:
                    queues, starts = wanted
                    added = self.follower.follow(queues, starts)
                    if added:
                        # Tell the monitor where counting starts for these queues, before any
                        # of their events (same hand-off queue, so the order is kept).
                        self.out.put(("followed", self.conn_name, {q: self.follower.last_ids[q] for q in added}))
                if not self.follower.last_ids:
                    self._wake.wait(self.block_ms / 1000)  # nothing to follow yet: until follow()
                    self._wake.clear()
                    continue
                started = time.monotonic()
                events, gaps = self.follower.read()
                backoff = 0.5
                if events or gaps:
                    self.out.put(("events", self.conn_name, (events, gaps)))
                    # Under load every XREAD returns at once with a few events; pacing the
                    # reads batches them, so the command rate stays bounded at a small cost
                    # in latency (well inside the refresh coalescing below).
                    self.stop_event.wait(max(0.0, MIN_READ_INTERVAL - (time.monotonic() - started)))
            except Exception as exc:  # noqa: BLE001 - a follower must never die silently
                if not isinstance(exc, redis.RedisError):
                    log.exception("follower %s: unexpected error; reconnecting", self.conn_name)
                # Keep the cursors across reconnects: resume where we were and let the gap
                # check tell us if the stream was trimmed meanwhile.
                cursors = dict(self.follower.last_ids) if self.follower else {}
                self.follower = None
                if cursors:
                    with self._lock:
                        if self._wanted is None:
                            self._wanted = (list(cursors), cursors)
                        else:
                            self._wanted[1].update({q: c for q, c in cursors.items() if q not in self._wanted[1]})
                self.out.put(("down", self.conn_name, str(exc) or exc.__class__.__name__))
                self.stop_event.wait(backoff)
                backoff = min(backoff * 2, 15.0)


# ------------------------------------------------------------------------------------------
# The leader's state


@dataclass
class QueueState:
    series: QueueSeries = field(default_factory=lambda: QueueSeries(keep=RECONCILE_MINUTES + 5))
    snapshot: QueueSnapshot | None = None  # the latest counts: exact, or estimated from events
    live: LiveCounts | None = None  # counts kept current from events between exact snapshots
    stalled_now: list[str] = field(default_factory=list)
    active_since: dict[str, int] = field(default_factory=dict)  # active job id -> ms it became active
    touched_states: set[str] = field(default_factory=set)  # states jobs entered or left since the last refresh
    dirty_minutes: set[int] = field(default_factory=set)
    touched_jobs: set[str] = field(default_factory=set)  # job ids with events since the last refresh
    gauge_minute: int | None = None  # the minute whose gauges were last marked for storing
    display_key: tuple | None = None  # what the published fragments show (see display_key())
    rendered_at: float = 0.0  # monotonic time of the last render of the queue's own fragments
    fresh_lists: set[str] = field(default_factory=set)  # watched list states already published
    list_keys: dict[str, tuple] = field(default_factory=dict)  # state -> what its page 1 showed
    list_rows: dict[str, dict[str, JobSummary]] = field(default_factory=dict)  # state -> page-1 rows by id
    job_states: dict[str, str] = field(default_factory=dict)  # last seen state of watched jobs
    signals: QueueSignals | None = None  # the latest, for the published state (metrics, health)
    # Events counted since this monitor started leading (Prometheus handles the reset when
    # leadership moves), and how often the stream was trimmed before we read it.
    totals: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOTALLED_EVENTS, 0))
    gaps: int = 0


class Monitor:
    def __init__(self, *, registry: Registry | None = None, tick: float | None = None, lock_ttl_ms: int = 5000,
                 name: str = "monitor"):
        self.registry = registry or get_registry()
        self.tick = tick if tick is not None else settings.QUEUEWATCH_MONITOR_TICK
        self.snapshot_every = max(self.tick, settings.QUEUEWATCH_RECONCILE_MS / 1000)
        self.name = name
        self.dash = live.dashboard_redis()
        self.lock = LeaderLock(self.dash, ttl_ms=lock_ttl_ms)
        self.publisher = live.Publisher(self.dash)
        self.redactor = get_redactor()
        self.stats = {"gaps": 0, "events": 0, "ticks": 0, "publishes": 0}
        self.health_report: health.HealthReport | None = None  # the last one, for the Redis alert rules

    # --- outer loop -------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        log.info("%s: waiting for leadership", self.name)
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
                    stop.wait(1.0)
            except redis.RedisError as exc:
                log.warning("%s: dashboard Redis unavailable (%s); retrying", self.name, exc)
                stop.wait(2.0)
            except Exception:  # a bug must not kill the monitor; log it and start over
                log.exception("%s: unexpected error; restarting the leader loop", self.name)
                stop.wait(2.0)
        self.publisher.close()

    # --- leading ----------------------------------------------------------------------------

    def lead(self, stop: threading.Event) -> None:
        self.states: dict[QueueRef, QueueState] = {}
        self.known_jobs = JobStates()
        self.quiet = QuietReads()  # queues due an exact read once their events stop (quiet means exact)
        self.attempts = AttemptFailures()  # failed attempts that will be retried
        self.held_back: dict[QueueRef, float] = {}  # queues whose fragments are due again at (monotonic)
        self.down: dict[str, str] = {}
        # Stream id of the last event applied to the counters, per queue. Flushed in the same
        # transaction as the counters, so a takeover resumes exactly after what was stored.
        self.applied_cursors: dict[QueueRef, str] = {}
        self.publisher.forget()
        events_in: queue_mod.Queue = queue_mod.Queue()
        follow_stop = threading.Event()
        followers = {n: FollowerThread(n, self.registry, events_in, follow_stop) for n in self.registry.names}
        cursors = self.load_state()
        for f in followers.values():
            f.start()
        self.progress = time.monotonic()
        heartbeat = threading.Thread(target=self._keep_lock, args=(follow_stop,), name="leader-heartbeat", daemon=True)
        heartbeat.start()
        # Bulk actions (retry/discard/redrive tasks) run beside the loop, only while leading.
        bulk = BulkRunner(registry=self.registry, publisher=self.publisher, name=self.name, leading=lambda: self.lock.held)
        bulk.start()
        outbox = OutboxRunner(leading=lambda: self.lock.held)  # notifications, beside the loop too
        outbox.start()
        try:
            self._lead_loop(stop, events_in, followers, cursors)
        finally:
            follow_stop.set()
            bulk.stop()
            outbox.stop()
            heartbeat.join(5)
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
                log.error("%s: the leader loop made no progress for %.0f s; letting the lock lapse", self.name, HUNG_AFTER)
                self.lock.held = False
                return
            if not self.lock.extend():
                log.warning("%s: could not extend the leader lock", self.name)
                return

    def periodic_jobs(self) -> list[Job]:
        """Everything the leader runs on a schedule besides its tick, snapshots, probes and
        flush. (The notification outbox is delivered by ``OutboxRunner``, a thread beside this
        loop, so a slow receiver never holds it up.)"""
        jobs = [
            Job("rollup", self.rollup_and_prune, every=ROLLUP_INTERVAL),
            # Health checks and rules wait for the first ticks: they read what ticks gathered.
            Job("health", self.run_health_checks, every=HEALTH_INTERVAL, first_after=2 * self.tick),
            Job("alerts", self.evaluate_alerts, every=settings.QUEUEWATCH_ALERT_INTERVAL_S, first_after=2 * self.tick),
        ]
        if settings.QUEUEWATCH_DIGEST_CRON:
            jobs.append(Job("digest", self.write_digest, cron=settings.QUEUEWATCH_DIGEST_CRON, tz=settings.QUEUEWATCH_DIGEST_TZ))
        return jobs

    def _lead_loop(self, stop, events_in, followers, cursors) -> None:
        next_discovery = next_tick = next_snapshot = next_flush = next_probe = 0.0
        periodic = Periodic(self.periodic_jobs())
        dirty: set[QueueRef] = set()
        last_dirty_refresh = 0.0
        while not stop.is_set():
            t = self.progress = time.monotonic()
            if not self.lock.held:
                log.warning("%s: lost the leader lock; standing down", self.name)
                return
            if t >= next_discovery:
                self.discover(followers, cursors)
                cursors = {}
                next_discovery = t + DISCOVERY_INTERVAL
            timeout = max(0.0, min(min(next_tick, next_snapshot, next_flush, next_probe) - time.monotonic(),
                                   periodic.seconds_until_next()))
            quiet_in = self.quiet.seconds_until_due(time.monotonic())
            if quiet_in is not None:
                timeout = min(timeout, quiet_in)
            if dirty:
                timeout = min(timeout, max(0.0, last_dirty_refresh + DIRTY_PUBLISH_INTERVAL - time.monotonic()))
            if self.held_back:
                timeout = min(timeout, max(0.0, min(self.held_back.values()) - time.monotonic()))
            try:
                item = events_in.get(timeout=timeout)
                self.handle(item, dirty)
                while True:  # drain whatever else is waiting
                    self.handle(events_in.get_nowait(), dirty)
            except queue_mod.Empty:
                pass
            t = time.monotonic()
            for q in [q for q, due in self.held_back.items() if due <= t]:
                del self.held_back[q]
                dirty.add(q)
            quiet = [q for q in self.quiet.due(t) if q in self.states and self.states[q].live is not None]
            if quiet:
                # Quiet means exact: one targeted read of just these queues, published at once.
                for q in quiet:
                    self.states[q].live.needs_snapshot = True
                self.refresh(quiet, full=False, exact=False)
                self.publish_state()
            if t >= next_probe:
                self.probe_stalls(dirty)
                self.count_attempt_failures(dirty, settled_only=False)
                next_probe = t + STALL_PROBE_INTERVAL
            if t >= next_tick or t >= next_snapshot:
                exact = t >= next_snapshot
                self.refresh(list(self.states), full=True, exact=exact)
                dirty.clear()
                self.stats["ticks"] += 1
                next_tick = t + self.tick
                if exact:
                    # On a fixed schedule, not "interval after the last one": the load a
                    # snapshot puts on Redis stays exactly periodic.
                    next_snapshot += self.snapshot_every
                    if next_snapshot <= t:  # the first one, or we fell behind: restart the schedule
                        next_snapshot = t + self.snapshot_every
                close_old_connections()
            elif dirty and t - last_dirty_refresh >= DIRTY_PUBLISH_INTERVAL:
                self.refresh(list(dirty), full=False, exact=False)
                dirty.clear()
                last_dirty_refresh = t
            if t >= next_flush:
                if not self.lock.held:
                    log.warning("%s: lost the leader lock before a flush; standing down", self.name)
                    return
                self.flush()
                next_flush = t + FLUSH_INTERVAL
            periodic.run_due()

    def handle(self, item, dirty: set[QueueRef]) -> None:
        kind, conn, payload = item
        if kind == "events":
            events, gaps = payload
            for ev in events:
                state = self.states.get(ev.queue)
                if state is None:
                    continue
                self.applied_cursors[ev.queue] = ev.stream_id
                if ev.name in TOTALLED_EVENTS:
                    state.totals[ev.name] += 1
                if count_event(state.series, ev.name, ev.ts_ms, ev.fields):
                    state.dirty_minutes.add(minute_of(ev.ts_ms))
                self.attempts.consider(ev, self.known_jobs.get((ev.queue, ev.job_id)))
                if state.live is not None:
                    state.touched_states |= state.live.apply(ev, self.known_jobs)
                if ev.job_id:
                    state.touched_jobs.add(ev.job_id)
                    if ev.name == "active":
                        state.active_since[ev.job_id] = ev.ts_ms
                    elif ev.name in STATE_AFTER or ev.name == "removed":
                        state.active_since.pop(ev.job_id, None)
                dirty.add(ev.queue)
                self.quiet.heard(ev.queue, time.monotonic())
            self.stats["events"] += len(events)
            self.count_attempt_failures(dirty, settled_only=True)
            for q, (lost_from, lost_to) in gaps.items():
                if q in self.states:
                    self.states[q].gaps += 1
                log.warning("%s: events stream of %s/%s was trimmed past our cursor; reconciling", self.name, q.prefix, q.name)
                self.stats["gaps"] += 1
                self.reconcile([q], since_ms=lost_from, until_ms=lost_to)
                if q in self.states and self.states[q].live is not None:
                    self.states[q].live.needs_snapshot = True  # moves were lost with the events
                dirty.add(q)
        elif kind == "down":
            if conn not in self.down:
                log.warning("%s: connection %s lost: %s", self.name, conn, payload)
            self.down[conn] = payload
            self.publish_banner()
        elif kind == "up":
            self.down.pop(conn, None)
            self.publish_banner()
        elif kind == "followed":
            for q, start_id in payload.items():
                self.applied_cursors.setdefault(q, start_id)
                live_counts = self.states[q].live if q in self.states else None
                if live_counts is not None and live_counts.read_before(start_id):
                    # Events between that snapshot and where following starts were missed.
                    live_counts.needs_snapshot = True

    # --- reading ----------------------------------------------------------------------------

    def discover(self, followers, cursors: dict[QueueRef, str]) -> None:
        for name, follower in followers.items():
            try:
                found = self.registry.scan(name)
                live.publish_queue_list(self.dash, name, found)
            except redis.RedisError as exc:
                self.down[name] = str(exc)
                self.publish_banner()
                continue
            new = [q for q in found if q not in self.states]
            for q in new:
                self.states[q] = QueueState()
            self.restore_series(new)
            # Never followed before: start the rates from finish-time scores. A queue with a
            # cursor resumes from it instead (exact), and the gap check reconciles if the
            # stream was trimmed past it meanwhile.
            self.reconcile([q for q in new if q not in cursors], since_ms=now_ms() - RECONCILE_MINUTES * MINUTE_MS)
            found_set = set(found)
            for q in [q for q in self.states if q.connection == name and q not in found_set]:
                del self.states[q]
                self.applied_cursors.pop(q, None)
            follower.follow(found, {q: c for q, c in cursors.items() if q in found})

    def refresh(self, queues: list[QueueRef], *, full: bool, exact: bool) -> None:
        """Publish whatever changed in these queues. With ``exact`` (every snapshot interval),
        and for queues whose estimate cannot be trusted (new, stream gap, ``cleaned``), read an
        exact snapshot first; otherwise use the counts kept current from events."""
        by_conn: dict[str, list[QueueRef]] = {}
        for q in queues:
            if q in self.states:
                by_conn.setdefault(q.connection, []).append(q)
        watched = self.read_watched()
        now = now_ms()
        changed_overview = False
        for name, qs in by_conn.items():
            client = self.registry.client(name)
            to_read = [q for q in qs if exact or self.states[q].live is None or self.states[q].live.needs_snapshot]
            try:
                self.take_snapshots(client, to_read, now)
            except redis.RedisError as exc:
                if name not in self.down:
                    self.down[name] = str(exc) or exc.__class__.__name__
                    self.publish_banner()
                continue
            if name in self.down and exact:
                self.down.pop(name)
                self.publish_banner()
            for q in qs:
                st = self.states[q]
                if st.live is None:
                    continue
                st.snapshot = snap = st.live.snapshot(now)
                st.stalled_now = [j for j in st.stalled_now if j in st.active_since]
                sig = build_signals(snap, st.series, now_ms=now, stalled_now=st.stalled_now)
                st.signals = sig
                changed = self.publish_queue(sig, watched, client, full=full)
                if changed or st.gauge_minute != minute_of(now):
                    # Store gauges when they change, and at least once a minute.
                    st.dirty_minutes.add(minute_of(now))
                    st.gauge_minute = minute_of(now)
                changed_overview |= changed
                st.touched_jobs.clear()
                st.touched_states.clear()
        self.stats["publishes"] += int(changed_overview)
        if full:
            self.publish_state()

    def take_snapshots(self, client, queues: list[QueueRef], now: int) -> None:
        """Exact counts of these queues, and which of their active jobs have lost their lock
        (all of them, not only those active for a while: this also learns about jobs that
        became active before we followed the stream)."""
        if not queues:
            return
        snaps = read_snapshots(client, queues)
        actives = read_active(client, {s.queue: s.counts["active"] for s in snaps})  # whole lists, bounded
        stalled = without_lock(client, actives.ids)
        for snap in snaps:
            st = self.states[snap.queue]
            if st.live is None:
                st.live = LiveCounts(snap)
            else:
                st.live.reset(snap)
            ids = actives.ids.get(snap.queue, [])
            kept = st.active_since if snap.queue in actives.partial else {}  # only the tail was read
            st.active_since = {**kept, **{j: st.active_since.get(j, now) for j in ids}}
            st.stalled_now = stalled.get(snap.queue, [])

    def count_attempt_failures(self, dirty: set[QueueRef], *, settled_only: bool) -> None:
        """Count the failed attempts that will be retried among the candidate events seen
        (one HMGET per candidate, see queues.attempts)."""
        for ev in self.attempts.resolve(self.registry.client, settled_only=settled_only):
            st = self.states.get(ev.queue)
            if st is not None:
                st.series.bucket(ev.ts_ms).attempt_failed += 1
                st.totals["attempt_failed"] = st.totals.get("attempt_failed", 0) + 1
                dirty.add(ev.queue)

    def probe_stalls(self, dirty: set[QueueRef]) -> None:
        """Between snapshots: check the locks of jobs active for more than a second, one
        MGET per 1000 jobs. A lock lives lockDuration from activation and is renewed while the
        worker is alive, so younger jobs cannot have lost theirs yet."""
        cutoff = now_ms() - STALL_PROBE_AFTER_MS
        by_conn: dict[str, dict[QueueRef, list[str]]] = {}
        for q, st in self.states.items():
            old = [j for j, since in st.active_since.items() if since <= cutoff]
            if old:
                by_conn.setdefault(q.connection, {})[q] = old
        for name, jobs in by_conn.items():
            try:
                lockless = without_lock(self.registry.client(name), jobs)
            except redis.RedisError:
                continue  # the next refresh reports the connection
            for q in jobs:
                st = self.states.get(q)
                stalled = lockless.get(q, [])
                if st is not None and stalled != st.stalled_now:
                    st.stalled_now = stalled
                    dirty.add(q)

    def publish_state(self) -> None:
        """The latest figures of every queue as one JSON document in the dashboard Redis, for
        readers that must not touch the monitored Redis themselves (Prometheus /metrics,
        health checks). Written once per tick, whatever the number of readers."""
        queues = []
        for q, st in self.states.items():
            sig = st.signals
            if sig is None:
                continue
            queues.append({
                **sig.snapshot.as_dict(),
                "is_dlq": sig.is_dlq,
                "rates_per_min": {
                    "completed": sig.completed_per_min, "failed": sig.failed_per_min,
                    "dead_letter": sig.dlq_growth_per_min, "stalled": sig.stalled_per_min,
                    "attempt_failed": {w: st.series.per_minute("attempt_failed", now_ms=sig.snapshot.taken_at, window_min=w)
                                       for w in sig.failed_per_min},
                },
                "stalled_now": len(sig.stalled_now),
                "stall_failed_15m": sig.stall_failed_15m,
                "events_total": dict(st.totals),
                "stream_gaps": st.gaps,
            })
        connections = {name: {"ok": name not in self.down, "error": self.down.get(name)} for name in self.registry.names}
        try:
            live.publish_state(self.dash, {"taken_at": now_ms(), "monitor": self.name,
                                           "connections": connections, "queues": queues})
        except redis.RedisError:
            log.warning("%s: could not publish the state document", self.name)

    def publish_queue(self, sig: QueueSignals, watched, client, *, full: bool) -> bool:
        """Publish a queue's fragments if what they show changed, then what is watched of it:
        job lists whose state jobs entered or left, job pages when their job had events (or,
        on full ticks, while it is active: log lines arrive without events)."""
        q = sig.snapshot.queue
        st = self.states[q]
        mine = [(kind, *parts) for kind, *parts in watched if tuple(parts[:3]) == (q.connection, q.prefix, q.name)]
        # Forget what nobody watches any more: a returning watcher must get a fresh render.
        st.fresh_lists &= {w[4] for w in mine if w[0] == "list" and len(w) == 5}
        st.job_states = {k: v for k, v in st.job_states.items() if ("job", q.connection, q.prefix, q.name, k) in mine}
        moves, moves_lost = st.live.take_moves()
        key = display_key(sig)
        changed = key != st.display_key
        since = time.monotonic() - st.rendered_at
        if changed and not full and since < FRAGMENT_MIN_INTERVAL:
            self.held_back.setdefault(q, st.rendered_at + FRAGMENT_MIN_INTERVAL)
            changed = False
        if changed:
            st.display_key = key
            st.rendered_at = time.monotonic()
            sig.spark = {}  # sparklines come from stored history on page load; live rows keep theirs
            self.publisher.publish(live.OVERVIEW, *fragments.overview_row(sig))
            self.publisher.publish(live.queue_group(q), *fragments.queue_live(sig))
        for kind, *parts in mine:
            if len(parts) != 4:
                continue
            try:
                if kind == "list" and parts[3] in BROWSABLE_STATES:
                    self.publish_list(q, parts[3], sig, client, moves=None if moves_lost else moves)
                elif kind == "job":
                    job_id = parts[3]
                    last_state = st.job_states.get(job_id)
                    if job_id in st.touched_jobs or last_state is None or (full and last_state == "active"):
                        job = read_job_live(client, q, job_id, redactor=self.redactor)
                        st.job_states[job_id] = job.state if job else "gone"
                        if job is not None:
                            self.publisher.publish(live.job_group(q, job_id), *fragments.job_live(job))
            except redis.RedisError:
                log.debug("watched item of %s skipped this tick", q, exc_info=True)
        return changed

    def publish_list(self, q: QueueRef, state: str, sig: QueueSignals, client, *, moves) -> None:
        """Page 1 of a watched job list, re-rendered when its ids, stalled markers or count
        change. The ids of a finished list follow from the moves the events describe (a new
        failure goes on top, a retried job leaves); other lists are re-read when jobs entered
        or left them. Rows are read only for jobs not already on the page, so a new failure
        costs one read however long the list."""
        st = self.states[q]
        size = fragments.LIVE_PAGE_SIZE
        count = sig.snapshot.counts.get(state, 0)
        fresh = state in st.fresh_lists
        ids = scores = None
        if fresh and state not in st.touched_states and moves is not None:
            ids = st.list_keys[state][0]
        elif fresh and state in FINISHED and moves is not None:
            ids = _apply_moves(st.list_keys[state][0], moves, state)[:size]
        if ids is not None and len(ids) != min(size, count):
            # Jobs left page 1 and we do not know which move up, or retention trimmed a short
            # list without events: the ids no longer agree with the count, so read them.
            ids = None
        if ids is None:
            ids, scores = page_one_ids(client, q, state, size)
            ids = tuple(ids)
        list_key = (ids, tuple(st.stalled_now), count)
        if fresh and st.list_keys.get(state) == list_key:
            return
        rows = st.list_rows.setdefault(state, {})
        for job_id in st.touched_jobs:
            rows.pop(job_id, None)  # its fields may have changed (e.g. a new delay)
        missing = [i for i in ids if i not in rows]
        if missing:
            by_id = dict(zip(ids, scores)) if scores else {}
            got = read_summaries(client, q, missing, [by_id.get(i) for i in missing] if scores else None)
            rows.update((job.id, job) for job in got)
        st.list_rows[state] = {i: rows[i] for i in ids}
        page = JobPage(state, [rows[i] for i in ids], count, 1, size, has_next=count > size)
        self.publisher.publish(live.list_group(q, state), *fragments.job_table(q, page, st.stalled_now))
        st.fresh_lists.add(state)
        st.list_keys[state] = list_key

    def read_watched(self) -> list[tuple[str, ...]]:
        try:
            return live.watched(self.dash)
        except redis.RedisError:
            return []

    def publish_banner(self) -> None:
        self.publisher.publish(live.ALL, *fragments.banner(dict(self.down)))

    def reconcile(self, queues: list[QueueRef], *, since_ms: int, until_ms: int | None = None) -> None:
        """Rebuild per-minute completed/failed counts from finish-time scores for the minutes
        between ``since_ms`` and ``until_ms`` (at most RECONCILE_MINUTES back), keeping the
        larger of the event count and the score count: neither overcounts, each may undercount.
        One pipeline per connection, however many queues."""
        queues = [q for q in queues if q in self.states]
        end = minute_of(until_ms if until_ms is not None else now_ms())
        start = max(minute_of(since_ms), end - RECONCILE_MINUTES * MINUTE_MS)
        minutes = list(range(start, end + MINUTE_MS, MINUTE_MS))
        by_conn: dict[str, list[QueueRef]] = {}
        for q in queues:
            by_conn.setdefault(q.connection, []).append(q)
        for name, qs in by_conn.items():
            try:
                pipe = self.registry.client(name).pipeline(transaction=False)
                for q in qs:
                    for m in minutes:
                        pipe.zcount(q.key("completed"), m, m + MINUTE_MS - 1)
                        pipe.zcount(q.key("failed"), m, m + MINUTE_MS - 1)
                counts = iter(pipe.execute())
            except redis.RedisError:
                continue
            for q in qs:
                st = self.states[q]
                for m in minutes:
                    st.series.bucket(m).merge_max(Minute(completed=next(counts), failed=next(counts)))
                    st.dirty_minutes.add(m)

    # --- persistence ------------------------------------------------------------------------

    def load_state(self) -> dict[QueueRef, str]:
        close_old_connections()
        return {QueueRef(c.connection, c.prefix, c.queue): c.last_id for c in StreamCursor.objects.all()}

    def restore_series(self, queues: list[QueueRef]) -> None:
        """Recent minute counters of these queues from the database, in one query."""
        if not queues:
            return
        since = ms_to_dt(minute_of(now_ms()) - (RECONCILE_MINUTES + 1) * MINUTE_MS)
        wanted = set(queues)
        rows = QueuePoint.objects.filter(
            resolution=QueuePoint.MINUTE, start__gte=since, queue__in={q.name for q in queues}
        ).values_list("connection", "prefix", "queue", "start", *COUNTERS)
        for conn, prefix, name, start, *counts in rows:
            q = QueueRef(conn, prefix, name)
            if q in wanted:
                self.states[q].series.minutes[int(start.timestamp() * 1000)] = Minute(*counts)

    def flush(self) -> None:
        """Write dirty minutes and the applied stream cursors in one transaction."""
        with_gauges, counters_only = [], []
        for q, st in self.states.items():
            snap = st.snapshot
            for m in sorted(st.dirty_minutes):
                b = st.series.minutes.get(m, Minute())
                row = QueuePoint(connection=q.connection, prefix=q.prefix, queue=q.name, resolution=QueuePoint.MINUTE,
                                 start=ms_to_dt(m), **{c: getattr(b, c) for c in COUNTERS})
                if snap is not None and minute_of(snap.taken_at) == m:
                    c = snap.counts
                    row.waiting, row.active, row.delayed = c["waiting"], c["active"], c["delayed"]
                    row.prioritized, row.failed_depth = c["prioritized"], c["failed"]
                    row.stalled_now, row.oldest_age_ms = len(st.stalled_now), snap.oldest_waiting_age_ms
                    with_gauges.append(row)
                elif any(getattr(b, c) for c in COUNTERS):
                    # A past minute re-counted (late events, reconciliation): keep its gauges.
                    # (All-zero minutes are not written: counters never go down.)
                    counters_only.append(row)
        cursors = [StreamCursor(connection=q.connection, prefix=q.prefix, queue=q.name, last_id=cid)
                   for q, cid in self.applied_cursors.items()]
        try:
            with transaction.atomic():
                for rows, fields_ in ((counters_only, list(COUNTERS)), (with_gauges, list(COUNTERS) + GAUGES)):
                    if rows:
                        QueuePoint.objects.bulk_create(rows, update_conflicts=True, unique_fields=POINT_KEY, update_fields=fields_)
                if cursors:
                    StreamCursor.objects.bulk_create(cursors, update_conflicts=True,
                                                     unique_fields=["connection", "prefix", "queue"], update_fields=["last_id"])
        except Exception:
            log.exception("%s: flushing history failed; will retry", self.name)
            return
        for st in self.states.values():
            st.dirty_minutes.clear()

    def run_health_checks(self) -> None:
        """The production-readiness checks on the monitor's schedule; the stored report feeds
        the health page's summary, the overview and /metrics (and the Redis alert rules)."""
        try:
            self.health_report = health.run_and_store()
        except Exception:
            log.exception("%s: health checks failed; will retry", self.name)

    def evaluate_alerts(self) -> None:
        """Evaluate every alert rule on what the last tick saw (rows and outbox notifications
        are written by ``dashboard.alerts``), and refresh the firing-alerts banner."""
        signals = [st.signals for st in self.states.values() if st.signals is not None]
        reachable = [st for q, st in self.states.items() if q.connection not in self.down]
        alert_monitoring.evaluate(signals=signals, registry=self.registry, down=dict(self.down),
                                  report=self.health_report, now=dt.datetime.now(dt.timezone.utc),
                                  publisher=self.publisher, complete=all(st.signals is not None for st in reachable))

    def write_digest(self) -> None:
        alert_monitoring.write_digest(now=dt.datetime.now(dt.timezone.utc))

    def rollup_and_prune(self) -> None:
        now = dt.datetime.now(dt.timezone.utc)
        hour_start = now.replace(minute=0, second=0, microsecond=0) - dt.timedelta(hours=2)
        try:
            buckets: dict[tuple, dict] = {}
            for row in QueuePoint.objects.filter(resolution=QueuePoint.MINUTE, start__gte=hour_start).order_by("start"):
                key = (row.connection, row.prefix, row.queue, row.start.replace(minute=0))
                b = buckets.setdefault(key, {c: 0 for c in COUNTERS})
                for c in COUNTERS:
                    b[c] += getattr(row, c)
                for g in GAUGES:
                    b[g] = getattr(row, g)  # last value in the hour
            rows = [QueuePoint(connection=k[0], prefix=k[1], queue=k[2], resolution=QueuePoint.HOUR, start=k[3], **v)
                    for k, v in buckets.items()]
            with transaction.atomic():
                QueuePoint.objects.bulk_create(rows, update_conflicts=True, unique_fields=POINT_KEY,
                                               update_fields=list(COUNTERS) + GAUGES)
                QueuePoint.objects.filter(resolution=QueuePoint.MINUTE,
                                          start__lt=now - dt.timedelta(days=settings.QUEUEWATCH_HISTORY_MINUTE_DAYS)).delete()
                QueuePoint.objects.filter(resolution=QueuePoint.HOUR,
                                          start__lt=now - dt.timedelta(days=settings.QUEUEWATCH_HISTORY_HOUR_DAYS)).delete()
        except Exception:
            log.exception("%s: history roll-up failed; will retry", self.name)
