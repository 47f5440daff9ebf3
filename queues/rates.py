"""Per-queue signals computed from events and snapshots: per-minute counters and the rates
derived from them.

Counters are kept per whole UTC minute. Failure and completion counts come from the events
stream; because the stream is lossy (trimmed) and the monitor may have been down, a minute can
be reconciled from finish-time scores of the ``completed``/``failed`` sets (``ZCOUNT`` over the
minute), keeping the larger of the two counts: events undercount after a gap, scores undercount
when ``removeOnComplete``/``removeOnFail`` prune the set. Neither overcounts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from .stalls import STALLED_LIMIT_REASON

MINUTE_MS = 60_000
# The sliding windows, in minutes, every rate is kept and shown over: the queue page, /metrics,
# alert rules' windows and the per-job-name timings ("1m", "5m", "15m").
RATE_WINDOWS = (1, 5, 15)
# Stored per minute (QueuePoint). ``failed`` counts final failures only; ``attempt_failed`` the
# failed attempts that will be retried (queues.attempts), which emit no ``failed`` event.
COUNTERS = ("completed", "failed", "stalled", "added", "stall_failed", "attempt_failed")


def minute_of(ts_ms: int) -> int:
    """Start of the UTC minute containing ``ts_ms``, in ms."""
    return ts_ms - ts_ms % MINUTE_MS


@dataclass(slots=True)  # a monitor keeps about 16 per queue: 160,000 at 10,000 queues
class Minute:
    completed: int = 0
    failed: int = 0
    stalled: int = 0
    added: int = 0
    stall_failed: int = 0
    attempt_failed: int = 0  # counted by the monitor from candidate events, not by count_event

    def merge_max(self, other: Minute) -> None:
        for f in fields(self):
            setattr(self, f.name, max(getattr(self, f.name), getattr(other, f.name)))


@dataclass
class QueueSeries:
    """Recent minutes of one queue, oldest dropped beyond ``keep`` minutes."""

    minutes: dict[int, Minute] = field(default_factory=dict)
    keep: int = 60

    def bucket(self, ts_ms: int) -> Minute:
        m = minute_of(ts_ms)
        if m not in self.minutes:
            self.minutes[m] = Minute()
            if len(self.minutes) > self.keep:
                for old in sorted(self.minutes)[: len(self.minutes) - self.keep]:
                    del self.minutes[old]
        return self.minutes[m]

    def total(self, name: str, *, now_ms: int, window_min: int) -> int:
        return self.window(now_ms=now_ms, oldest=window_min).total(name, window_min)

    def per_minute(self, name: str, *, now_ms: int, window_min: int) -> float:
        return self.window(now_ms=now_ms, oldest=window_min).per_minute(name, window_min)

    def window(self, *, now_ms: int, oldest: int = max(RATE_WINDOWS)) -> SeriesWindow:
        """The minutes of the last ``oldest`` windows' reach, for many totals and rates at once
        (a refresh asks for 25 of each queue; scanning every kept minute for each was a tenth of
        the monitor's time at 10,000 queues)."""
        return SeriesWindow(self, now_ms=now_ms, oldest=oldest)


class SeriesWindow:
    """Totals and sliding rates of one queue's counters over windows of up to ``oldest``
    minutes ending now; each counter's minutes are summed once, by age."""

    def __init__(self, series: QueueSeries, *, now_ms: int, oldest: int):
        current = minute_of(now_ms)
        # Minute buckets by age in whole minutes (0: the current one, and any ahead of this
        # machine's clock: events carry the Redis server's), up to the one just leaving the
        # widest window.
        self.by_age = [
            (max(0, age), b) for m, b in series.minutes.items() if (age := (current - m) // MINUTE_MS) <= oldest
        ]
        self.fraction_left = 1 - (now_ms % MINUTE_MS) / MINUTE_MS
        self.oldest = oldest
        self._per_age: dict[str, list[int]] = {}

    def _counts(self, name: str) -> list[int]:
        counts = self._per_age.get(name)
        if counts is None:
            counts = [0] * (self.oldest + 1)
            for age, b in self.by_age:
                counts[age] += getattr(b, name)
            self._per_age[name] = counts
        return counts

    def total(self, name: str, window_min: int) -> int:
        """The counter's sum over the last ``window_min`` whole minutes, the current one included."""
        return sum(self._counts(name)[:window_min]) if self.by_age else 0

    def per_minute(self, name: str, window_min: int) -> float:
        """Average per minute over the last ``window_min`` minutes, sliding: the current partial
        minute counts in full (a burst shows at once) and the minute just leaving the window
        counts for the part of it still inside. (Dividing by the elapsed part of the current
        minute instead made the 1-minute rate drop to near zero at every minute boundary.)"""
        if not self.by_age:
            return 0.0
        counts = self._counts(name)
        return (sum(counts[:window_min]) + counts[window_min] * self.fraction_left) / window_min


def count_event(series: QueueSeries, name: str, ts_ms: int, fields_: dict) -> bool:
    """Apply one BullMQ event to the counters. Returns True if it changed a counter."""
    b = series.bucket(ts_ms)
    if name == "completed":
        b.completed += 1
    elif name == "failed":
        b.failed += 1
        if fields_.get("failedReason") == STALLED_LIMIT_REASON:
            b.stall_failed += 1
    elif name == "stalled":
        b.stalled += 1
    elif name == "added":
        b.added += 1
    else:
        return False
    return True
