"""The framework-free rules behind the queue figures: which minute each of BullMQ's metrics
entries counts, maxed and the rate-limit window, and options under their real names."""
# Literal `bull:` keys kept: key strings as data (a parent field), never written to Redis.

from __future__ import annotations

from queues.bullmq_metrics import POINTS_READ_MAX, BullmqMetrics, points_for
from queues.figures import QueueFigures, priority_of_score, priority_score_range
from queues.jobs import parent_flags
from queues.stored_opts import options_from_stored
from queues.text import MAX_SAFE_INTEGER

MIN = 60_000


def figures(**kw) -> QueueFigures:
    base = dict(
        per_priority=((0, 0),),
        prioritized=0,
        active=0,
        concurrency=None,
        rate_max=None,
        rate_duration_ms=None,
        window_count=None,
        window_left_ms=0,
    )
    return QueueFigures(**{**base, **kw})


def test_metrics_entries_count_the_minutes_before_prev_ts_and_its_own_is_filling():
    prev = 100 * MIN + 12_345
    m = BullmqMetrics("completed", count=9, prev_ts=prev, prev_count=7, data=(4, 0, 3), points=3)
    assert m.per_minute() == {100 * MIN: 2, 99 * MIN: 4, 98 * MIN: 0, 97 * MIN: 3}
    assert BullmqMetrics("failed", 0, 0, 0, (), 0).per_minute() == {}  # never recorded


def test_points_read_cover_the_range_and_stop_at_two_weeks():
    assert points_for(1000 * MIN, 1059 * MIN + 5) == 60
    assert points_for(0, 10**12) == POINTS_READ_MAX


def test_maxed_and_the_window():
    assert figures(active=2, concurrency=2).maxed and not figures(active=1, concurrency=2).maxed
    assert not figures(active=50).maxed  # no global concurrency: never maxed
    assert figures(rate_max=5, window_count=5, window_left_ms=300).limited_for_ms == 300
    assert figures(rate_max=5, window_count=2, window_left_ms=300).limited_for_ms == 0
    manual = figures(window_count=MAX_SAFE_INTEGER, window_left_ms=900)
    assert manual.manual_limit and manual.limited_for_ms == 900


def test_priorities_from_scores_and_the_remainder():
    low, high = priority_score_range(5)
    assert priority_of_score(low) == priority_of_score(high) == 5 and priority_of_score(high + 1) == 6
    assert figures(per_priority=((0, 3), (1, 2)), prioritized=7).priorities_rest == 5


def test_options_and_parent_flags_under_their_real_names():
    stored = {"de": {"id": "x"}, "kl": {"count": 5}, "fpof": True, "tm": "ctx", "omc": False, "attempts": 3}
    assert options_from_stored(stored) == {
        "deduplication": {"id": "x"},
        "keepLogs": {"count": 5},
        "failParentOnFailure": True,
        "telemetry": {"metadata": "ctx", "omitContext": False},
        "attempts": 3,
    }
    assert options_from_stored(["not", "an", "object"]) == ["not", "an", "object"]
    assert parent_flags('{"id": "1", "queueKey": "bull:q", "idof": true, "rdof": true}') == (
        "ignoreDependencyOnFailure",
        "removeDependencyOnFailure",
    )
    assert parent_flags("not json") is None
