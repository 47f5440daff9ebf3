"""The oldest waiting job's age the monitor publishes (what /metrics, history, health and the
alert rules read), against real Node BullMQ 6.7: exact from the `waiting` events it follows,
so a day-delayed job promoted seconds ago is seconds old; and on a quiet queue the published
figure equals a fresh read of Redis (queues.ready_since, queues.live_counts)."""
# Literal `bull:` keys kept: a monitor discovers every queue of its (whole, leased) database.

from __future__ import annotations

import json
import time

import pytest
from django.urls import reverse

from dashboard.core import dash_redis, state_store
from tests.support.live import monitor_thread
from tests.support.servers import node_available, run_node
from tests.support.waiting import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="needs Node.js and npm"),
]

HOUR = 3_600_000
DAY = 24 * HOUR
QUIET_READ_S = 3  # a queue without events for a second gets its exact read at the next tick


@pytest.fixture(autouse=True)
def node_tz(monkeypatch):
    """Node runs 5:45 off UTC: a time read as local, or an offset taken for an age, shows."""
    monkeypatch.setenv("TZ", "Asia/Kathmandu")


@pytest.fixture
def monitor(live_setup, settings):
    """A leading monitor whose periodic snapshot is out of reach: only events and the quiet
    read move its figures."""
    settings.QUEUEWATCH_RECONCILE_MS = 600_000
    with monitor_thread(tick=0.3, name="oldest-monitor") as running:
        yield running


def following(monitor, name: str) -> None:
    wait_for(lambda: name in {q.name for q in getattr(monitor, "applied_cursors", {})} and published(name))


def published(name: str) -> dict | None:
    state = state_store.read_state(dash_redis.dashboard_redis()) or {"queues": []}
    return next((q for q in state["queues"] if q["name"] == name), None)


def ready_since(entry: dict) -> int | None:
    age = entry["oldest_waiting_age_ms"]
    return None if age is None else entry["taken_at"] - age


def add(url: str, name: str, *jobs: dict) -> list[str]:
    return run_node("toolbox.mjs", "add", url, name, json.dumps(jobs))["ids"]


def now_ms() -> int:
    return int(time.time() * 1000)


def test_a_day_delayed_job_promoted_seconds_ago_is_seconds_old(live_setup, redis_url, settings, monitor):
    (job,) = add(redis_url, "later", {"name": "d", "data": {}, "opts": {"timestamp": now_ms() - DAY, "delay": DAY}})
    following(monitor, "later")
    promoted_at = run_node("toolbox.mjs", "promote", redis_url, "later", json.dumps([job]))["promotedAt"]

    def promoted():
        entry = published("later")
        return entry if entry and entry["counts"]["waiting"] == 1 else None

    first = wait_for(promoted)
    time.sleep(QUIET_READ_S)  # the quiet read has replaced the estimate since
    settled = published("later")
    for entry in (first, settled):
        assert entry["oldest_waiting_age_ms"] < 30_000 and entry.get("oldest_waiting_is_bound") is False
        assert abs(ready_since(entry) - promoted_at) < 2_000  # ready since its promotion
    # The estimate from events and the figure after the exact read agree.
    assert ready_since(first) == ready_since(settled)


def test_on_a_quiet_queue_the_published_age_equals_a_fresh_read(live_setup, redis_url, client, user, monitor):
    an_hour_ago = now_ms() - HOUR
    add(
        redis_url,
        "quiet",
        {"name": "old", "data": {}, "opts": {"timestamp": an_hour_ago}},
        {"name": "urgent", "data": {}, "opts": {"lifo": True}},
    )
    add(redis_url, "ranked", *({"name": "p", "data": {}, "opts": {"priority": 3}} for _ in range(2)))
    following(monitor, "quiet")
    time.sleep(QUIET_READ_S)
    client.force_login(user)
    for name in ("quiet", "ranked"):
        fresh = client.get(reverse("api_queue", args=["default", "bull", name])).json()
        entry = wait_for(lambda name=name: published(name))
        assert entry["oldest_waiting_age_ms"] is not None, name  # prioritized only: an age too
        assert ready_since(entry) == ready_since(fresh), name
        assert entry.get("oldest_waiting_is_bound") is fresh.get("oldest_waiting_is_bound") is False, name
    assert ready_since(published("quiet")) == an_hour_ago  # the lifo job did not make it younger
