"""Count tracking: what the leading monitor knows of each queue between exact snapshots.

Per queue (``QueueState``): its counts kept current from events (``queues.live_counts``), the
minute counters its rates come from, which active jobs have lost their lock, and what changed
since the last refresh. ``CountTracker`` owns every queue's state and is the only writer of
it: the event intake hands it events, the loop asks it for snapshots, stall probes and the
signals to publish; persistence reads the dirty minutes it marks. It also knows which queues
went quiet and are due their exact read (``queues.quiet``: quiet means exact), and which
events were failed attempts that will be retried (``queues.attempts``); see docs/live-truth.md.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings

from dashboard.connections.registry import Registry
from dashboard.live.channels import queue_id
from dashboard.live.rates import QueueSignals, build_signals
from dashboard.monitor.queue_state import (
    RECONCILE_MINUTES,
    TOTALLED_EVENTS,
    QueueChanges,
    QueueState,
    now_ms,
)
from queues.attempts import AttemptFailures
from queues.duplicates import DuplicateKinds
from queues.errors import QueuewatchError, SourceUnavailable
from queues.events import Event
from queues.job_clock import JobClock, Sample
from queues.keep_counts import KeepCounts
from queues.keys import QueueRef
from queues.live_counts import STATE_AFTER, JobStates, LiveCounts
from queues.quiet import QuietReads
from queues.rates import MINUTE_MS, Minute, count_event, minute_of
from queues.snapshot import QueueSnapshot
from queues.sources import UnsupportedBySource
from queues.sources.facets import ProbesFacet
from queues.stalls import ActiveLists

log = logging.getLogger("queuewatch.monitor")

STALL_PROBE_AFTER_MS = 1000  # a job's lock lives lockDuration from activation: no need to look sooner


class CountTracker:
    def __init__(self, registry: Registry):
        self.registry = registry
        self.states: dict[QueueRef, QueueState] = {}
        self.known_jobs = JobStates()
        # Stream id of the last event applied to the counters, per queue. Flushed in the same
        # transaction as the counters, so a takeover resumes exactly after what was stored.
        self.applied_cursors: dict[QueueRef, str] = {}
        self.quiet = QuietReads()  # queues due an exact read once their events stop (quiet means exact)
        self.attempts = AttemptFailures()  # failed attempts that will be retried
        self.clock = JobClock()  # job names and start times, for wait and processing times
        self.keeps = KeepCounts()  # how many jobs each finished set keeps, from a job's options
        self.duplicates = DuplicateKinds()  # what each `duplicated` event was
        # QUEUEWATCH_TIMINGS off: no job clock at all (what bench/redis_load.py compares against).
        self.timings_on = settings.QUEUEWATCH_TIMINGS

    def reset(self) -> None:
        """Forget everything: a new term of leadership starts from the stored cursors."""
        self.states = {}
        self.known_jobs = JobStates()
        self.applied_cursors = {}
        self.quiet = QuietReads()
        self.attempts = AttemptFailures()
        self.clock = JobClock()
        self.keeps = KeepCounts()
        self.duplicates = DuplicateKinds()

    # --- which queues -----------------------------------------------------------------------

    def add_queues(self, found: list[QueueRef]) -> list[QueueRef]:
        """Start tracking the queues not tracked yet; returns them."""
        new = [q for q in found if q not in self.states]
        for q in new:
            self.states[q] = QueueState()
        return new

    def drop_missing(self, connection: str, found: list[QueueRef]) -> list[QueueRef]:
        """Stop tracking this connection's queues that discovery no longer finds; returns them."""
        found_set = set(found)
        gone = [q for q in self.states if q.connection == connection and q not in found_set]
        for q in gone:
            del self.states[q]
            self.applied_cursors.pop(q, None)
            self.keeps.forget(q)
            self.duplicates.forget(q)
        return gone

    # --- events -----------------------------------------------------------------------------

    def apply_events(self, events: list[Event]) -> set[QueueRef]:
        """Count events into their queues' minutes, totals and live counts; returns the queues
        they touched."""
        touched: set[QueueRef] = set()
        for ev in events:
            st = self.states.get(ev.queue)
            if st is None:
                continue
            self.applied_cursors[ev.queue] = ev.stream_id
            if ev.name in TOTALLED_EVENTS:
                st.totals[TOTALLED_EVENTS[ev.name]] += 1
            if ev.name == "duplicated":
                kind = self.duplicates.consider(ev.queue, ev.job_id)
                if kind is not None:
                    st.duplicated_by_cause[kind] += 1
            if count_event(st.series, ev.name, ev.ts_ms, ev.fields):
                st.dirty_minutes.add(minute_of(ev.ts_ms))
            # Before the job's known state moves: whether it may be retrying depends on it.
            self.attempts.consider(ev, self.known_jobs.get((ev.queue, ev.job_id)))
            if self.timings_on:
                self.record_timings(self.clock.observe(ev))
            if st.live is not None:
                st.touched_states |= st.live.apply(ev, self.known_jobs)
            if ev.job_id:
                st.touched_jobs.add(ev.job_id)
                if ev.name in ("added", "active"):  # its hash exists: its options can be read
                    self.keeps.consider(ev.queue, ev.job_id, time.monotonic())
                if ev.name == "active":
                    st.active_since[ev.job_id] = ev.ts_ms
                elif ev.name in STATE_AFTER or ev.name == "removed":
                    st.active_since.pop(ev.job_id, None)
            touched.add(ev.queue)
            self.quiet.heard(ev.queue, time.monotonic())
        return touched | self.count_attempt_failures(settled_only=True)

    def stream_gap(self, q: QueueRef, *, lost_from: int, lost_to: int) -> None:
        """The queue's events stream was trimmed past our cursor: rebuild the lost minutes
        from finish-time scores and take a snapshot, since the moves were lost too."""
        if q in self.states:
            self.states[q].gaps += 1
        self.reconcile([q], since_ms=lost_from, until_ms=lost_to)
        if q in self.states:
            self.states[q].missed_events()

    def following_from(self, starts: dict[QueueRef, str]) -> None:
        """Following these queues starts at these stream ids."""
        for q, start_id in starts.items():
            self.applied_cursors.setdefault(q, start_id)
            live_counts = self.states[q].live if q in self.states else None
            if live_counts is not None and live_counts.read_before(start_id):
                self.states[q].missed_events()  # between that snapshot and where following starts

    # --- reads of the monitored connections ---------------------------------------------------

    def probes_for(self, connection: str) -> ProbesFacet | None:
        """The connection's probes, or ``None`` where its kind offers none (nothing probed)."""
        return self.registry.source(connection).probes

    def needs_snapshot(self, q: QueueRef) -> bool:
        """Whether the estimate of this queue cannot be trusted (new, stream gap, ``cleaned``)."""
        live_counts = self.states[q].live
        return live_counts is None or live_counts.needs_snapshot

    def take_snapshots(self, source, queues: list[QueueRef], now: int) -> None:
        """Exact counts of these queues (through their source), and which of their active jobs
        have lost their lock (all of them, not only those active for a while: this also learns
        about jobs that became active before we followed the stream). Stalls come from the
        source's probes, where its kind offers them."""
        if not queues:
            return
        snaps = source.snapshots(queues)
        probes = source.probes
        if probes is None:  # a kind without probes: no active jobs known, so no stalls shown
            actives, stalled = ActiveLists(), {}
        else:
            actives = probes.active({s.queue: s.counts["active"] for s in snaps})
            stalled = probes.without_lock(actives.ids)
        for snap in snaps:
            st = self.states[snap.queue]
            if st.live is None:
                st.live = LiveCounts(snap)
            else:
                st.live.reset(snap)
            st.exact_at = now
            ids = actives.ids.get(snap.queue, [])
            kept = st.active_since if snap.queue in actives.partial else {}  # only the tail was read
            st.active_since = {**kept, **{j: st.active_since.get(j, now) for j in ids}}
            st.stalled_now = stalled.get(snap.queue, [])

    def quiet_due(self, at: float) -> list[QueueRef]:
        """Queues that have had no event for a second (monotonic ``at``), marked for an exact
        read at their next refresh; each is returned once per quiet transition."""
        due = [q for q in self.quiet.due(at) if q in self.states and self.states[q].live is not None]
        for q in due:
            self.states[q].live.needs_snapshot = True
        return due

    def read_at_once(self, q: QueueRef, *, parents_elsewhere: bool = False) -> None:
        """Queuewatch itself changed this queue: due its exact read now (with the quiet ones).
        ``parents_elsewhere``: it removed jobs as drain, clean and obliterate do, which moves a
        flow parent elsewhere to wait without an event; which ones is unknown, so every queue of
        the connection with parents in waiting-children is read too (docs/live-truth.md)."""
        if q in self.states:
            self.quiet.asked(q)
        if not parents_elsewhere:
            return
        for other, st in self.states.items():
            if other.connection == q.connection and other != q and st.snapshot is not None:
                if st.snapshot.counts.get("waiting-children"):
                    self.quiet.asked(other)

    def count_attempt_failures(self, *, settled_only: bool) -> set[QueueRef]:
        """Count the failed attempts that will be retried among the candidate events seen
        (one HMGET per candidate, see queues.attempts); returns the queues they were in."""
        counted: set[QueueRef] = set()
        for ev in self.attempts.resolve(self.probes_for, settled_only=settled_only):
            st = self.states.get(ev.queue)
            if st is not None:
                st.series.bucket(ev.ts_ms).attempt_failed += 1
                st.dirty_minutes.add(minute_of(ev.ts_ms))  # stored with the minute's other counters
                st.totals["attempt_failed"] = st.totals.get("attempt_failed", 0) + 1
                counted.add(ev.queue)
            if self.timings_on:
                self.record_timings(self.clock.attempt_failed(ev))
        return counted

    def learn_keep_counts(self) -> set[QueueRef]:
        """Read the options of one job per queue that is due (rarely: ``queues.keep_counts``)
        and clamp its finished sets to their keep counts; returns the queues whose counts
        that changed."""
        changed: set[QueueRef] = set()
        for q, keeps in self.keeps.resolve(self.probes_for, time.monotonic()).items():
            live_counts = self.states[q].live if q in self.states else None
            if live_counts is None:
                continue
            before = dict(live_counts.counts)
            for state, keep in keeps.items():
                live_counts.set_keep(state, keep)
            if live_counts.counts != before:
                changed.add(q)
        return changed

    def classify_duplicates(self) -> set[QueueRef]:
        """Tell the pending ``duplicated`` events apart (one batched ``HGET`` per job id not
        known yet, ``queues.duplicates``); returns the queues whose totals that changed."""
        changed: set[QueueRef] = set()
        for q, kind, events in self.duplicates.resolve(self.probes_for):
            st = self.states.get(q)
            if st is not None:
                st.duplicated_by_cause[kind] += events
                changed.add(q)
        return changed

    def warm(self, events: list[Event], *, fresh: frozenset[QueueRef] | set[QueueRef] = frozenset()) -> None:
        """Events from before where counting starts: the job clock learns from them, nothing is
        counted (a takeover resumes after what its predecessor stored), except the timings of
        ``fresh`` queues, followed for the first time: nobody counted them, and without them
        the first jobs of a burst into a queue discovery met late had no wait (docs/timings.md).
        Minute counters of such a queue are rebuilt from finish times (``reconcile``)."""
        for ev in events if self.timings_on else ():
            if ev.queue in fresh:
                self.record_timings(self.clock.observe(ev))
            else:
                self.clock.warm(ev)

    def name_jobs(self) -> None:
        """Read the names of jobs the clock met without their ``added`` (batched), and count
        the samples that waited for them."""
        if self.timings_on:
            self.record_timings(self.clock.resolve_names(self.probes_for))

    def record_timings(self, samples: list[Sample]) -> None:
        for s in samples:
            st = self.states.get(s.queue)
            if st is not None:
                st.timings.count(name=s.name, ts_ms=s.ts_ms, kind=s.kind, ms=s.ms)

    def probe_stalls(self) -> set[QueueRef]:
        """Between snapshots: check the locks of jobs active for more than a second, one
        MGET per 1000 jobs. A lock lives lockDuration from activation and is renewed while the
        worker is alive, so younger jobs cannot have lost theirs yet. Returns the queues
        whose stalled jobs changed."""
        cutoff = now_ms() - STALL_PROBE_AFTER_MS
        by_conn: dict[str, dict[QueueRef, list[str]]] = {}
        for q, st in self.states.items():
            old = [j for j, since in st.active_since.items() if since <= cutoff]
            if old:
                by_conn.setdefault(q.connection, {})[q] = old
        changed: set[QueueRef] = set()
        for name, jobs in by_conn.items():
            probes = self.probes_for(name)
            if probes is None:
                continue
            try:
                lockless = probes.without_lock(jobs)
            except SourceUnavailable:
                continue  # the next refresh reports the connection
            for q in jobs:
                st = self.states.get(q)
                stalled = lockless.get(q, [])
                if st is not None and stalled != st.stalled_now:
                    st.stalled_now = stalled
                    changed.add(q)
        return changed

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
            probes = self.probes_for(name)
            if probes is None:
                continue
            try:
                counts = probes.finished_counts(qs, minutes=minutes, width_ms=MINUTE_MS)
            except SourceUnavailable:
                continue
            for q in qs:
                st = self.states[q]
                for m, (completed, failed) in zip(minutes, counts[q]):
                    st.series.bucket(m).merge_max(Minute(completed=completed, failed=failed))
                    st.dirty_minutes.add(m)

    def read_workers(self, down: dict[str, str]) -> dict:
        """Every queue's workers: one ``CLIENT LIST`` per reachable connection (queues.workers).
        Returns the workers document (``channels.publish_workers``). A connection that is down
        or refuses the command leaves its queues' workers unknown, never "none"."""
        by_conn: dict[str, list[QueueRef]] = {}
        for q in self.states:
            by_conn.setdefault(q.connection, []).append(q)
        doc: dict = {"taken_at": now_ms(), "queues": {}, "unknown": {}}
        for name, queues in by_conn.items():
            found = None
            if name in down:
                doc["unknown"][name] = down[name]
            else:
                source = self.registry.source(name)
                try:
                    with source.errors():
                        found = source.workers(queues)
                except UnsupportedBySource as exc:  # a kind that cannot tell: known as unknown, not a fault
                    doc["unknown"][name] = str(exc)
                except QueuewatchError as exc:  # unavailable or refused
                    log.warning("could not read the workers of %s (%s); workers unknown", name, exc)
                    doc["unknown"][name] = str(exc) or exc.__class__.__name__
            for q in queues:
                self.states[q].workers = None if found is None else found[q]
                if found is not None:
                    doc["queues"][queue_id(q)] = [w.as_dict() for w in found[q]]
        return doc

    # --- what to publish ----------------------------------------------------------------------

    def current_signals(self, q: QueueRef, now: int) -> QueueSignals | None:
        """The queue's figures as of ``now`` (``None`` before its first snapshot)."""
        st = self.states[q]
        if st.live is None:
            return None
        st.snapshot = snap = st.live.snapshot(now)
        st.stalled_now = [j for j in st.stalled_now if j in st.active_since]
        st.signals = build_signals(
            snap,
            st.series,
            now_ms=now,
            stalled_now=st.stalled_now,
            timings=st.timings,
            workers=None if st.workers is None else len(st.workers),
        )
        return st.signals

    def current_snapshots(self) -> dict[QueueRef, QueueSnapshot]:
        """Every queue's figures as last published (exact, or kept current from events), for
        the health checks; queues not read yet are left out (the checks read those)."""
        return {q: st.snapshot for q, st in self.states.items() if st.snapshot is not None}

    def take_changes(self, q: QueueRef) -> QueueChanges:
        """What moved in the queue since the last call, and start collecting afresh."""
        return self.states[q].take_changes()

    def mark_gauges(self, q: QueueRef, now: int, *, changed: bool) -> None:
        """Store the queue's gauges when what it shows changed, and at least once a minute."""
        st = self.states[q]
        if changed or st.gauge_minute != minute_of(now):
            st.dirty_minutes.add(minute_of(now))
            st.gauge_minute = minute_of(now)
