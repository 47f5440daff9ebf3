"""The monitor's queue discovery, advanced a little at a time.

``discovery_for(source)`` gives the source's resumable discovery when its kind has one (a Redis
node walks its keyspace with a budgeted, resumable SCAN: ``queues.redis.discovery_pass``), else a
``WholeDiscovery`` that calls the source's ``discover()`` once per ``min_pass_s``. Both answer
``step()`` (whether the list changed) and ``queues``."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from .keys import QueueRef

WHOLE_PASS_SHARE = 10  # passes start at least this many times their own duration apart


class WholeDiscovery:
    """The same interface over a source that can only discover everything at once (kinds
    without a resumable walk): one ``discover()`` per ``min_pass_s``, or per ten times its own
    duration when that is longer."""

    def __init__(
        self,
        discover: Callable[[], list[QueueRef]],
        *,
        min_pass_s: float = 10.0,
        known: Iterable[QueueRef] = (),
        clock: Callable[[], float] = time.monotonic,
    ):
        self._discover, self.min_pass_s, self.clock = discover, min_pass_s, clock
        self._list = list(known)
        self._next_pass_at = clock()
        self.passes = 0
        self.last_pass_s: float | None = None

    @property
    def queues(self) -> list[QueueRef]:
        return list(self._list)

    def step(self) -> bool:
        if self.clock() < self._next_pass_at:
            return False
        started = self.clock()
        found = self._discover()
        self.passes += 1
        self.last_pass_s = self.clock() - started
        # A whole discovery costs what it costs (a SCAN of every Cluster primary: seconds at
        # 10,000 queues), so it may take at most a tenth of the time between passes.
        self._next_pass_at = started + max(self.min_pass_s, WHOLE_PASS_SHARE * self.last_pass_s)
        changed, self._list = found != self._list, found
        return changed


def discovery_for(source, *, keys_per_step: int, min_pass_s: float, known: Iterable[QueueRef] = ()):
    """The source's resumable discovery if its kind has one (``discovery_pass``), else a
    ``WholeDiscovery`` over its ``discover()``."""
    resumable = getattr(source, "discovery_pass", None)
    if resumable is not None:
        return resumable(keys_per_step=keys_per_step, min_pass_s=min_pass_s, known=known)
    return WholeDiscovery(source.discover, min_pass_s=min_pass_s, known=known)
