"""Keeping a queue's counts current between snapshots, from the events the monitor reads anyway.

Reading a queue's counts costs about 12 commands. Re-reading every queue that changed would, at
100 jobs/s over 50 queues, cost the monitored Redis more than the dashboards Queuewatch replaces.
So the monitor takes an exact snapshot every few seconds (it carries the id of the newest event
at that moment) and in between moves jobs from count to count as BullMQ's events say they
moved. Events at or before the snapshot's id are already in its counts and only update what we
know about each job.

What events cannot tell, and how it is handled:
* ``waiting`` covers both the ``wait`` list and the ``prioritized`` set. A job taken from
  ``waiting`` while the waiting estimate is zero is taken from ``prioritized``. Where a kind
  counts a paused queue's ready jobs under ``paused`` (BullMQ on PostgreSQL), they enter and
  leave that count while the queue is paused, and move with ``paused``/``resumed``.
* ``removeOnComplete``/``removeOnFail`` trim the finished sets without an event. The keep count
  is read, rarely, from a job's options (``queues.keep_counts``) and the set's count is clamped
  to it. When the options do not tell (a worker's default, trimming by age) and a snapshot shows
  a finished set did not grow although events said it should, its size then is taken as its
  cap, until a snapshot shows it larger.
* ``cleaned`` does not say which jobs left: the queue asks for an early snapshot.
* A job whose previous state is unknown (seen first after the snapshot, no ``prev`` field) is
  counted as new.
* The oldest waiting job is the one ready the longest (``queues.ready_since``): every
  ``waiting`` event says when its job became ready, so once every waiting job was seen entering
  the age is exact. Jobs that entered before the first event followed are only known to be at
  least that old; the snapshot's read (a bound) covers them.
Whatever drifts is corrected at the next exact read: the queue's own read once it has been
quiet for a second (``queues.quiet``), or the periodic snapshot. See docs/live-truth.md.
"""

from __future__ import annotations

from collections import OrderedDict

from .events import Event, _id_tuple
from .keep_counts import KEEP_ALL
from .snapshot import QueueSnapshot, ready_jobs
from .states import FINISHED_STATES

# The state a job is in after each event (``waiting`` also stands for ``prioritized``).
STATE_AFTER = {
    "waiting": "waiting",
    "delayed": "delayed",
    "active": "active",
    "completed": "completed",
    "failed": "failed",
    "waiting-children": "waiting-children",
}
FINISHED = FINISHED_STATES
# ``removed`` names the structure the job was taken from.
PREV_STATE = {"wait": "waiting", "paused": "waiting", "unknown": None}
NEW = "new"  # added, next event says where it went
MAX_MOVES = 1000  # finished-set moves kept between two refreshes of a queue


class JobStates:
    """Last known state per (queue, job id), bounded so memory stays flat however many jobs
    pass through: least recently moved jobs are forgotten first (they are finished, usually)."""

    def __init__(self, capacity: int = 100_000):
        self.capacity = capacity
        self._states: OrderedDict[tuple, str] = OrderedDict()

    def get(self, key: tuple) -> str | None:
        return self._states.get(key)

    def set(self, key: tuple, state: str) -> None:
        self._states[key] = state
        self._states.move_to_end(key)
        if len(self._states) > self.capacity:
            self._states.popitem(last=False)

    def pop(self, key: tuple) -> None:
        self._states.pop(key, None)


class LiveCounts:
    """One queue's counts: the last snapshot plus the moves its later events describe."""

    def __init__(self, snapshot: QueueSnapshot, *, waiting_memory: int = 10_000):
        # Per finished set: the size it is clamped to (None: not trimmed by count, as far as we
        # know), and whether that comes from the jobs' own options (else from a snapshot).
        self.cap: dict[str, int | None] = dict.fromkeys(FINISHED)
        self.cap_from_options = dict.fromkeys(FINISHED, False)
        self.waiting_memory = waiting_memory
        self.moves: list[tuple[str, str | None, str | None]] = []
        self.moves_overflowed = False
        # When each job seen entering waiting (wait or prioritized) became ready, earliest first;
        # kept across snapshots: it is what the events said, which no read can tell again.
        self.ready: OrderedDict[str, int] = OrderedDict()
        self.ready_overflowed = False  # more waiting jobs than waiting_memory: some not kept
        self.first_event_ms: int | None = None  # jobs not seen entering entered before this
        # The first snapshot has nothing before it to learn caps from.
        self._take(snapshot)

    def reset(self, snapshot: QueueSnapshot) -> None:
        """Take an exact snapshot as the new base."""
        previous = self.base
        for s in FINISHED:
            cap = self.cap[s]
            if self.cap_from_options[s]:
                if cap is not None and snapshot.counts[s] > cap:
                    # Some jobs keep more than the one whose options we read: trust reads.
                    self.cap[s], self.cap_from_options[s] = None, False
            elif snapshot.counts[s] > previous.counts[s]:
                self.cap[s] = None
            elif self.finished_since[s] > 0:  # events said it grew; it did not
                self.cap[s] = snapshot.counts[s]
        self._take(snapshot)

    def _take(self, snapshot: QueueSnapshot) -> None:
        self.base = snapshot
        self.counts = dict(snapshot.counts)
        self.paused = snapshot.paused
        self.cutoff = _id_tuple(snapshot.last_event_id) if snapshot.last_event_id else (0, 0)
        self.finished_since: dict[str, int] = dict.fromkeys(FINISHED, 0)
        self.oldest_taken = False  # the job the snapshot's oldest waiting time is of left waiting
        self.needs_snapshot = False

    def set_keep(self, state: str, keep: int | None) -> None:
        """The keep count of a finished set as a job's options give it (``queues.keep_counts``:
        a count, ``KEEP_ALL``, or None when they do not tell)."""
        if keep is None:
            if self.cap_from_options[state]:
                self.cap[state], self.cap_from_options[state] = None, False
            return
        self.cap_from_options[state] = True
        cap = None if keep == KEEP_ALL else keep
        self.cap[state] = cap
        if cap is not None:
            self.counts[state] = min(self.counts[state], cap)

    def read_before(self, stream_id: str) -> bool:
        """Whether the snapshot predates this stream entry (so events up to it are missing)."""
        return self.cutoff < _id_tuple(stream_id)

    def take_moves(self) -> tuple[list[tuple[str, str | None, str | None]], bool]:
        """Jobs that entered or left a finished set since the last call, in event order, as
        (job id, old state, new state); and whether some were dropped (too many to keep)."""
        moves, overflowed = self.moves, self.moves_overflowed
        self.moves, self.moves_overflowed = [], False
        return moves, overflowed

    def _record_move(self, job: str, old: str | None, new: str | None) -> None:
        # Every move, also those already in the snapshot: applied to a list read later they
        # are no-ops (prepending a present id, removing an absent one), and in event order.
        if old in FINISHED or new in FINISHED:
            if len(self.moves) < MAX_MOVES:
                self.moves.append((job, old, new))
            else:
                self.moves_overflowed = True

    def apply(self, ev: Event, known: JobStates) -> set[str]:
        """Apply one event. Returns the states whose membership it changed (for the job
        lists to re-read), also for events the snapshot already counted: a list read before
        the snapshot does not show them yet."""
        job = ev.job_id
        key = (ev.queue, job)
        after_snapshot = _id_tuple(ev.stream_id) > self.cutoff
        if self.first_event_ms is None:
            self.first_event_ms = ev.ts_ms
        self._follow_ready(ev)
        if ev.name == "added":
            known.set(key, NEW)
            return set()
        if ev.name in ("paused", "resumed"):
            if after_snapshot:
                self._pause(ev.name == "paused")
            return set()
        if ev.name == "cleaned":
            self.needs_snapshot = self.needs_snapshot or after_snapshot
            self.lost_events()  # jobs left without an event each
            return set()
        if ev.name == "removed":
            prev = ev.fields.get("prev")
            old = (PREV_STATE.get(prev, prev) if prev else None) or known.get(key)
            known.pop(key)
            self._record_move(job, old, None)
            if after_snapshot:
                self._leave(old, job)
            return self._lists_of(old)
        new = STATE_AFTER.get(ev.name)
        if new is None or not job:
            return set()
        old = ev.fields.get("prev") or known.get(key)
        known.set(key, new)
        if old == new:
            return set()
        self._record_move(job, old, new)
        if after_snapshot:
            self._leave(old, job)
            if new in FINISHED:
                self.finished_since[new] += 1
            self.counts[self._waiting_key() if new == "waiting" else new] += 1
            cap = self.cap.get(new)
            if cap is not None:  # trimmed in the same script, without an event
                self.counts[new] = min(self.counts[new], cap)
        return self._lists_of(old) | self._lists_of(new)

    def _waiting_key(self) -> str:
        """Where unprioritized ready jobs are counted now: ``paused`` on a paused queue of a
        kind that counts them apart (its counts have that key), else ``waiting``."""
        return "paused" if self.paused and "paused" in self.counts else "waiting"

    def _pause(self, paused: bool) -> None:
        before = self._waiting_key()
        self.paused = paused
        after = self._waiting_key()
        if before != after:
            self.counts[after] += self.counts[before]
            self.counts[before] = 0

    def _lists_of(self, state: str | None) -> set[str]:
        if state == "waiting":
            return {"waiting", "prioritized"}  # events do not tell them apart
        return {state} if state in self.counts else set()

    def _leave(self, old: str | None, job: str) -> None:
        if old is None or old == NEW or old not in self.counts:
            return
        if old == "waiting":
            old = self._waiting_key()
            if self.counts[old] == 0 and self.counts["prioritized"] > 0:
                old = "prioritized"
            if job == self.base.oldest_waiting_id:
                self.oldest_taken = True
        self.counts[old] = max(0, self.counts[old] - 1)

    def lost_events(self) -> None:
        """Events were lost (a trimmed stream, ``cleaned``): which jobs wait since when is
        known again only from the next event on."""
        self.ready.clear()
        self.ready_overflowed = False
        self.first_event_ms = None

    def _follow_ready(self, ev: Event) -> None:
        job = ev.job_id
        # Only moves: ``stalled`` follows the ``waiting`` of stall recovery, and ``duplicated``
        # or ``progress`` name a job that stays where it is.
        if not job or (ev.name not in STATE_AFTER and ev.name != "removed"):
            return
        self.ready.pop(job, None)  # a move ends the job's wait, or starts a new one
        if ev.name != "waiting":
            if not self.ready:
                self.ready_overflowed = False  # nothing kept, nothing missing
            return
        if len(self.ready) < self.waiting_memory:
            self.ready[job] = ev.ts_ms  # events come in order: the dict stays earliest first
        else:
            self.ready_overflowed = True  # the earliest are kept: those are the ones that count

    def snapshot(self, now_ms: int) -> QueueSnapshot:
        """The current estimate, shaped like a snapshot taken now."""
        base = self.base
        oldest_ts, bound = self._oldest_waiting()
        return QueueSnapshot(
            queue=base.queue,
            counts=dict(self.counts),
            paused=self.paused,
            schedulers=base.schedulers,
            legacy_paused_jobs=base.legacy_paused_jobs,
            oldest_waiting_id=None,
            oldest_waiting_ts=oldest_ts,
            oldest_waiting_bound=bound,
            last_event_id=base.last_event_id,
            taken_at=now_ms,
        )

    def _oldest_waiting(self) -> tuple[int | None, bool]:
        """When the job ready the longest became ready, and whether that is a bound."""
        waiting = ready_jobs(self.counts) + self.base.legacy_paused_jobs
        if waiting == 0:
            return None, False
        seen = next(iter(self.ready.values()), None)
        if len(self.ready) == waiting and not self.ready_overflowed:
            return seen, False  # every waiting job was seen entering: exact
        if not self.oldest_taken and self.base.oldest_waiting_ts is not None:
            if not self.base.oldest_waiting_bound:
                # The read was exact and that job still waits: whatever entered since is younger.
                return self.base.oldest_waiting_ts, False
            candidates = [self.base.oldest_waiting_ts]
        else:
            candidates = []
        if len(self.ready) < waiting:
            # Some waiting jobs were not seen entering: they entered before the first event
            # followed, so they are at least that old; each seen one is a waiting job too.
            candidates += [t for t in (seen, self.first_event_ms) if t is not None]
        return (min(candidates) if candidates else None), True
