"""The Redis Cluster kind against queues real Node BullMQ 6.7 built on a real Cluster (3
primaries, 3 replicas; tests/node/cluster_fixture.mjs through ioredis' ``Cluster``): discovery
on every primary, counts equal to ``getJobCounts()``, job lists and pages, the overview page, the
API and a running monitor, with the dashboard's own Redis on the session's single node."""

from __future__ import annotations

import contextlib
import json

import pytest

from queues.connections import ConnectionSpec
from queues.data_search import DataQuery
from queues.keys import QueueRef
from queues.redact import Redactor
from queues.redis.snapshot import queue_slot
from queues.sources.factory import source_for
from tests.support.cluster_queues import NAME, PREFIXES, build_queues, node_does, published_counts
from tests.support.live import assert_overview_and_api_list, monitor_thread
from tests.support.redis_db import point_at
from tests.support.waiting import wait_for

# One worker holds the session's cluster (6 processes): every cluster test runs there.
pytestmark = [pytest.mark.cluster, pytest.mark.node, pytest.mark.xdist_group("redis-cluster")]


@pytest.fixture(scope="module")
def built(redis_cluster):
    """The queues Node built, and what ``getJobCounts()`` said of each."""
    return build_queues(redis_cluster)


@pytest.fixture
def source(redis_cluster, built):
    source = source_for(ConnectionSpec(NAME, redis_cluster.url, PREFIXES))
    yield source
    source.close()


def test_discovery_finds_every_queue_on_every_primary(source, built, redis_cluster):
    assert source.discover() == sorted(built, key=lambda q: (PREFIXES.index(q.prefix), q.name))
    # The queues live on several primaries, so one node's SCAN would not have found them all.
    with contextlib.closing(redis_cluster.client()) as client:
        owners = {client.nodes_manager.get_node_from_slot(queue_slot(q)).name for q in built}
    assert len(owners) >= 2
    assert source.queue_exists(QueueRef(NAME, "bull", "{q1}"))
    assert not source.queue_exists(QueueRef(NAME, "bull", "{nope}"))


def names_on_primaries(cluster) -> dict[str, set[str]]:
    """Each connected client's user and the names its connections carry, on every primary."""
    names: dict[str, set[str]] = {}
    for port in cluster.primary_ports():
        with cluster.node_client(port) as node:
            for client in node.client_list():
                names.setdefault(client["user"], set()).add(client["name"])
    return names


def test_cluster_connections_are_named_where_allowed_and_work_where_not(source, built, redis_cluster):
    queues = source.discover()
    follower = source.events_follower(block_ms=100)
    follower.follow(queues)
    follower.read()
    assert "queuewatch" in names_on_primaries(redis_cluster)["default"]
    # An ACL user without client|setname (as on a hosted Redis) still discovers, reads and follows.
    for port in redis_cluster.ports:
        with redis_cluster.node_client(port) as node:
            node.acl_setuser(
                "nameless",
                enabled=True,
                passwords=["+pw"],
                keys=["*"],
                channels=["*"],
                commands=["+@all", "-client|setname"],
            )
    nameless = source_for(ConnectionSpec("nameless", redis_cluster.url.replace("://", "://nameless:pw@", 1), PREFIXES))
    try:
        found = nameless.discover()
        assert [(q.prefix, q.name) for q in found] == [(q.prefix, q.name) for q in queues]
        assert [s.counts for s in nameless.snapshots(found)] == [built[q] for q in queues]
        follower = nameless.events_follower(block_ms=100)
        assert follower.follow(found) == found
        follower.read()
        assert names_on_primaries(redis_cluster)["nameless"] == {""}  # connected, never named
    finally:
        nameless.close()
        for port in redis_cluster.ports:
            with redis_cluster.node_client(port) as node:
                node.acl_deluser("nameless")


def test_snapshot_counts_equal_get_job_counts(source, built):
    queues = list(reversed(built))  # any order: answered in the order given
    snapshots = source.snapshots(queues)
    assert [s.queue for s in snapshots] == queues
    for snapshot in snapshots:
        assert snapshot.counts == built[snapshot.queue], snapshot.queue
        assert snapshot.last_event_id is not None and snapshot.oldest_waiting_ts is not None


def test_workers_are_read_per_node(source, built):
    assert source.workers(list(built)) == {q: [] for q in built}  # the fixture's workers are closed


def test_job_list_and_job_page_through_the_jobs_facet(source, built):
    orders = QueueRef(NAME, "{app}", "orders")
    page = source.jobs.page(
        orders, "failed", page=1, page_size=25, name_filter="", scan_limit=1000, redactor=Redactor()
    )
    failed = [row.id for row in page.jobs]
    assert len(failed) == built[orders]["failed"]
    detail = source.jobs.detail(orders, failed[0], cap=10_000, redactor=Redactor())
    assert detail.failed_reason.startswith("boom ")
    assert source.jobs.exists(orders, failed[0])


def test_a_search_by_data_through_the_jobs_facet(source, built):
    orders = QueueRef(NAME, "{app}", "orders")
    failed = source.jobs.page(
        orders, "failed", page=1, page_size=25, name_filter="", scan_limit=1000, redactor=Redactor()
    )
    first = failed.jobs[0].id
    wanted = source.jobs.detail(orders, first, cap=10_000, redactor=Redactor()).data.text
    i = json.loads(wanted)["i"]
    found = source.jobs.search_data(
        orders,
        "failed",
        query=DataQuery.parse(f"i = {i}"),
        offset=0,
        scan_limit=1000,
        data_cap=10_000,
        redactor=Redactor(),
    )
    assert [j.id for j in found.matches] == [first] and found.complete and found.examined == built[orders]["failed"]


@pytest.fixture
def cluster_app(settings, redis_cluster, redis_db, built):
    """The app on the cluster connection; its own (dashboard) Redis on the session's node."""
    point_at(settings, ConnectionSpec(NAME, redis_cluster.url, PREFIXES))
    settings.QUEUEWATCH_DASHBOARD_REDIS_URL = redis_db.url
    yield built
    point_at(settings)


@pytest.mark.django_db
def test_overview_page_and_api_list_the_cluster_queues(client, user, cluster_app):
    assert_overview_and_api_list(client, user, cluster_app, NAME)


@pytest.mark.django_db(transaction=True)
def test_a_running_monitor_shows_live_counts_of_a_cluster_queue(settings, live_setup, redis_cluster, built):
    point_at(settings, ConnectionSpec(NAME, redis_cluster.url, PREFIXES))
    q3 = QueueRef(NAME, "bull", "{q3}")
    with monitor_thread(tick=0.3, name="cluster-monitor", lock_ttl_ms=2000):
        wait_for(lambda: published_counts().get(("bull", "{q3}")) == built[q3])
        after = node_does(redis_cluster, "add", q3, 4)
        assert after["waiting"] == built[q3]["waiting"] + 4
        wait_for(lambda: published_counts()[("bull", "{q3}")] == after)
    built[q3] = after  # what later tests of this module see


@pytest.mark.django_db
def test_a_queue_without_a_hash_tag_is_left_out_of_the_list_and_named_by_a_health_finding(
    settings, redis_cluster, redis_db, built
):
    from dashboard.health.checks import run_all

    # Keys BullMQ could not have written on a Cluster (a queue of a single node, copied over).
    legacy = QueueRef(NAME, "bull", "legacy")
    keys = (legacy.key("meta"), legacy.key("wait"))
    with contextlib.closing(redis_cluster.client()) as client:
        client.hset(keys[0], "opts.maxLenEvents", "10000")
        client.rpush(keys[1], "1")
    try:
        point_at(settings, ConnectionSpec(NAME, redis_cluster.url, PREFIXES))
        settings.QUEUEWATCH_DASHBOARD_REDIS_URL = redis_db.url
        (connection,) = run_all(connections=[NAME]).connections
        by_kind = {r.kind: r for r in connection.results}
        assert by_kind["connection.reachable"].status == "pass"
        finding = by_kind["redis-cluster.hash_slots"]
        assert finding.status == "fail" and finding.severity == "warning"
        assert finding.details == {"queues": [legacy.base.rstrip(":")]}
        assert legacy.base.rstrip(":") in finding.summary and "{bull}" in finding.fix
        source = source_for(ConnectionSpec(NAME, redis_cluster.url, PREFIXES))
        assert legacy not in source.discover()
        source.close()
        with contextlib.closing(redis_cluster.client()) as client:
            client.delete(*keys)
        point_at(settings, ConnectionSpec(NAME, redis_cluster.url, PREFIXES))  # a new source: discovers again
        (healthy,) = run_all(connections=[NAME]).connections
        assert {r.kind: r.status for r in healthy.results}["redis-cluster.hash_slots"] == "pass"
    finally:
        with contextlib.closing(redis_cluster.client()) as client:
            client.delete(*keys)
        point_at(settings)
