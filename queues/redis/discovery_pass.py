"""Incremental queue discovery: one resumable SCAN pass, advanced a little at a time.

A full SCAN of a large production Redis every few seconds costs a whole Redis core (10,000,000
keys: several seconds of Redis CPU per pass). So the monitor walks the keyspace *slowly*: each
``step`` issues at most ``calls_per_step`` ``SCAN <cursor> MATCH <prefix>:*:[me][ev][te][an]*
COUNT <scan_count>`` (a queue's ``meta`` or ``events``: ``queues.redis.discovery``) and keeps
the cursor for the next step. The cost on Redis is then set by the budget, not by the
keyspace: ``keys_per_step`` keys examined per step, one step per second
(``QUEUEWATCH_DISCOVERY_KEYS_PER_S``); a pass over N keys takes N / keys_per_s seconds, and
never less than ``min_pass_s`` (a small Redis is re-walked every ``min_pass_s``, as before).

What the list holds while a pass runs:

* every queue known when the pass began keeps being listed (and followed): a pass only
  *removes* queues at its end, those it did not meet at all;
* a queue met for the first time is added at once, mid-pass;
* a queue created mid-pass is met by this pass if its key lands ahead of the cursor, and in any
  case by the next one (SCAN returns every key present for a whole pass): found within one
  complete pass after its creation;
* a page naming a queue that is not listed yet does not wait for any of this: the registry
  confirms it with one ``EXISTS`` of its ``meta`` and ``events`` (``dashboard.connections.registry``),
  and the page's live socket nudges the monitor, whose next step lists it (``adopt``) and
  follows its events, within a second rather than once the walk reaches it.

A name is confirmed once, when first met (``discovery.not_queues``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import redis

from ..keys import QueueRef
from . import replies
from .discovery import QUEUE_KEYS_GLOB, glob_escape, not_queues, queue_name_of

CATCH_UP_STEPS = 5  # a late step walks at most this many steps' keys at once


class DiscoveryPass:
    """The resumable discovery of one connection's queues (every prefix, in order)."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        connection: str,
        prefixes: Iterable[str],
        keys_per_step: int,
        min_pass_s: float = 10.0,
        scan_count: int = 1000,
        known: Iterable[QueueRef] = (),
        clock: Callable[[], float] = time.monotonic,
        step_s: float = 1.0,
    ):
        self.client = client
        self.connection = connection
        self.prefixes = list(prefixes)
        self.scan_count = scan_count
        # SCAN's COUNT is the number of keys Redis examines per call (about; it walks buckets).
        self.calls_per_step = max(1, keys_per_step // scan_count)
        self.min_pass_s = min_pass_s
        self.step_s = step_s
        self.clock = clock
        self._last_step_at: float | None = None
        self.known: set[QueueRef] = {q for q in known if q.connection == connection}
        self._listed: list[QueueRef] | None = None  # ``queues``, until ``known`` changes
        self.passes = 0  # completed passes
        self.last_pass_s: float | None = None  # how long the last complete pass took
        self._start_pass()
        self._next_pass_at = self.clock()

    def _start_pass(self) -> None:
        self._prefix_i = 0
        self._cursor = 0
        self._seen: set[QueueRef] = set()
        self._started_at = self.clock()

    @property
    def queues(self) -> list[QueueRef]:
        """The current list: prefixes in the spec's order, names sorted within each. Sorted once
        per change of ``known``, not on every step: 10,000 queues took ~10 ms a sort, every
        second, in the monitor's loop."""
        if self._listed is None:
            order = {p: i for i, p in enumerate(self.prefixes)}
            self._listed = sorted(self.known, key=lambda q: (order.get(q.prefix, len(order)), q.name))
        return list(self._listed)

    @property
    def resting(self) -> bool:
        """Between passes: the last one finished sooner than ``min_pass_s`` after it began."""
        return self._prefix_i >= len(self.prefixes)

    def step(self) -> bool:
        """Advance by at most ``calls_per_step`` SCAN calls; True when the list changed.
        Raises Redis errors (the pass resumes from the same cursor on the next step)."""
        if not self.prefixes:
            return False
        if self.resting:
            if self.clock() < self._next_pass_at:
                return False
            self._start_pass()
        before = set(self.known)
        for _ in range(self._calls_due()):
            prefix = self.prefixes[self._prefix_i]
            cursor, keys = self._scan(prefix)
            self._take(prefix, keys)
            self._cursor = cursor
            if cursor == 0:
                self._prefix_i += 1
                if self.resting:
                    self._finish_pass()
                    break
        return self.known != before

    def _calls_due(self) -> int:
        """This step's SCAN calls: ``calls_per_step`` for each ``step_s`` since the last step
        (at least one step's, at most ``CATCH_UP_STEPS``'). The budget is per second: a monitor
        whose steps come late (its ticks take seconds at 10,000 queues) still walks at the
        stated rate, instead of one step's keys per late step (a first pass over 2,000,000 keys
        then outlasted 15 minutes)."""
        now = self.clock()
        behind = 1 if self._last_step_at is None else int((now - self._last_step_at) / self.step_s)
        self._last_step_at = now
        return self.calls_per_step * max(1, min(CATCH_UP_STEPS, behind))

    def _scan(self, prefix: str) -> tuple[int, list[bytes]]:
        pattern = glob_escape(prefix) + QUEUE_KEYS_GLOB
        cursor, keys = self.client.scan(self._cursor, match=pattern, count=self.scan_count)
        return cursor, replies.members(keys)

    def _take(self, prefix: str, keys: list[bytes]) -> None:
        head = f"{prefix}:".encode()
        found = {QueueRef(self.connection, prefix, name) for key in keys if (name := queue_name_of(key, head))}
        # Checked once, when first met: a key of the wrong type, or ``bull:a:b:meta`` that is job
        # ``b:meta`` of queue ``a`` (queues/redis/discovery.py).
        rejected = not_queues(self.client, prefix, sorted(q.name for q in found if q not in self.known))
        found = {q for q in found if q.name not in rejected}
        self._seen.update(found)
        if not found <= self.known:
            self.known.update(found)
            self._listed = None

    def adopt(self, queues: Iterable[QueueRef]) -> bool:
        """List at once the queues someone opened before the walk met them (a page names a new
        queue; the walk may take minutes to reach it), those that are queues: confirmed as a met
        name is (``not_queues``), under a prefix this walk covers. They count as met by the
        current pass (they exist now), so its end does not drop them. Whether the list changed."""
        before, unknown = len(self.known), set(queues) - self.known
        for prefix in self.prefixes:
            names = sorted(q.name for q in unknown if (q.connection, q.prefix) == (self.connection, prefix))
            met = set(names) - not_queues(self.client, prefix, names)
            confirmed = {QueueRef(self.connection, prefix, n) for n in met}
            self._seen |= confirmed
            self.known |= confirmed
        if len(self.known) != before:
            self._listed = None
        return len(self.known) != before

    def _finish_pass(self) -> None:
        self.known = set(self._seen)  # what this whole pass did not meet is gone
        self._listed = None
        self.passes += 1
        now = self.clock()
        self.last_pass_s = now - self._started_at
        self._next_pass_at = self._started_at + self.min_pass_s
