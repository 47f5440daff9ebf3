"""A failover under a running monitor: real Node BullMQ 6.7 workers process jobs through ioredis'
Sentinel client, the primary is killed (SIGKILL, as a crash), the Sentinels promote the replica,
and the monitor follows the new primary: its events follower reconnects there and resumes from
its stream cursors, the live counts converge to ``getJobCounts()`` read through the Sentinels,
and an action posted through the API (a retry) runs on the new primary. A Sentinel set of the
test's own (a primary, a replica, three Sentinels): the session's keeps its primary."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from dashboard.core import dash_redis, state_store
from queues.connections import ConnectionSpec
from queues.keys import QueueRef
from tests.support.accounts import token_for, user_with
from tests.support.live import monitor_thread
from tests.support.node_workers import NodeWorkers
from tests.support.redis_db import point_at
from tests.support.redis_sentinel import RedisSentinelSet
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.sentinel, pytest.mark.node, pytest.mark.xdist_group("redis-sentinel")]

NAME = "sentinel"


@pytest.fixture
def sentinels():
    own = RedisSentinelSet()
    yield own
    own.stop()


def published_counts() -> dict[str, dict]:
    state = state_store.read_state(dash_redis.dashboard_redis()) or {"queues": []}
    return {q["name"]: q["counts"] for q in state["queues"] if q["connection"] == NAME}


def converged(node: NodeWorkers, *queues: str) -> bool:
    truth = {name: node.send("counts", queue=name) for name in queues}
    shown = published_counts()
    return all(shown.get(name) == counts for name, counts in truth.items())


def operator_token() -> str:
    # user_with creates the role's group if a transactional test before emptied the tables.
    return token_for(user_with("operator", username="sentinel-op"))


@pytest.mark.django_db(transaction=True)
def test_the_monitor_follows_a_failover_and_an_action_runs_on_the_new_primary(client, settings, live_setup, sentinels):
    point_at(settings, ConnectionSpec(NAME, sentinels.url(), ("bull",)))
    with NodeWorkers(sentinels.url(), "bull") as node:
        node.send("add", queue="broken", jobs=[{"name": "boom", "opts": {"attempts": 1}}] * 3)
        node.send("start", id="fail", queue="broken", fail=True)
        node.send("drain", queue="broken", count=3)
        node.send("stop", id="fail")
        node.send("start", id="ok", queue="work", concurrency=2)
        with monitor_thread(tick=0.3, name="sentinel-monitor", lock_ttl_ms=2000) as monitor:
            node.send("add", queue="work", jobs=[{"name": "before", "data": {"i": i}} for i in range(20)])
            wait_for(lambda: converged(node, "work", "broken"), timeout=20)
            follower = monitor.intake.followers[NAME]
            wait_for(lambda: follower.follower is not None and follower.follower.last_ids)

            # Jobs in flight while the primary dies: the workers keep going on the new one.
            node.send("add", queue="work", jobs=[{"name": "during", "data": {"i": i}} for i in range(30)])
            old = sentinels.kill_primary()
            new = sentinels.wait_promoted(old, timeout=15)
            node.send("add", queue="work", jobs=[{"name": "after", "data": {"i": i}} for i in range(10)])

            # The follower reconnected to the new primary (redis-py's Sentinel pool asked the
            # Sentinels again) and reads its events from the cursors it kept.
            def following_new_primary():
                reader = follower.follower
                return reader is not None and reader.client.connection_pool.master_address == ("127.0.0.1", new)

            wait_for(following_new_primary, timeout=20)
            seen = monitor.intake.events_seen
            node.send("add", queue="work", jobs=[{"name": "followed"}])
            wait_for(lambda: monitor.intake.events_seen > seen, timeout=10)
            wait_for(lambda: converged(node, "work", "broken"), timeout=20)
            assert node.send("counts", queue="work")["completed"] >= 20

            # An action after the failover goes to the new primary.
            failed = node.send("counts", queue="broken")["failed"]
            token = operator_token()
            with sentinels.primary() as primary:
                job_id = primary.zrange(QueueRef(NAME, "bull", "broken").key("failed"), 0, 0)[0].decode()
            response = client.post(
                reverse("api_job_action", args=[NAME, "bull", "broken", "retry", job_id]),
                json.dumps({}),
                content_type="application/json",
                HTTP_AUTHORIZATION=f"Bearer {token}",
            )
            assert response.status_code == 200, response.content
            assert node.send("counts", queue="broken")["failed"] == failed - 1
            wait_for(lambda: converged(node, "work", "broken"), timeout=20)
