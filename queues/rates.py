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


@dataclass
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
        since = minute_of(now_ms) - (window_min - 1) * MINUTE_MS
        return sum(getattr(b, name) for m, b in self.minutes.items() if m >= since)

    def per_minute(self, name: str, *, now_ms: int, window_min: int) -> float:
        """Average per minute over the last ``window_min`` minutes, sliding: the current partial
        minute counts in full (a burst shows at once) and the minute just leaving the window
        counts for the part of it still inside. (Dividing by the elapsed part of the current
        minute instead made the 1-minute rate drop to near zero at every minute boundary.)"""
        inside = self.total(name, now_ms=now_ms, window_min=window_min)
        leaving = self.minutes.get(minute_of(now_ms) - window_min * MINUTE_MS)
        fraction_left = 1 - (now_ms % MINUTE_MS) / MINUTE_MS
        return (inside + (getattr(leaving, name) * fraction_left if leaving else 0)) / window_min


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
