"""A running monitor with a Redis connection and a BullMQ-on-PostgreSQL one: the PostgreSQL
queue's counts are published and follow jobs Node adds (through its events follower and the
exact read once quiet), and the Redis queue stays live beside it."""

from __future__ import annotations

import logging

import pytest

from dashboard.core import dash_redis, state_store
from queues.connections import ConnectionSpec
from queues.keys import QueueRef
from tests.support.live import monitor_thread
from tests.support.redis_db import point_at
from tests.support.seeding import seed_failed
from tests.support.servers import run_node
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.node, pytest.mark.django_db(transaction=True)]

ORDERS = QueueRef("default", "bull", "orders")


def state_counts() -> dict[tuple[str, str], dict]:
    state = state_store.read_state(dash_redis.dashboard_redis()) or {"queues": []}
    return {(q["connection"], q["name"]): q["counts"] for q in state["queues"]}


def test_the_monitor_publishes_live_postgres_counts_beside_redis(live_setup, redis_db, postgres_db, settings, caplog):
    added = run_node("pg_fixture.mjs", "add", postgres_db.url, "pg-live", "3")
    assert added["counts"]["waiting"] == 3
    redis_side = ConnectionSpec("default", redis_db.url, ("bull",))
    point_at(settings, redis_side, ConnectionSpec("pg", postgres_db.url, ("bullmq",)))
    seed_failed(live_setup, ORDERS, 2)
    live_setup.hset(ORDERS.key("meta"), "opts.maxLenEvents", 10000)
    with (
        caplog.at_level(logging.WARNING, logger="queuewatch.monitor"),
        monitor_thread(tick=0.3, name="pg-beside-redis", lock_ttl_ms=2000),
    ):
        wait_for(lambda: state_counts().get(("pg", "pg-live"), {}).get("waiting") == 3)
        wait_for(lambda: state_counts().get(("default", "orders"), {}).get("failed") == 2)
        again = run_node("pg_fixture.mjs", "add", postgres_db.url, "pg-live", "2")
        wait_for(lambda: state_counts()[("pg", "pg-live")].get("waiting") == again["counts"]["waiting"] == 5)
        seed_failed(live_setup, ORDERS, 4)
        wait_for(lambda: state_counts()[("default", "orders")]["failed"] == 4)
    restarts = [r for r in caplog.records if "restarting the leader loop" in r.getMessage()]
    assert not restarts, restarts[0].exc_text or restarts[0].getMessage()
