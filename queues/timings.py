"""Wait and processing times as log-spaced histograms: percentiles within 10 %, exact roll-ups.

A duration (whole milliseconds: stream ids are ms) falls in one bucket ``(lower, upper]``. Each
decade from 1 ms to 10⁹ ms (11.6 days) is split at 1, 2 and 5 into 8 + 10 + 8 geometric
steps, so no bucket is more than 9.7 % wider than its lower bound, and the percentile reported
(the bucket's geometric middle) is within 4.7 % of every value in it. Splitting at 1-2-5 makes
those points exact bucket bounds: the Prometheus ``le`` bounds below are sums of whole buckets,
so ``/metrics`` is exact too. Bucket counts add: minutes sum into hours (and hours into days)
exactly, and a queue's figures are the sum of its job names'.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

DECADES = 9  # 1 ms … 10^9 ms
# (from, to, steps) within one decade; (to/from)^(1/steps) <= 1.0965
SEGMENTS = ((1, 2, 8), (2, 5, 10), (5, 10, 8))
MAX_BUCKET_RATIO = max((to / lo) ** (1 / steps) for lo, to, steps in SEGMENTS)


def _upper_bounds() -> list[float]:
    bounds = [0.0, 1.0]  # bucket 0: 0 ms (added and active in the same ms); bucket 1: 1 ms
    for d in range(DECADES):
        scale = 10**d
        for lo, to, steps in SEGMENTS:
            ratio = (to / lo) ** (1 / steps)
            bounds += [lo * scale * ratio**k for k in range(1, steps)] + [float(to * scale)]
    return bounds


UPPER_BOUNDS = _upper_bounds()
OVERFLOW = len(UPPER_BOUNDS)  # the bucket above the last bound
# Prometheus histogram bounds (seconds): every 1-2-5 point from 5 ms to 10,000 s.
PROMETHEUS_LE_SECONDS = tuple(m * 10**e / 1000 for e in range(0, 8) for m in (1, 2, 5) if 5 <= m * 10**e <= 10_000_000)
_PROMETHEUS_LE_INDEX = tuple(bisect.bisect_left(UPPER_BOUNDS, s * 1000 * (1 - 1e-12)) for s in PROMETHEUS_LE_SECONDS)

PERCENTILES = (("p50", 0.50), ("p95", 0.95), ("p99", 0.99))


def bucket_of(ms: float) -> int:
    """The bucket holding a duration of ``ms`` (negative clock skew counts as 0)."""
    return bisect.bisect_left(UPPER_BOUNDS, max(0.0, ms) * (1 - 1e-12))


def representative_ms(bucket: int) -> float:
    """The value reported for a bucket: its geometric middle (within 4.7 % of any value in it)."""
    if bucket <= 1:
        return float(bucket)  # 0 ms, 1 ms: whole milliseconds, exact
    if bucket >= OVERFLOW:
        return UPPER_BOUNDS[-1]
    return math.sqrt(UPPER_BOUNDS[bucket - 1] * UPPER_BOUNDS[bucket])


@dataclass
class Histogram:
    counts: dict[int, int] = field(default_factory=dict)  # bucket -> observations
    sum_ms: int = 0

    @property
    def count(self) -> int:
        return sum(self.counts.values())

    def add(self, ms: int) -> None:
        b = bucket_of(ms)
        self.counts[b] = self.counts.get(b, 0) + 1
        self.sum_ms += max(0, int(ms))

    def merge(self, other: Histogram) -> None:
        for b, n in other.counts.items():
            self.counts[b] = self.counts.get(b, 0) + n
        self.sum_ms += other.sum_ms

    def percentile(self, q: float) -> float | None:
        """The nearest-rank ``q`` quantile (0 < q <= 1), ``None`` without observations."""
        total = self.count
        if not total:
            return None
        rank = max(1, math.ceil(q * total))
        seen = 0
        for b in sorted(self.counts):
            seen += self.counts[b]
            if seen >= rank:
                return round(representative_ms(b), 1)
        return None  # unreachable

    def percentiles(self) -> dict[str, float | None]:
        return {name: self.percentile(q) for name, q in PERCENTILES}

    def cumulative(self) -> list[int]:
        """Observations at or below each ``PROMETHEUS_LE_SECONDS`` bound (then +Inf is ``count``)."""
        ordered = sorted(self.counts.items())
        out, seen, i = [], 0, 0
        for limit in _PROMETHEUS_LE_INDEX:
            while i < len(ordered) and ordered[i][0] <= limit:
                seen += ordered[i][1]
                i += 1
            out.append(seen)
        return out

    def as_json(self) -> dict[str, int]:
        return {str(b): n for b, n in sorted(self.counts.items())}

    @classmethod
    def from_json(cls, data: dict | None, sum_ms: int = 0) -> Histogram:
        counts = {}
        for b, n in (data or {}).items():
            try:
                counts[int(b)] = int(n)
            except (TypeError, ValueError):
                continue  # a hand-edited row: skip what cannot be a bucket
        return cls(counts, int(sum_ms or 0))


@dataclass
class NameMinute:
    """One job name's figures over one period (a minute, an hour or a window's sum)."""

    wait: Histogram = field(default_factory=Histogram)
    processing: Histogram = field(default_factory=Histogram)
    completed: int = 0
    failed: int = 0  # final failures
    attempt_failed: int = 0  # failed attempts that will be retried

    def merge(self, other: NameMinute) -> None:
        self.wait.merge(other.wait)
        self.processing.merge(other.processing)
        self.completed += other.completed
        self.failed += other.failed
        self.attempt_failed += other.attempt_failed

    def summary(self) -> dict:
        """The API's shape for one job name (or the whole queue)."""
        return {
            "wait_ms": self.wait.percentiles(),
            "processing_ms": self.processing.percentiles(),
            "completed": self.completed,
            "failed": self.failed,
            "attempt_failures": self.attempt_failed,
        }


def merged(parts) -> NameMinute:
    total = NameMinute()
    for part in parts:
        total.merge(part)
    return total


def summarize(by_name: dict[str, NameMinute], *, window: str) -> dict:
    """``{"window", "names": {name: summary}, "all": summary}``: the timings API's document."""
    return {
        "window": window,
        "names": {name: m.summary() for name, m in sorted(by_name.items())},
        "all": merged(by_name.values()).summary(),
    }


MAX_NAMES = 200  # job names kept apart per queue; beyond it, new names are counted as OTHER_NAME
OTHER_NAME = "(other)"
MINUTE_MS = 60_000


@dataclass
class QueueTimings:
    """One queue's recent minutes per job name, and its totals since this monitor started
    leading (what ``/metrics`` exposes as cumulative histograms)."""

    keep: int = 20  # minutes kept in memory: the 15-minute window and a margin
    minutes: dict[int, dict[str, NameMinute]] = field(default_factory=dict)
    totals: dict[str, NameMinute] = field(default_factory=dict)
    dirty: set[int] = field(default_factory=set)  # minutes to write at the next flush
    names: set[str] = field(default_factory=set)
    counted: int = 0  # observations counted so far: what is published of ``totals`` changes with it

    def name_for(self, name: str) -> str:
        """Bounded cardinality: a producer naming every job differently gets MAX_NAMES rows."""
        if name in self.names:
            return name
        if len(self.names) >= MAX_NAMES:
            return OTHER_NAME
        self.names.add(name)
        return name

    def count(self, *, name: str, ts_ms: int, kind: str, ms: int | None = None) -> None:
        self.counted += 1
        name = self.name_for(name)
        minute = ts_ms - ts_ms % MINUTE_MS
        if minute not in self.minutes:
            self.minutes[minute] = {}
            for old in sorted(self.minutes)[: max(0, len(self.minutes) - self.keep)]:
                del self.minutes[old]
                self.dirty.discard(old)
        for target in (
            self.minutes.setdefault(minute, {}).setdefault(name, NameMinute()),
            self.totals.setdefault(name, NameMinute()),
        ):
            if kind in ("wait", "processing"):
                getattr(target, kind).add(ms)
            else:
                if kind in ("completed", "failed") and ms is not None:
                    target.processing.add(ms)
                setattr(target, kind, getattr(target, kind) + 1)
        self.dirty.add(minute)

    def restore(self, minute: int, name: str, figures: NameMinute) -> None:
        """A stored minute (a new term of leadership continues it, rather than overwrite it)."""
        self.names.add(name)
        self.minutes.setdefault(minute, {})[name] = figures

    def window(self, *, now_ms: int, minutes: int) -> dict[str, NameMinute]:
        """Per name, the sum of the minutes overlapping the last ``minutes`` minutes."""
        since = now_ms - minutes * MINUTE_MS - MINUTE_MS
        by_name: dict[str, NameMinute] = {}
        for start, names in self.minutes.items():
            if start > since:
                for name, m in names.items():
                    by_name.setdefault(name, NameMinute()).merge(m)
        return by_name
