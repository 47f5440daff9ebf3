"""``queues.schedulers.is_finished``: when BullMQ 6 runs a job scheduler no more (its decision
in ``JobScheduler.upsertJobScheduler`` when a worker takes an iteration). The Node-written
cases are in tests/browse/test_finished_schedulers_node.py."""

from __future__ import annotations

import datetime as dt

from queues.schedulers import is_finished

NOW = int(dt.datetime(2027, 3, 10, 12, 0, tzinfo=dt.UTC).timestamp() * 1000)
HOUR = 3_600_000


def finished(*, pending: bool = False, **given) -> bool:
    fields = {"iterations": 3, "limit": None, "end_date": None, "pattern": "", "tz": "", "last_run": NOW - HOUR}
    return is_finished(last_run_pending=pending, now_ms=NOW, **{**fields, **given})


def test_limit_reached_once_the_last_iteration_is_taken():
    assert finished(iterations=3, limit=3)
    assert finished(iterations=4, limit=3)
    assert not finished(iterations=2, limit=3)
    assert not finished(iterations=3, limit=3, pending=True)  # its last run is still to come


def test_end_date_passed():
    assert finished(end_date=NOW - 1)
    assert not finished(end_date=NOW + HOUR)  # an interval scheduler runs on until then
    assert not finished(end_date=NOW - 1, pending=True)


def test_cron_stops_when_its_next_time_falls_after_the_end_date():
    # Daily at 09:00 UTC, last run this morning, end date tonight: cron-parser gives no next run.
    morning = NOW - 3 * HOUR
    assert finished(pattern="0 9 * * *", tz="UTC", last_run=morning, end_date=NOW + 8 * HOUR)
    assert not finished(pattern="0 9 * * *", tz="UTC", last_run=morning, end_date=NOW + 30 * HOUR)


def test_unbounded_never_finishes():
    assert not finished(iterations=10_000)
    assert not finished(iterations=None, limit=2)  # a legacy entry with no iteration count
