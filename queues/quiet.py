"""Quiet means exact: which queues are due a targeted exact read because their events stopped.

Between periodic snapshots the monitor keeps counts current from events, and some things
events cannot settle: a prioritized job is added, promoted or retried with a plain ``waiting``
event; ``removeOnComplete``/``removeOnFail`` trim the finished sets without one; a backoff
``delayed`` has no ``prev``, so a job active before the monitor followed the stream stays
counted as active. Reading every queue on every event would cost the monitored Redis more than
the dashboards Queuewatch replaces, so a queue is read once per *quiet transition*: when it has
had no event for ``quiet_s`` (1 s), one pipelined read of that queue alone (the snapshot's
MULTI), which replaces the estimate by the truth. A busy queue is never read this way (it
never goes quiet); a queue that stays quiet is read once, not again until its next event.

A change Queuewatch itself makes (an action) is read at once instead, busy or not: the action
service asks (``dashboard.core.dash_redis.request_exact_read``) and the monitor reads.
"""

from __future__ import annotations

from .keys import QueueRef

QUIET_S = 1.0


class QuietReads:
    """Queues that had events since their last exact read, with the (monotonic) time of their
    latest event."""

    def __init__(self, *, quiet_s: float = QUIET_S):
        self.quiet_s = quiet_s
        self._last_heard: dict[QueueRef, float] = {}
        self._asked: set[QueueRef] = set()  # due at once, whatever their events (``asked``)

    def heard(self, queue: QueueRef, at: float) -> None:
        """An event of ``queue`` arrived at monotonic time ``at``."""
        self._last_heard[queue] = at

    def asked(self, queue: QueueRef) -> None:
        """Queuewatch itself changed ``queue`` (maybe without an event): read it at once, even if
        it is busy."""
        self._asked.add(queue)

    def due(self, at: float) -> list[QueueRef]:
        """Queues quiet for ``quiet_s`` at ``at``, each once per quiet transition, and the
        queues asked for."""
        ready = [q for q, heard in self._last_heard.items() if at - heard >= self.quiet_s]
        for q in ready:
            del self._last_heard[q]
        ready += [q for q in self._asked if q not in ready]
        self._asked.clear()
        return ready

    def seconds_until_due(self, at: float) -> float | None:
        """How long until the next queue goes quiet (for the loop's wait), or None."""
        if self._asked:
            return 0.0
        if not self._last_heard:
            return None
        return max(0.0, min(self._last_heard.values()) + self.quiet_s - at)
