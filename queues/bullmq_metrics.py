"""BullMQ's own throughput metrics: what a worker started with ``metrics: {maxDataPoints}``
keeps per queue in ``metrics:completed`` and ``metrics:failed`` (``Queue.getMetrics``).

Each is a hash (``count``: jobs finished so far, ``prevTS``: when the minute being filled began
to fill, ``prevCount``: ``count`` then) and a list ``…:data`` of per-minute counts, newest first,
trimmed to ``maxDataPoints``. BullMQ pushes a minute's count only when a job finishes in a later
minute (``collectMetrics`` in ``moveToFinished``), with zeros for the minutes between, so entry
``i`` of the list counts the jobs finished in the minute ``floor(prevTS / 60000) - 1 - i`` and
the minute of ``prevTS`` itself is still filling: ``count - prevCount`` so far.

Framework-free.
"""

from __future__ import annotations

from dataclasses import dataclass

MINUTE_MS = 60_000
KINDS = ("completed", "failed")
# Most data points read per kind and request: two weeks of minutes (BullMQ's own
# ``MetricsTime.TWO_WEEKS``); a longer range shows the two weeks BullMQ's history can cover by
# default and no more.
POINTS_READ_MAX = 20_160


@dataclass(frozen=True)
class BullmqMetrics:
    kind: str  # "completed" or "failed"
    count: int  # meta ``count``
    prev_ts: int  # meta ``prevTS`` (ms); 0: no worker has recorded metrics here
    prev_count: int  # meta ``prevCount``
    data: tuple[int, ...]  # the first entries of the data list, newest first, as read
    points: int  # how many entries the list holds in all

    @property
    def recorded(self) -> bool:
        return self.prev_ts > 0

    def per_minute(self) -> dict[int, int]:
        """Jobs finished per minute, keyed by the minute's start (ms since the epoch, UTC),
        the still-filling minute included."""
        if not self.recorded:
            return {}
        current = self.prev_ts // MINUTE_MS
        minutes = {current * MINUTE_MS: max(0, self.count - self.prev_count)}
        for i, value in enumerate(self.data):
            minutes[(current - 1 - i) * MINUTE_MS] = value
        return minutes


def points_for(first_minute_ms: int, now_ms: int) -> int:
    """How many list entries cover the minutes from ``first_minute_ms`` to now: entry ``i``
    is at most ``i + 1`` minutes before now (``prevTS`` is never in the future)."""
    return max(1, min(POINTS_READ_MAX, (now_ms - first_minute_ms) // MINUTE_MS + 1))
