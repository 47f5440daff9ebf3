"""A connection of a kind that offers no facets (the recipe's in-memory kind) beside a Redis
connection, under a running monitor: the Redis queues keep their live figures, and the other
kind's missing capabilities show as "not offered" instead of stopping the monitor's loop."""

from __future__ import annotations

import logging

import pytest
from django.urls import reverse

from dashboard.core import dash_redis, state_store
from queues.connections import ConnectionSpec
from queues.keys import QueueRef
from tests.support.live import monitor_thread
from tests.support.memory_source import STORED, register_memory_kind
from tests.support.redis_db import point_at
from tests.support.seeding import seed_failed
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

ORDERS = QueueRef("default", "bull", "orders")


def state_counts() -> dict[tuple[str, str], dict]:
    state = state_store.read_state(dash_redis.dashboard_redis()) or {"queues": []}
    return {(q["connection"], q["name"]): q["counts"] for q in state["queues"]}


def test_redis_queues_stay_live_beside_a_kind_without_facets(
    live_setup, redis_db, settings, monkeypatch, caplog, logged_in
):
    register_memory_kind(monkeypatch)
    point_at(
        settings, ConnectionSpec("default", redis_db.url, ("bull",)), ConnectionSpec("shop", "memory://shop", ("bull",))
    )
    seed_failed(live_setup, ORDERS, 3)
    live_setup.hset(ORDERS.key("meta"), "opts.maxLenEvents", 10000)  # discovered like a BullMQ queue
    with (
        caplog.at_level(logging.WARNING, logger="queuewatch.monitor"),
        monitor_thread(tick=0.3, name="two-kinds", lock_ttl_ms=2000) as monitor,
    ):
        wait_for(lambda: state_counts().get(("default", "orders"), {}).get("failed") == 3)
        # Both kinds are published, the in-memory one with its own figures (a kind discovered
        # whole is discovered on a thread: its list comes a step later).
        wait_for(lambda: state_counts().get(("shop", "orders"), {}).get("failed") == STORED["orders"]["failed"])
        # Live: a change on the Redis side reaches the published figures while the loop runs.
        seed_failed(live_setup, ORDERS, 5)
        wait_for(lambda: state_counts()[("default", "orders")]["failed"] == 5)
        ticks = monitor.ticks
        wait_for(lambda: monitor.ticks >= ticks + 3)
    restarts = [r for r in caplog.records if "restarting the leader loop" in r.getMessage()]
    assert not restarts, restarts[0].exc_text if restarts[0].exc_text else restarts[0].getMessage()

    # The in-memory kind's job list is not offered: said on the page, not an error.
    page = logged_in.get(reverse("queue", args=["shop", "bull", "orders"]))
    assert page.status_code == 200, page.status_code
    assert "Connection “shop” (memory) does not offer job lists and job pages." in page.content.decode()
