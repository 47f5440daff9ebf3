"""The Redis Sentinel kind against queues real Node BullMQ 6.7 built through ioredis' Sentinel
client (tests/node/workers.mjs with a ``redis+sentinel://`` URL): discovery, counts equal to
``getJobCounts()``, job pages, the events follower, the overview page and the API, with the
dashboard's own Redis on the session's single node. The failover tests are in
test_redis_sentinel_failover.py."""

from __future__ import annotations

import pytest
import redis

from queues.connections import ConnectionSpec
from queues.keys import QueueRef
from queues.redact import Redactor
from queues.sources.factory import source_for
from queues.sources.redis_sentinel import RedisSentinelSource
from tests.support.live import assert_overview_and_api_list
from tests.support.node_workers import NodeWorkers
from tests.support.redis_db import point_at
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.sentinel, pytest.mark.node, pytest.mark.xdist_group("redis-sentinel")]

NAME = "sentinel"
PREFIX = "bull"
QUEUES = ("mail", "orders")


def build(node: NodeWorkers) -> dict[str, dict]:
    """Completed, failed, waiting, delayed and prioritized jobs, run by real workers; each
    queue's ``getJobCounts()``."""
    for name, finished in (("orders", 4), ("mail", 2)):
        node.send("add", queue=name, jobs=[{"name": "finish", "data": {"i": i}} for i in range(finished)])
        node.send("start", id=f"ok-{name}", queue=name)
        node.send("drain", queue=name, count=finished)
        node.send("stop", id=f"ok-{name}")
        node.send("add", queue=name, jobs=[{"name": "boom", "opts": {"attempts": 1}}])
        node.send("start", id=f"fail-{name}", queue=name, fail=True)
        node.send("drain", queue=name, count=finished + 1)
        node.send("stop", id=f"fail-{name}")
        node.send("add", queue=name, jobs=[{"name": "wait"}] * 3 + [{"name": "later", "opts": {"delay": 3_600_000}}])
        node.send("add", queue=name, jobs=[{"name": "urgent", "opts": {"priority": 5}}])
    return {name: node.send("counts", queue=name) for name in QUEUES}


@pytest.fixture(scope="module")
def node(redis_sentinel):
    redis_sentinel.flush()
    with NodeWorkers(redis_sentinel.url(), PREFIX) as workers:
        yield workers


@pytest.fixture(scope="module")
def built(node):
    return {QueueRef(NAME, PREFIX, name): counts for name, counts in build(node).items()}


@pytest.fixture
def source(redis_sentinel, built):
    source = source_for(ConnectionSpec(NAME, redis_sentinel.url(), (PREFIX,)))
    yield source
    source.close()


def test_discovery_and_counts_through_the_sentinels_equal_get_job_counts(source, built):
    assert isinstance(source, RedisSentinelSource)
    assert source.discover() == sorted(built)
    snapshots = source.snapshots(list(built))
    for snapshot in snapshots:
        assert snapshot.counts == built[snapshot.queue], snapshot.queue
        assert snapshot.last_event_id is not None
    assert built[QueueRef(NAME, PREFIX, "orders")]["completed"] == 4  # the fixture did run workers
    assert source.workers(list(built)) == {q: [] for q in built}  # every worker is closed


def test_connections_to_the_primary_are_named_where_allowed_and_work_where_not(source, built, redis_sentinel):
    source.discover()  # opens a pooled connection to the primary
    names = [c.get("name") for c in redis_sentinel.primary().client_list()]
    assert "queuewatch" in names
    # A primary refusing CLIENT SETNAME (an ACL user without it, a hosted Redis) still serves.
    admin = redis_sentinel.primary()
    admin.acl_setuser("nameless", enabled=True, passwords=["+pw"], keys=["*"], commands=["+@all", "-client|setname"])
    try:
        url = redis_sentinel.url().replace("redis+sentinel://", "redis+sentinel://nameless:pw@", 1)
        nameless = source_for(ConnectionSpec("nameless", url, (PREFIX,)))
        assert {q.name for q in nameless.discover()} == {q.name for q in source.discover()}
        nameless.close()
    finally:
        admin.acl_deluser("nameless")


def test_job_pages_and_server_checks_run_on_the_primary(source, built):
    orders = QueueRef(NAME, PREFIX, "orders")
    page = source.jobs.page(
        orders, "failed", page=1, page_size=25, name_filter="", scan_limit=1000, redactor=Redactor()
    )
    [failed] = [row.id for row in page.jobs]
    detail = source.jobs.detail(orders, failed, cap=10_000, redactor=Redactor())
    assert detail.failed_reason == "always fails"
    with source.errors():
        assert source._client.info("replication")["role"] == "master"


def test_the_events_follower_reads_new_events_from_the_primary(source, built, node):
    orders = QueueRef(NAME, PREFIX, "orders")
    follower = source.events_follower(block_ms=200)
    follower.follow([orders])
    [job_id] = node.send("add", queue="orders", jobs=[{"name": "fresh"}])["ids"]
    seen = []
    wait_for(lambda: seen.extend(follower.read()[0]) or any(e.fields.get("jobId") == job_id for e in seen))
    built[orders] = node.send("counts", queue="orders")  # what later tests of this module see
    follower.client.close()


@pytest.fixture
def sentinel_app(settings, redis_sentinel, redis_db, built):
    """The app on the Sentinel connection; its own (dashboard) Redis on the session's node."""
    point_at(settings, ConnectionSpec(NAME, redis_sentinel.url(), (PREFIX,)))
    settings.QUEUEWATCH_DASHBOARD_REDIS_URL = redis_db.url
    yield built
    point_at(settings)


@pytest.mark.django_db
def test_overview_page_and_api_list_the_queues(client, user, sentinel_app):
    assert_overview_and_api_list(client, user, sentinel_app, NAME)


def test_the_dashboards_own_redis_and_channel_layer_behind_sentinel(settings, redis_sentinel):
    """``QUEUEWATCH_DASHBOARD_REDIS_URL=redis+sentinel://…``: the documents and the channel layer
    live on the current primary (database 1 here, apart from the monitored queues)."""
    import asyncio

    from channels_redis.core import RedisChannelLayer

    from dashboard.core import dash_redis, state_store
    from queues.connections import channel_layer_hosts

    url = redis_sentinel.url(db=1)
    settings.QUEUEWATCH_DASHBOARD_REDIS_URL = url
    client = dash_redis.dashboard_redis()
    state_store.publish_state(client, {"queues": [], "by": "sentinel-test"})
    assert state_store.read_state(dash_redis.dashboard_redis()) == {"queues": [], "by": "sentinel-test"}
    with redis.Redis(port=redis_sentinel.primary_port(), db=1) as primary:
        assert primary.exists(state_store.STATE_KEY)

    async def round_trip():
        layer = RedisChannelLayer(hosts=channel_layer_hosts(url), prefix="queuewatch:asgi")
        channel = await layer.new_channel()
        await layer.send(channel, {"type": "hello", "text": "through the Sentinels"})
        received = await asyncio.wait_for(layer.receive(channel), 10)
        await layer.flush()
        return received

    assert asyncio.run(round_trip()) == {"type": "hello", "text": "through the Sentinels"}
