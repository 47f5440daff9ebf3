"""The oldest waiting job's age on the queue API, against real Node BullMQ 6.7: counted from
when a job became ready (not from its creation), over wait and prioritized, and not made
younger by a lifo job at the tail of wait (queues.ready_since)."""

from __future__ import annotations

import json
import time

import pytest
from django.urls import reverse

from tests.support.servers import node_available, run_node

pytestmark = [
    pytest.mark.node,
    pytest.mark.django_db,
    pytest.mark.skipif(not node_available(), reason="needs Node.js and npm"),
]

HOUR = 3_600_000
DAY = 24 * HOUR


@pytest.fixture(autouse=True)
def node_tz(monkeypatch):
    """Node runs 5:45 off UTC: a time read as local, or an offset taken for an age, shows."""
    monkeypatch.setenv("TZ", "Asia/Kathmandu")


def add(queues, name: str, *jobs: dict) -> list[str]:
    return run_node("toolbox.mjs", "add", queues.url, name, json.dumps(jobs), prefix=queues.prefix)["ids"]


def oldest(client, queues, name: str) -> dict:
    body = client.get(reverse("api_queue", args=queues.args(name))).json()
    return {k: body.get(k) for k in ("oldest_waiting_age_ms", "oldest_waiting_is_bound", "counts")}


def now_ms() -> int:
    return int(time.time() * 1000)


def test_a_day_delayed_job_promoted_just_now_does_not_read_a_day_old(logged_in, prefixed_queues):
    # Created a day ago with a delay of a day and a minute, promoted now: ready for seconds.
    (job,) = add(
        prefixed_queues,
        "later",
        {"name": "d", "data": {}, "opts": {"timestamp": now_ms() - DAY, "delay": DAY + 60_000}},
    )
    run_node("toolbox.mjs", "promote", prefixed_queues.url, "later", json.dumps([job]), prefix=prefixed_queues.prefix)
    got = oldest(logged_in, prefixed_queues, "later")
    assert got["counts"]["waiting"] == 1
    # The hash keeps no promotion time (promote sets delay to 0): a bound, and not a day.
    assert got["oldest_waiting_age_ms"] is not None and got["oldest_waiting_age_ms"] < 60_000
    assert got["oldest_waiting_is_bound"] is True
    page = logged_in.get(reverse("queue", args=prefixed_queues.args("later"))).content.decode()
    assert "oldest waiting job: at least <time" in " ".join(page.split())  # shown as the bound it is


def test_a_backlog_of_prioritized_jobs_only_has_an_age(logged_in, prefixed_queues):
    an_hour_ago = now_ms() - HOUR
    add(
        prefixed_queues,
        "ranked",
        *({"name": "p", "data": {}, "opts": {"priority": 5, "timestamp": an_hour_ago + i}} for i in range(3)),
    )
    got = oldest(logged_in, prefixed_queues, "ranked")
    assert got["counts"]["prioritized"] == 3 and got["counts"]["waiting"] == 0
    # One priority level: the set is in the order the jobs entered it, so this is exact.
    assert HOUR <= got["oldest_waiting_age_ms"] < HOUR + 60_000
    assert got["oldest_waiting_is_bound"] is False


def test_a_lifo_job_at_the_tail_does_not_make_the_age_younger(logged_in, prefixed_queues):
    add(
        prefixed_queues,
        "stacked",
        {"name": "old", "data": {}, "opts": {"timestamp": now_ms() - HOUR}},
        {"name": "middle", "data": {}, "opts": {"timestamp": now_ms() - 60_000}},
        {"name": "urgent", "data": {}, "opts": {"lifo": True}},
    )
    got = oldest(logged_in, prefixed_queues, "stacked")
    assert got["counts"]["waiting"] == 3
    # The tail is the lifo job (next to run); the first LPUSHed job behind it is the oldest.
    assert HOUR <= got["oldest_waiting_age_ms"] < HOUR + 60_000
    assert got["oldest_waiting_is_bound"] is False
