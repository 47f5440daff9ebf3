"""queues.cron: cron maths in the expression's zone (across daylight-saving changes) and the
Periodic runner the monitor uses for all its periodic work. Time is passed in, never waited."""

from __future__ import annotations

import datetime as dt

import pytest

from queues.cron import CronError, Job, Periodic, cron_next, cron_prev, cron_validate, window_open_at

UTC = dt.UTC


def at(*args) -> dt.datetime:
    return dt.datetime(*args, tzinfo=UTC)


def test_a_time_skipped_by_spring_forward_runs_just_after_the_jump():
    # Paris, 2026-03-29: 02:00 CET becomes 03:00 CEST; 02:30 does not exist that night.
    runs = cron_next(expr="30 2 * * *", tz="Europe/Paris", after=at(2026, 3, 27, 12), count=3)
    assert runs == [at(2026, 3, 28, 1, 30), at(2026, 3, 29, 1, 30), at(2026, 3, 30, 0, 30)]


def test_a_time_repeated_by_fall_back_runs_once():
    # Paris, 2026-10-25: 03:00 CEST becomes 02:00 CET; 02:00-02:59 happens twice.
    runs = cron_next(expr="30 2 * * *", tz="Europe/Paris", after=at(2026, 10, 24, 12), count=2)
    assert runs == [at(2026, 10, 25, 0, 30), at(2026, 10, 26, 1, 30)]
    half_hourly = cron_next(expr="*/30 * * * *", tz="Europe/Paris", after=at(2026, 10, 25, 0, 15), count=3)
    assert half_hourly == [at(2026, 10, 25, 0, 30), at(2026, 10, 25, 2, 0), at(2026, 10, 25, 2, 30)]
    assert len(set(half_hourly)) == 3


def test_previous_fire_time_and_a_window_across_the_change():
    assert cron_prev(expr="0 1 * * *", tz="Europe/Paris", at=at(2026, 10, 25, 3)) == at(2026, 10, 24, 23)
    # "01:00 for 3 hours" ends at 04:00 local, which is four real hours that night.
    assert window_open_at(
        expr="0 1 * * *", tz="Europe/Paris", duration=dt.timedelta(hours=3), at=at(2026, 10, 25, 2, 59)
    ) == (at(2026, 10, 24, 23), at(2026, 10, 25, 3))
    assert (
        window_open_at(expr="0 1 * * *", tz="Europe/Paris", duration=dt.timedelta(hours=3), at=at(2026, 10, 25, 3))
        is None
    )


@pytest.mark.parametrize(
    "expr, tz, message",
    [
        ("", "UTC", "Enter a cron expression"),
        ("0 2 * *", "UTC", "has 4 fields"),
        ("0 25 * * *", "UTC", "is not a valid cron expression"),
        ("0 2 * * *", "Nowhere/Special", "Unknown time zone"),
    ],
)
def test_bad_expressions_and_zones_get_a_message_for_users(expr, tz, message):
    with pytest.raises(CronError, match=message):
        cron_validate(expr, tz)


class FakeClocks:
    def __init__(self):
        self.mono = 1000.0
        self.wall = at(2026, 6, 1, 7, 59, 0)

    def advance(self, seconds: float):
        self.mono += seconds
        self.wall += dt.timedelta(seconds=seconds)


def test_periodic_runs_interval_and_cron_jobs_and_survives_a_failing_one():
    clocks = FakeClocks()
    ran = []

    def boom():
        ran.append("boom")
        raise RuntimeError("a bug in one job")

    periodic = Periodic(
        [
            Job("every-10s", lambda: ran.append("interval"), every=10),
            Job("late-start", lambda: ran.append("late"), every=10, first_after=25),
            Job("digest", lambda: ran.append("digest"), cron="0 10 * * *", tz="Europe/Paris"),  # 08:00 UTC in June
            Job("broken", boom, every=30),
        ],
        clock=lambda: clocks.mono,
        wall=lambda: clocks.wall,
    )
    assert periodic.run_due() == ["every-10s", "broken"]
    clocks.advance(10)
    assert periodic.run_due() == ["every-10s"]
    assert periodic.seconds_until_next() == 10
    clocks.advance(20)
    assert periodic.run_due() == ["every-10s", "late-start", "broken"]
    clocks.advance(29)
    assert "digest" not in periodic.run_due()
    clocks.advance(1)  # 08:00:00 UTC = 10:00 Paris
    assert "digest" in periodic.run_due()
    assert ran.count("boom") == 3 and ran.count("digest") == 1


def test_a_job_needs_exactly_one_schedule():
    with pytest.raises(ValueError):
        Job("both", lambda: None, every=5, cron="* * * * *")
    with pytest.raises(CronError):
        Job("bad", lambda: None, cron="every day")
