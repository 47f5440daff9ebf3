"""The rolling pass: how a monitor of thousands of queues spreads its exact reads.

Up to ``FULL_PASS_QUEUES`` queues, every tick refreshes every queue and every snapshot reads
every queue exactly, as always. Beyond that, doing so cost more than the tick (10,000 queues: a
full tick took 8.7 s of one core against a 1 s tick), so each tick reads exactly only the
queues whose last exact read is due: a snapshot period (``QUEUEWATCH_RECONCILE_MS``) less one
tick ago, oldest first, at most a share per tick sized so that reading every queue takes one
period. Every queue is still read exactly at least once per snapshot period, as the periodic
snapshot did, only not all at the same moment. An exact read for another reason counts too: a
queue read when it went quiet (1 s after its last event) is not read again until a period after
that, so on a busy fleet (1,000 of 10,000 queues changing a second) the pass reads a third of
what a fixed round-robin order did. Queues events changed are refreshed between ticks anyway
(``publish_changes``), and the tick also refreshes the queues someone watches and those never
read yet; so what a tick costs follows what changed, plus at most a share.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from operator import itemgetter

from queues.keys import QueueRef

FULL_PASS_QUEUES = 1000  # up to this many queues, every tick is a full pass
# Queues never read yet (a new term, a new queue) are read at once, but at most this many a tick:
# their first read also renders their overview rows (2-5 ms each, ten times that on a loaded
# machine), and a new term at 10,000 queues that read and rendered them all in one step took
# over a minute there, which lets the leader lock lapse (``loop.HUNG_AFTER``).
UNREAD_PER_TICK = 500


def share_per_tick(queues: int, *, tick: float, snapshot_every: float) -> int:
    """At most how many queues one tick reads exactly, so that a pass takes ``snapshot_every``."""
    return max(1, math.ceil(queues * tick / max(tick, snapshot_every)))


class RollingPass:
    """Which queues a tick reads exactly, from when each was last read exactly."""

    def __init__(self) -> None:
        self.taken = 0  # queues taken since the term began, for tests and probes

    def reset(self) -> None:
        self.taken = 0

    def take(self, exact_at: Mapping[QueueRef, int], count: int, *, now_ms: int, due_after_ms: int) -> list[QueueRef]:
        """At most ``count`` of the queues whose last exact read (``exact_at``, ms; 0: never) is
        ``due_after_ms`` old or older, the oldest first (in ``exact_at``'s order among equals)."""
        threshold = now_ms - due_after_ms
        due = [(at, q) for q, at in exact_at.items() if at <= threshold]
        if len(due) > count:
            due = heapq.nsmallest(count, due, key=itemgetter(0))  # stable: sorted(...)[:count]
        self.taken += len(due)
        return [q for _, q in due]
