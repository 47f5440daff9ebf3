"""The rolling pass: how a monitor of thousands of queues spreads its full refreshes.

Up to ``FULL_PASS_QUEUES`` queues, every tick refreshes every queue and every snapshot reads
every queue exactly, as always. Beyond that, doing so cost more than the tick (10,000 queues: a
full tick took 8.7 s of one core against a 1 s tick), so each tick takes the next share of the
queues in a fixed round-robin order, reads them exactly and refreshes them in full, sized so
that the whole pass takes one snapshot period (``QUEUEWATCH_RECONCILE_MS``): every queue is
still read exactly once per snapshot period, as the periodic snapshot did, only not all at the
same moment. Queues events changed are refreshed between ticks anyway (``publish_changes``),
and the tick also refreshes the queues someone watches and those never read yet; so what a
tick costs follows what changed, plus a constant share.
"""

from __future__ import annotations

import math
from collections.abc import Collection

from queues.keys import QueueRef

FULL_PASS_QUEUES = 1000  # up to this many queues, every tick is a full pass
# Queues never read yet (a new term, a new queue) are read at once, but at most this many a tick:
# their first read also renders their overview rows (2-5 ms each, ten times that on a loaded
# machine), and a new term at 10,000 queues that read and rendered them all in one step took
# over a minute there, which lets the leader lock lapse (``loop.HUNG_AFTER``).
UNREAD_PER_TICK = 500


def share_per_tick(queues: int, *, tick: float, snapshot_every: float) -> int:
    """How many queues one tick reads exactly so that a pass takes ``snapshot_every`` seconds."""
    return max(1, math.ceil(queues * tick / max(tick, snapshot_every)))


class RollingPass:
    """The round-robin order of the queues and where the pass stands in it. Queues followed
    since the pass began join at its next round; queues no longer followed are skipped."""

    def __init__(self) -> None:
        self.order: list[QueueRef] = []
        self.position = 0
        self.rounds = 0  # completed passes, for tests and probes

    def reset(self) -> None:
        self.order, self.position, self.rounds = [], 0, 0

    def take(self, queues: Collection[QueueRef], count: int) -> list[QueueRef]:
        """The next ``count`` queues of ``queues`` in the pass (fewer only when there are fewer)."""
        taken: list[QueueRef] = []
        seen: set[QueueRef] = set()
        while len(taken) < min(count, len(queues)):
            if self.position >= len(self.order):
                if self.order:
                    self.rounds += 1
                self.order, self.position = list(queues), 0
            q = self.order[self.position]
            self.position += 1
            if q in queues and q not in seen:
                taken.append(q)
                seen.add(q)
        return taken
