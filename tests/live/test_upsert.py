"""Points and cursors written as tuples (``dashboard.core.upsert.Upsert``): a new key inserts, a
known key overwrites only the upsert's values, and dates and JSON arrive as the ORM reads them
back, on whichever database the suite runs (SQLite, and PostgreSQL in its pass)."""

from __future__ import annotations

import datetime as dt

import pytest

from dashboard.live import timing_points
from dashboard.live.models import COUNTER_POINTS, CURSORS, GAUGE_POINTS, JobTimingPoint, QueuePoint, StreamCursor
from queues.keys import QueueRef
from queues.timings import Histogram, NameMinute

pytestmark = pytest.mark.django_db

MINUTE = dt.datetime(2026, 3, 29, 1, 30, tzinfo=dt.UTC)  # a daylight-saving night in Europe
KEY = ("default", "bull", 'a/b:{c}"d', QueuePoint.MINUTE, MINUTE)


def test_a_new_key_inserts_and_a_known_one_overwrites_only_the_values():
    GAUGE_POINTS.write([(*KEY, 1, 2, 3, 4, 5, 6, 10, 11, 12, 13, 14, 15, 2**40)])
    COUNTER_POINTS.write(
        [
            (*KEY, 7, 8, 9, 10, 11, 12),  # a re-counted minute: counters only
            ("default", "bull", "other", QueuePoint.MINUTE, MINUTE, 1, 0, 0, 0, 0, 0),
        ]
    )
    point = QueuePoint.objects.get(queue='a/b:{c}"d')
    assert (point.start, point.completed, point.failed, point.attempt_failed) == (MINUTE, 7, 8, 12)
    assert (point.waiting, point.stalled_now, point.oldest_age_ms) == (10, 15, 2**40)  # gauges kept
    other = QueuePoint.objects.get(queue="other")
    assert (other.completed, other.waiting, other.oldest_age_ms) == (1, 0, None)  # the model's defaults
    assert QueuePoint.objects.count() == 2


def test_cursors_move_in_place():
    CURSORS.write([("default", "bull", "q", "1-0"), ("default", "bull", "r", "5-0")])
    CURSORS.write([("default", "bull", "q", "2-3")])
    assert dict(StreamCursor.objects.values_list("queue", "last_id")) == {"q": "2-3", "r": "5-0"}


def test_timing_rows_keep_their_buckets_and_dates():
    wait = Histogram()
    for ms in (3, 40, 40, 900_000):
        wait.add(ms)
    figures = NameMinute(wait=wait, completed=4)
    queue = QueueRef("default", "bull", "timed")
    timing_points.save([timing_points.as_row(queue, name="send", resolution=60, start=MINUTE, figures=figures)])
    figures.completed = 5
    timing_points.save([timing_points.as_row(queue, name="send", resolution=60, start=MINUTE, figures=figures)])
    row = JobTimingPoint.objects.get()
    assert (row.start, row.completed) == (MINUTE, 5)
    assert timing_points.figures_of(row).wait.as_json() == wait.as_json()
    assert timing_points.figures_of(row).wait.sum_ms == wait.sum_ms
