"""Totals and sliding rates over a queue's minute counters, computed for many windows at once,
equal the definition: a window of W minutes sums the current minute and the W - 1 before it
(minutes ahead of this machine's clock count as current), plus the part of the minute leaving it."""

from __future__ import annotations

import random

import pytest

from queues.rates import COUNTERS, MINUTE_MS, RATE_WINDOWS, Minute, QueueSeries, minute_of


def by_definition(series: QueueSeries, name: str, now_ms: int, window: int) -> tuple[int, float]:
    since = minute_of(now_ms) - (window - 1) * MINUTE_MS
    inside = sum(getattr(b, name) for m, b in series.minutes.items() if m >= since)
    leaving = series.minutes.get(minute_of(now_ms) - window * MINUTE_MS)
    fraction_left = 1 - (now_ms % MINUTE_MS) / MINUTE_MS
    return inside, (inside + (getattr(leaving, name) * fraction_left if leaving else 0)) / window


@pytest.mark.parametrize("seed", range(20))
def test_every_window_equals_the_definition(seed):
    rng = random.Random(seed)
    now_ms = 1_700_000_000_000 + rng.randrange(10 * MINUTE_MS)
    series = QueueSeries(keep=60)
    for age in rng.sample(range(-2, 40), rng.randrange(0, 20)):  # some ahead of the clock, some long gone
        series.minutes[minute_of(now_ms) - age * MINUTE_MS] = Minute(
            **{name: rng.randrange(0, 50) for name in COUNTERS}
        )
    window = series.window(now_ms=now_ms)
    for name in COUNTERS:
        for w in (*RATE_WINDOWS, 2, 15):
            total, rate = by_definition(series, name, now_ms, w)
            assert window.total(name, w) == total == series.total(name, now_ms=now_ms, window_min=w)
            assert window.per_minute(name, w) == pytest.approx(rate)
            assert series.per_minute(name, now_ms=now_ms, window_min=w) == pytest.approx(rate)


def test_a_quiet_queue_has_zero_everywhere():
    window = QueueSeries().window(now_ms=1_700_000_000_000)
    assert window.total("failed", 15) == 0 and window.per_minute("completed", 1) == 0.0
