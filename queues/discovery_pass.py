"""The monitor's queue discovery, advanced a little at a time.

``discovery_for(source)`` gives the source's resumable discovery when its kind has one (a Redis
node walks its keyspace with a budgeted, resumable SCAN: ``queues.redis.discovery_pass``), else a
``WholeDiscovery`` that calls the source's ``discover()`` once per ``min_pass_s``. Both answer
``step()`` (whether the list changed) and ``queues``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

from .keys import QueueRef

WHOLE_PASS_SHARE = 10  # passes start at least this many times their own duration apart


class WholeDiscovery:
    """The same interface over a source that can only discover everything at once (kinds
    without a resumable walk): one ``discover()`` per ``min_pass_s``, or per ten times its own
    duration when that is longer.

    ``background``: each pass runs on a thread of its own and the step after it ends takes its
    list (or raises its error), so the caller's loop never waits for a pass: a Cluster's at
    10,000 queues (a SCAN of every primary) took 3-7 s, and the monitor's ticks and live
    updates waited that long every 30 s. Meanwhile the last list (at first ``known``) stands."""

    def __init__(
        self,
        discover: Callable[[], list[QueueRef]],
        *,
        min_pass_s: float = 10.0,
        known: Iterable[QueueRef] = (),
        clock: Callable[[], float] = time.monotonic,
        background: bool = False,
    ):
        self._discover, self.min_pass_s, self.clock = discover, min_pass_s, clock
        self._list = list(known)
        self._next_pass_at = clock()
        self.passes = 0
        self.last_pass_s: float | None = None
        self.background = background
        self._running: _Pass | None = None

    @property
    def queues(self) -> list[QueueRef]:
        return list(self._list)

    def step(self) -> bool:
        """Whether the list changed. A failed pass raises its error (the next step tries again)."""
        if self._running is not None:
            if not self._running.done.is_set():
                return False
            finished, self._running = self._running, None
            return self._took(finished)
        if self.clock() < self._next_pass_at:
            return False
        run = _Pass(self._discover, self.clock)
        if not self.background:
            run.run()
            return self._took(run)
        self._running = run
        threading.Thread(target=run.run, name="whole-discovery", daemon=True).start()
        return False

    def _took(self, run: _Pass) -> bool:
        if run.error is not None:
            raise run.error
        self.passes += 1
        self.last_pass_s = run.ended - run.started
        # A whole discovery costs what it costs (a SCAN of every Cluster primary: seconds at
        # 10,000 queues), so it may take at most a tenth of the time between passes.
        self._next_pass_at = run.started + max(self.min_pass_s, WHOLE_PASS_SHARE * self.last_pass_s)
        changed, self._list = run.found != self._list, run.found
        return changed


class _Pass:
    """One whole discovery: when it started and ended, and what it found or raised."""

    def __init__(self, discover: Callable[[], list[QueueRef]], clock: Callable[[], float]):
        self._discover, self._clock = discover, clock
        self.started = self.ended = 0.0
        self.found: list[QueueRef] = []
        self.error: BaseException | None = None
        self.done = threading.Event()

    def run(self) -> None:
        self.started = self._clock()
        try:
            self.found = self._discover()
        except Exception as exc:  # noqa: BLE001 - handed to the step that collects the pass
            self.error = exc
        finally:
            self.ended = self._clock()
            self.done.set()


def discovery_for(
    source, *, keys_per_step: int, min_pass_s: float, known: Iterable[QueueRef] = (), background: bool = False
):
    """The source's resumable discovery if its kind has one (``discovery_pass``), else a
    ``WholeDiscovery`` over its ``discover()`` (its passes on a thread with ``background``)."""
    resumable = getattr(source, "discovery_pass", None)
    if resumable is not None:
        return resumable(keys_per_step=keys_per_step, min_pass_s=min_pass_s, known=known)
    return WholeDiscovery(source.discover, min_pass_s=min_pass_s, known=known, background=background)
