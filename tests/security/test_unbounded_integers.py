"""Integers without bounds in what an operator sends: ``10**30`` as a job's or a scheduler's
option used to give a 500, and ``every=2**62`` was stored as float text Node BullMQ reads as a
few milliseconds. Every whole number is now read by one bounded reader: at most 2⁵³−1 (what a
JavaScript number holds exactly), durations at most ten years, and a clear 400 otherwise."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from tests.support.accounts import token_for, user_with

pytestmark = pytest.mark.django_db

HUGE = 10**30


def api(client, url: str, body, token: str):
    return client.post(url, json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def _keys(r, prefix: str) -> list:
    return sorted(r.keys(f"{prefix}:*"))


@pytest.fixture
def queue(prefixed_queues):
    """Queue ``q``, known by its meta hash."""
    prefixed_queues.client.hset(f"{prefixed_queues.prefix}:q:meta", mapping={"opts.maxLenEvents": 10000})
    return prefixed_queues


@pytest.mark.parametrize(
    "opts",
    [
        {"delay": HUGE},
        {"attempts": HUGE},
        {"priority": HUGE},
        {"backoff": HUGE},
        {"backoff": {"type": "fixed", "delay": HUGE}},
        {"deduplication": {"id": "d", "ttl": HUGE}},
        {"removeOnComplete": HUGE},
        {"removeOnFail": {"age": HUGE}},
        {"delay": 1e300},
    ],
)
def test_a_job_option_beyond_its_bound_is_refused_by_the_api(client, queue, opts):
    prefixed_queues = queue
    token = token_for(user_with("operator"))
    before = _keys(prefixed_queues.client, prefixed_queues.prefix)
    response = api(client, reverse("api_jobs", args=prefixed_queues.args("q")), {"name": "x", "opts": opts}, token)
    assert response.status_code == 400, response.content
    assert "must be between" in response.json()["message"]
    assert _keys(prefixed_queues.client, prefixed_queues.prefix) == before


@pytest.mark.parametrize("field", ["delay", "priority", "attempts", "backoff_delay", "deduplication_ttl"])
def test_a_job_option_beyond_its_bound_is_refused_by_the_add_form(client, queue, field):
    prefixed_queues = queue
    client.force_login(user_with("operator"))
    fields = {"name": "x", "data": "{}", field: str(HUGE)}
    if field == "backoff_delay":
        fields["backoff_type"] = "fixed"
    if field == "deduplication_ttl":
        fields["deduplication_id"] = "d"
    response = client.post(
        reverse("queue_action", args=[*prefixed_queues.args("q"), "add"]), fields, HTTP_HX_REQUEST="true"
    )
    assert b'class="action-result refused"' in response.content and b"must be between" in response.content
    assert not prefixed_queues.client.exists(f"{prefixed_queues.prefix}:q:1")


@pytest.fixture
def scheduler(prefixed_queues):
    """Scheduler ``s`` on queue ``q`` as BullMQ 6 stores it, every minute."""
    r, p = prefixed_queues.client, prefixed_queues.prefix
    r.hset(f"{p}:q:meta", mapping={"opts.maxLenEvents": 10000})
    r.hset(f"{p}:q:repeat:s", mapping={"name": "tick", "every": 60000, "ic": 1})
    r.zadd(f"{p}:q:repeat", {"s": 1_700_000_000_000})
    return prefixed_queues


@pytest.mark.parametrize(
    "repeat",
    [
        {"every": HUGE},
        {"every": 2**62},
        {"every": 60000, "limit": HUGE},
        {"every": 60000, "offset": HUGE},
        {"every": 60000, "startDate": HUGE},
        {"every": 60000, "endDate": HUGE},
        {"every": 60000, "opts": {"attempts": HUGE}},
        {"every": 60000, "opts": {"priority": HUGE}},
        {"every": 60000, "opts": {"backoff": {"type": "exponential", "delay": HUGE}}},
        {"every": 60000, "opts": {"stackTraceLimit": HUGE}},
        {"every": 60000, "opts": {"timestamp": HUGE}},
    ],
)
def test_a_scheduler_number_beyond_its_bound_is_refused_and_changes_nothing(client, scheduler, repeat):
    token = token_for(user_with("admin"))
    url = reverse("api_queue_action", args=[*scheduler.args("q"), "edit-scheduler"])
    before = scheduler.client.hgetall(f"{scheduler.prefix}:q:repeat:s")
    response = api(client, url, {"id": "s", "name": "tick", **repeat}, token)
    assert response.status_code == 400, response.content
    assert "must be between" in response.json()["message"]
    assert scheduler.client.hgetall(f"{scheduler.prefix}:q:repeat:s") == before


def test_the_scheduler_form_refuses_a_huge_every_with_a_message(client, scheduler):
    client.force_login(user_with("operator"))
    response = client.post(
        reverse("queue_action", args=[*scheduler.args("q"), "edit-scheduler"]),
        {"id": "s", "name": "tick", "every": str(2**62), "data": "{}"},
        HTTP_HX_REQUEST="true",
    )
    assert b'class="action-result refused"' in response.content and b"must be between" in response.content
    assert scheduler.client.hget(f"{scheduler.prefix}:q:repeat:s", "every") == b"60000"


def test_the_largest_accepted_interval_is_stored_as_written(client, scheduler):
    token = token_for(user_with("admin"))
    url = reverse("api_queue_action", args=[*scheduler.args("q"), "edit-scheduler"])
    day = 86_400_000
    response = api(client, url, {"id": "s", "name": "tick", "every": 3650 * day}, token)
    assert response.status_code == 200, response.content
    assert scheduler.client.hget(f"{scheduler.prefix}:q:repeat:s", "every") == str(3650 * day).encode()
