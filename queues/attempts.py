"""Failed attempts that will be retried, told apart from look-alikes by the job's attempts-made
counter.

BullMQ emits ``failed`` only for a job's last failure. An attempt that fails and will be
retried shows as ``delayed`` (backoff, ``moveToDelayed``: no ``prev``) or ``waiting
prev=active`` (immediate retry, ``retryJob``). Both events are also emitted by look-alikes that
do not use an attempt: ``moveToDelayed`` with skipAttempt (a job delaying itself), rate-limit
push-back (``moveJobFromActiveToWait``) and stall recovery (``moveStalledJobsToWait``, followed
at once by a ``stalled`` event). Only a failed attempt increments ``atm`` (attemptsMade).

So for those events only (rare in a healthy system, never for adds, activations or
completions), the job's ``atm``/``ats``/``stc``/``finishedOn`` are read, once, in one pipelined ``HMGET`` per
batch of events:

* if we know how many of the job's attempts failed so far (it was added while we followed:
  none; or we counted them), the event is an attempt failure iff ``atm`` is beyond that
  count (minus one if the job has finished since, as its event or ``finishedOn`` says:
  ``moveToFinished`` increments ``atm`` too). Counting
  one per event, not "atm grew since the last read", keeps the total right when a read lags
  behind several retries of the same job;
* otherwise (a job from before we followed) iff ``atm >= 1`` and ``atm + stc >= ats``: every
  started attempt (``ats``) has ended by failing (``atm``) or stalling (``stc``) — a skipped
  attempt or a push-back leaves ``ats`` ahead. (A job that was pushed back or delayed itself
  *before* we knew it, and fails now, is missed: ``ats`` stays ahead: undercounted.)
* a ``waiting prev=active`` followed by ``stalled`` for the same job is a stall recovery. The
  ``stalled`` entry is written by the same script right after, so a candidate is decided only
  once a later event of its queue arrived, or at the next ``resolve(settled_only=False)``.

Cost: one ``HMGET`` per retried attempt, rate-limit push-back or self-delay; nothing per add,
activation or completion.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

from .errors import SourceUnavailable
from .events import Event, _id_tuple
from .keys import QueueRef
from .text import to_int

if TYPE_CHECKING:
    from .sources.facets import ProbesFacet

# What deciding a candidate reads of its job: attempts made (and the pre-v5 name), attempts
# allowed, the stall counter, and whether it has finished.
ATTEMPT_FIELDS = ("atm", "attemptsMade", "ats", "stc", "finishedOn")
MEMORY = 100_000  # jobs whose attemptsMade we remember (least recently read forgotten first)


def is_candidate(ev: Event, old_state: str | None) -> bool:
    """Whether this event may be a failed attempt being retried. ``old_state`` is the job's
    state as known before the event (None if unknown; "new" right after ``added``)."""
    if not ev.job_id:
        return False
    if ev.name == "waiting":
        return ev.fields.get("prev") == "active"
    if ev.name == "delayed":
        # changeDelay of a delayed job, a new delayed job and a parent released into delayed
        # also emit `delayed` without prev: only an active (or unknown) job can be retrying.
        return "prev" not in ev.fields and old_state in ("active", None)
    return False


class AttemptFailures:
    def __init__(self, *, memory: int = MEMORY):
        self.memory = memory
        # Per job: attempt failures so far (what atm is, minus completions) when we know it.
        self._failed: OrderedDict[tuple[QueueRef, str], int] = OrderedDict()
        self._finished: set[tuple[QueueRef, str]] = set()  # pending jobs that finished since
        self._pending: dict[tuple[QueueRef, str, str], Event] = {}  # by (queue, job, stream id)
        self._newest: dict[QueueRef, tuple[int, int]] = {}  # newest event considered per queue

    @property
    def undecided(self) -> int:
        """Candidates seen but not decided yet."""
        return len(self._pending)

    def consider(self, ev: Event, old_state: str | None) -> None:
        """Look at one event, before the job's known state is updated from it."""
        key = (ev.queue, ev.job_id)
        self._newest[ev.queue] = _id_tuple(ev.stream_id)
        if ev.name == "stalled":
            # The `waiting prev=active` just before it was a stall recovery.
            for k in [k for k, e in self._pending.items() if k[:2] == key and e.name == "waiting"][-1:]:
                del self._pending[k]
        elif ev.name == "added":
            self._remember(key, 0)  # a new job has made no attempt: no read needed to know it
        elif ev.name in ("completed", "failed") and any(k[:2] == key for k in self._pending):
            self._finished.add(key)
        elif ev.name == "waiting" and ev.fields.get("prev") in ("failed", "completed"):
            self._failed.pop(key, None)  # a manual retry may reset atm: start from the fallback
        if is_candidate(ev, old_state):
            self._pending[(*key, ev.stream_id)] = ev

    def resolve(self, probes_for: Callable[[str], ProbesFacet | None], *, settled_only: bool = True) -> list[Event]:
        """Decide the pending candidates (all of them, or only those a later event of their
        queue has followed); returns the events that were attempt failures."""
        ready = [
            (k, ev)
            for k, ev in self._pending.items()
            if not settled_only or self._newest.get(ev.queue, (0, 0)) > _id_tuple(ev.stream_id)
        ]
        if not ready:
            return []
        by_conn: dict[str, list[tuple[tuple[QueueRef, str], Event]]] = {}
        for k, ev in ready:
            by_conn.setdefault(ev.queue.connection, []).append((k[:2], ev))
            del self._pending[k]
        failures = []
        for name, items in by_conn.items():
            probes = probes_for(name)
            if probes is None:
                continue  # a kind without probes: its attempts go uncounted
            try:
                replies = probes.job_fields([key for key, _ in items], ATTEMPT_FIELDS)
            except SourceUnavailable:
                continue  # the connection is down: these attempts go uncounted
            for (key, ev), (atm_reply, legacy_atm, ats, stc, finished_on) in zip(items, replies):
                attempts_made = to_int(atm_reply) or to_int(legacy_atm) or 0
                # moveToFinished increments atm and sets finishedOn in one script (a retry from
                # the finished sets deletes finishedOn): the finish counted as a made attempt
                # too, whether or not its event has reached us yet.
                if key in self._finished or finished_on is not None:
                    attempts_made = max(0, attempts_made - 1)
                if self._attempt_failed(key, atm=attempts_made, ats=to_int(ats) or 0, stc=to_int(stc) or 0):
                    failures.append(ev)
            self._finished.difference_update(key for key, _ in items)
        return failures

    def _attempt_failed(self, key, *, atm: int, ats: int, stc: int) -> bool:
        before = self._failed.get(key)
        if before is not None:
            failed = atm > before
            self._remember(key, before + 1 if failed else before)
            return failed
        failed = atm >= 1 and atm + stc >= ats
        self._remember(key, atm)
        return failed

    def _remember(self, key, failed_so_far: int) -> None:
        self._failed[key] = failed_so_far
        self._failed.move_to_end(key)
        if len(self._failed) > self.memory:
            self._failed.popitem(last=False)
