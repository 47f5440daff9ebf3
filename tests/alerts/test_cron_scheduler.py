"""queues.cron: cron maths in the expression's zone (across daylight-saving changes) and the
Periodic runner the monitor runs its whole schedule on. Time is passed in, never waited."""

from __future__ import annotations

import datetime as dt

import pytest

from queues.cron import (
    AFTER_START,
    ON_GRID,
    CronError,
    Job,
    Periodic,
    cron_next,
    cron_prev,
    cron_validate,
    window_open_at,
)

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


class Clock:
    """A monotonic clock the test moves; a job's run can move it too (a run that takes time)."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def taking(self, seconds: float, ran: list, name: str):
        def run():
            ran.append((name, self.now))
            self.now += seconds

        return run


def test_an_interval_is_measured_from_the_end_the_start_or_a_fixed_grid():
    clock, ran = Clock(), []
    periodic = Periodic(
        [
            Job("after-end", clock.taking(3, ran, "after-end"), every=10),
            Job("after-start", clock.taking(0, ran, "after-start"), every=10, cadence=AFTER_START),
            Job("grid", clock.taking(0, ran, "grid"), every=10, cadence=ON_GRID),
        ],
        clock=clock,
    )
    periodic.run_due()  # at 100; the first job ends at 103
    assert [job.next_at for job in periodic.jobs] == [113, 113, 110]
    clock.now = 111  # late for the grid, but not a whole interval behind: it stays on it
    assert periodic.run_due() == ["grid"]
    assert periodic.by_name["grid"].next_at == 120


def test_a_grid_job_that_falls_behind_restarts_its_grid_instead_of_catching_up_in_a_burst():
    clock, ran = Clock(), []
    periodic = Periodic([Job("snapshot", clock.taking(0, ran, "snapshot"), every=10, cadence=ON_GRID)], clock=clock)
    periodic.run_due()
    clock.now = 145  # the runs due at 110, 120, 130 and 140 were missed (a long step, a slow machine)
    assert periodic.run_due() == ["snapshot"]
    assert periodic.run_due() == []  # once, not four times
    assert periodic.by_name["snapshot"].next_at == 155
    clock.now = 155
    assert periodic.run_due() == ["snapshot"] and periodic.by_name["snapshot"].next_at == 165


def test_a_job_that_stands_in_for_another_reschedules_it_as_if_it_had_run():
    clock, ran = Clock(), []
    periodic = Periodic(
        [
            Job("snapshot", clock.taking(0, ran, "snapshot"), every=4, cadence=ON_GRID, stands_in_for=("tick",)),
            Job("tick", clock.taking(0, ran, "tick"), every=1, cadence=AFTER_START),
        ],
        clock=clock,
    )
    for _ in range(9):
        periodic.run_due()
        clock.now += 1
    assert ran == [
        ("snapshot", 100),
        ("tick", 101),
        ("tick", 102),
        ("tick", 103),
        ("snapshot", 104),
        ("tick", 105),
        ("tick", 106),
        ("tick", 107),
        ("snapshot", 108),
    ]


def test_a_job_only_when_work_waits_runs_at_most_every_interval_and_is_not_waited_for_otherwise():
    clock, ran, waiting = Clock(), [], []
    periodic = Periodic(
        [
            Job("publish", clock.taking(0, ran, "p"), every=0.05, cadence=AFTER_START, only_when=lambda: bool(waiting)),
            Job("flush", clock.taking(0, ran, "flush"), every=1, cadence=AFTER_START),
        ],
        clock=clock,
    )
    assert periodic.run_due() == ["flush"]  # nothing waiting: not run
    assert periodic.seconds_until_next() == 1  # and not what the caller sleeps until
    waiting.append("q")
    assert periodic.seconds_until_next() == 0
    assert periodic.run_due() == ["publish"]
    clock.now += 0.02
    assert periodic.run_due() == []  # at most every 50 ms
    assert periodic.seconds_until_next() == pytest.approx(0.03)
    clock.now += 0.03
    assert periodic.run_due() == ["publish"]


def test_a_lost_lock_stops_the_pass_and_leaves_the_rest_due():
    clock, ran, leading = Clock(), [], [True]

    def first():
        ran.append("first")
        leading[0] = False  # the heartbeat lost the lock meanwhile

    periodic = Periodic([Job("first", first, every=1), Job("flush", clock.taking(0, ran, "f"), every=1)], clock=clock)
    assert periodic.run_due(keep_going=lambda: leading[0]) == ["first"]
    assert periodic.by_name["flush"].next_at == 100  # still due, for whoever runs this schedule next
    leading[0] = True
    assert periodic.run_due(keep_going=lambda: leading[0]) == ["flush"]


def test_a_step_that_propagates_its_failure_stops_the_pass():
    clock, ran = Clock(), []

    def broken():
        raise RuntimeError("the dashboard Redis went away")

    periodic = Periodic(
        [Job("tick", broken, every=1, propagate=True), Job("flush", clock.taking(0, ran, "flush"), every=1)],
        clock=clock,
    )
    with pytest.raises(RuntimeError):
        periodic.run_due()
    assert ran == []


def test_schedules_that_cannot_work_are_refused():
    with pytest.raises(ValueError, match="unknown"):
        Periodic([Job("snapshot", lambda: None, every=4, stands_in_for=("tick",))])
    with pytest.raises(ValueError, match="distinct"):
        Periodic([Job("tick", lambda: None, every=1), Job("tick", lambda: None, every=2)])
    with pytest.raises(ValueError, match="cron"):
        Job("digest", lambda: None, cron="0 8 * * *", cadence=ON_GRID)
