"""The runs a scheduler form previews (as BullMQ 6.7's ``addJobScheduler`` and cron-parser place
them), dates typed in a zone, and the one-off job "run now" adds."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from queues.job_options import InvalidJob
from queues.scheduler_edit import check_spec
from queues.scheduler_runs import iteration_millis, local_text, one_off, preview_runs, zoned_ms


def ms(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).timestamp() * 1000)


NOW = ms("2027-03-13T12:00:00.250+00:00")


def runs(**given):
    base = dict(pattern="", every=None, zone_name="UTC", start_date=None, end_date=None, limit=None, offset=None)
    return preview_runs(**{**base, "immediately": False, "now_ms": NOW, **given})


def test_every_starts_now_at_its_start_date_or_on_its_offsets_phase():
    assert runs(every=60_000, limit=3) == [NOW, NOW + 60_000, NOW + 120_000]
    start = ms("2027-04-01T00:00:00+00:00")
    assert runs(every=60_000, start_date=start, limit=2) == [start, start + 60_000]
    # offset 10 s: the next minute boundary + 10 s after now (12:00:10), then a minute apart
    assert runs(every=60_000, offset=10_000, limit=2) == [
        ms("2027-03-13T12:00:10+00:00"),
        ms("2027-03-13T12:01:10+00:00"),
    ]
    # an edit that keeps the interval continues from the stored next run
    stored_next = ms("2027-03-13T12:00:30+00:00")
    assert runs(every=60_000, limit=1, stored=(60_000, stored_next)) == [stored_next + 60_000]


def test_a_pattern_runs_in_its_zone_across_a_dst_night_and_stops_at_the_end_date():
    shown = runs(pattern="30 2 * * *", zone_name="America/New_York", count=3)
    # 14 March 2027: 02:30 does not exist in New York; cron-parser runs it at 03:30 EDT.
    assert [local_text(at, "America/New_York") for at in shown] == [
        "2027-03-14T03:30:00",
        "2027-03-15T02:30:00",
        "2027-03-16T02:30:00",
    ]
    assert runs(pattern="30 2 * * *", zone_name="America/New_York", end_date=shown[1]) == shown[:2]
    assert runs(pattern="30 2 * * *", immediately=True, limit=2)[0] == NOW
    assert runs(every=1000, end_date=NOW - 1) == []


def test_dates_are_typed_in_a_zone_and_shown_back_to_the_millisecond():
    at = zoned_ms("2027-03-13T07:00:00.250", "America/New_York")
    assert at == NOW and local_text(at, "America/New_York") == "2027-03-13T07:00:00.250"
    assert zoned_ms("2027-01-01T09:00", "Asia/Tokyo") == ms("2027-01-01T00:00:00+00:00")
    assert zoned_ms("", "UTC") is None
    for bad, zone in (("tomorrow", "UTC"), ("2027-01-01T09:00", "Mars/Base")):
        with pytest.raises(ValueError):
            zoned_ms(bad, zone)


def test_run_now_is_the_template_without_what_makes_an_iteration():
    spec = check_spec(
        scheduler_id="s",
        name="report",
        every=1000,
        data={"to": "ops"},
        opts={"attempts": 2, "keepLogs": 5, "telemetry": {"omitContext": True}, "prevMillis": 5, "timestamp": 6},
    )
    job = one_off(spec)
    assert (job.name, json.loads(job.data_json)) == ("report", {"to": "ops"})
    assert job.opts == {"attempts": 2, "kl": 5, "omc": True}
    with pytest.raises(InvalidJob):
        one_off(check_spec(scheduler_id="s", name="r", every=1000, opts={"parent": {"id": "1", "queue": "pfx:p"}}))
    assert iteration_millis("s", "repeat:s:1700") == 1700 and iteration_millis("s", "repeat:s2:1700") is None


def test_a_time_no_date_can_show_in_the_zone_is_shown_empty():
    assert local_text(253_402_300_799_999, "Pacific/Kiritimati") == ""
    assert local_text(253_402_300_799_999, "UTC") == "9999-12-31T23:59:59.999"
