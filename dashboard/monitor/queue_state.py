"""What the leading monitor keeps per queue (``QueueState``, written by ``tracking.CountTracker``
only) and what a refresh hands the publisher (``QueueChanges``)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from dashboard.live.rates import QueueSignals
from queues import duplicates
from queues.live_counts import LiveCounts
from queues.rates import QueueSeries
from queues.snapshot import QueueSnapshot
from queues.timings import QueueTimings
from queues.workers import Worker

RECONCILE_MINUTES = 15
# BullMQ's events counted as they come, each under its name in the state document's
# ``events_total`` (and a ``queuewatch_queue_<key>_total`` counter). ``deduplicated``: an add that
# a deduplication id held (no job added); ``retries-exhausted`` (key ``retries_exhausted``): a
# final failure that used every attempt (the failures without it gave up early).
TOTALLED_EVENTS = {
    name: name.replace("-", "_")
    for name in ("completed", "failed", "stalled", "added", "duplicated", "deduplicated", "retries-exhausted")
}

Move = tuple[str, "str | None", "str | None"]  # (job id, old state, new state), see LiveCounts


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class QueueState:
    series: QueueSeries = field(default_factory=lambda: QueueSeries(keep=RECONCILE_MINUTES + 5))
    snapshot: QueueSnapshot | None = None  # the latest counts: exact, or estimated from events
    live: LiveCounts | None = None  # counts kept current from events between exact snapshots
    exact_at: int = 0  # ms: when the counts were last read exactly (0: never), for ``rolling``
    stalled_now: list[str] = field(default_factory=list)
    active_since: dict[str, int] = field(default_factory=dict)  # active job id -> ms it became active
    touched_states: set[str] = field(default_factory=set)  # states jobs entered or left since the last refresh
    touched_jobs: set[str] = field(default_factory=set)  # job ids with events since the last refresh
    # Events were missed since the last refresh (before following started, a trimmed stream):
    # which jobs they touched is unknown, so watched jobs and lists are read again.
    events_missed: bool = False
    dirty_minutes: set[int] = field(default_factory=set)  # minutes to write at the next flush
    stored_at: int = 0  # ms: when a flush last took this queue's minutes (``persistence.held_back``)
    gauge_minute: int | None = None  # the minute whose gauges were last marked for storing
    signals: QueueSignals | None = None  # the latest, for the published state (metrics, health, alerts)
    # Events counted since this monitor started leading (Prometheus handles the reset when
    # leadership moves), and how often the stream was trimmed before we read it.
    totals: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOTALLED_EVENTS.values(), 0))
    # ``duplicated`` by what caused it (``queues.duplicates``), counted once each is told apart.
    duplicated_by_cause: dict[str, int] = field(default_factory=lambda: dict.fromkeys(duplicates.KINDS, 0))
    gaps: int = 0
    timings: QueueTimings = field(default_factory=QueueTimings)  # wait/processing per job name (queues.job_clock)
    workers: list[Worker] | None = None  # from the last CLIENT LIST (queues.workers); None: unknown

    def missed_events(self) -> None:
        """Events were lost (a trimmed stream, or before following started): the counts are
        read exactly again, and the watched jobs and lists they may have touched too."""
        if self.live is not None:
            self.live.needs_snapshot = True
            self.live.lost_events()
        self.events_missed = True

    def take_changes(self) -> QueueChanges:
        """What moved in the queue since the last call (``QueueChanges``), and start afresh."""
        moves, moves_lost = self.live.take_moves() if self.live is not None else ([], False)
        changes = QueueChanges(
            jobs=frozenset(self.touched_jobs),
            states=frozenset(self.touched_states),
            moves=None if moves_lost or self.events_missed else moves,
            events_missed=self.events_missed,
        )
        self.touched_jobs.clear()
        self.touched_states.clear()
        self.events_missed = False
        return changes


@dataclass(frozen=True)
class QueueChanges:
    """What moved in a queue since its last refresh, for the publisher: which jobs had events,
    which states jobs entered or left, and the finished-set moves in event order (``None``
    when some were lost, e.g. with a trimmed stream: then lists must be re-read).
    ``events_missed``: events were missed, so any job may have changed (watched ones are read)."""

    jobs: frozenset[str]
    states: frozenset[str]
    moves: list[Move] | None
    events_missed: bool = False
