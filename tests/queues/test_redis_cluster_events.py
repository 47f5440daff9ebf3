"""Following events on a Redis Cluster (``queues.redis.cluster_events``): one XREAD per hash-slot
group on the primary owning it, against queues and jobs real Node BullMQ 6.7 writes through
ioredis' ``Cluster``; and a running monitor whose live counts follow those events."""

from __future__ import annotations

import contextlib

import pytest

from queues.connections import ConnectionSpec
from queues.keys import QueueRef
from queues.redis.cluster_events import ClusterEventsFollower
from queues.redis.snapshot import queue_slot
from queues.sources.factory import source_for
from tests.support.cluster_queues import NAME, PREFIXES, build_queues, node_does, published_counts
from tests.support.live import monitor_thread
from tests.support.redis_db import point_at
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.node, pytest.mark.xdist_group("redis-cluster")]

Q2 = QueueRef(NAME, "bull", "{q2}")
ORDERS = QueueRef(NAME, "{app}", "orders")


@pytest.fixture(scope="module")
def built(redis_cluster):
    return build_queues(redis_cluster)


@pytest.fixture
def source(redis_cluster, built):
    source = source_for(ConnectionSpec(NAME, redis_cluster.url, PREFIXES))
    yield source
    source.close()


def owner(redis_cluster, queue: QueueRef) -> str:
    with contextlib.closing(redis_cluster.client()) as client:
        return client.nodes_manager.get_node_from_slot(queue_slot(queue)).name


def read_until(follower, wanted: int) -> list:
    seen: list = []

    def enough():
        events, gaps = follower.read()
        assert not gaps
        seen.extend(events)
        return len(seen) >= wanted

    wait_for(enough, timeout=20)
    return seen


def test_the_follower_reads_each_slot_group_on_the_primary_owning_it(source, built, redis_cluster):
    assert owner(redis_cluster, Q2) != owner(redis_cluster, ORDERS)  # two primaries, two slots
    follower = source.events_follower(block_ms=300)
    assert isinstance(follower, ClusterEventsFollower)
    assert sorted(follower.follow(list(built)), key=str) == sorted(built, key=str)
    assert set(follower.last_ids) == set(built)
    before = dict(follower.last_ids)
    # What happened just before following: the tail of the stream up to the cursor.
    recent = follower.recent([ORDERS], count=5)
    assert recent and {e.queue for e in recent} == {ORDERS} and recent[-1].stream_id == before[ORDERS]

    node_does(redis_cluster, "add", Q2, 2)
    node_does(redis_cluster, "add", ORDERS, 1)
    events = read_until(follower, 3)
    added = [(e.queue, e.name) for e in events if e.name == "added"]
    assert sorted(added, key=str) == sorted([(Q2, "added"), (Q2, "added"), (ORDERS, "added")], key=str)
    assert follower.last_ids[Q2] != before[Q2] and follower.last_ids[ORDERS] != before[ORDERS]
    # One connection per primary, however many slot groups (six queues, six slots, three primaries).
    assert len(follower._clients) == 3


class _WrongOwnerFirst:
    """The source's slot map, except that it first names the wrong primary for every slot (as
    after a resharding the follower has not seen): its XREAD meets ``MOVED``."""

    def __init__(self, real, primaries: list[str]):
        self.real, self.primaries, self.refreshed = real, primaries, 0

    def owner(self, slot: int) -> str:
        right = self.real.owner(slot)
        if self.refreshed:
            return right
        return next(p for p in self.primaries if p != right)

    def connect(self, node: str):
        return self.real.connect(node)

    def refresh(self) -> None:
        self.refreshed += 1
        self.real.refresh()


def test_a_moved_slot_makes_the_follower_regroup_and_keep_its_cursors(source, built, redis_cluster):
    real = source.events_follower(block_ms=200)
    with contextlib.closing(redis_cluster.client()) as client:
        primaries = [n.name for n in client.get_primaries()]
    owners = _WrongOwnerFirst(real.owners, primaries)
    follower = ClusterEventsFollower(owners, block_ms=200)
    follower.follow([Q2])
    cursor = follower.last_ids[Q2]
    assert follower.read() == ([], {})  # MOVED: the map is read again, nothing lost
    assert owners.refreshed == 1 and follower.last_ids[Q2] == cursor
    node_does(redis_cluster, "add", Q2, 1)
    assert [e.name for e in read_until(follower, 1) if e.name == "added"] == ["added"]


class _StillRedirected(_WrongOwnerFirst):
    """The source's slot map, naming the wrong primary for every slot for as long as ``stale``
    is set, however often it is read again (a slot mid-migration: its keys answer ``ASK``
    while the map still names the old owner)."""

    stale = True

    def owner(self, slot: int) -> str:
        right = self.real.owner(slot)
        return next(p for p in self.primaries if p != right) if self.stale else right


def test_while_a_slot_still_redirects_the_follower_waits_with_its_cursor_and_raises_nothing(
    source, built, redis_cluster
):
    real = source.events_follower(block_ms=200)
    real.follow([Q2])
    cursor = real.last_ids[Q2]
    with contextlib.closing(redis_cluster.client()) as client:
        primaries = [n.name for n in client.get_primaries()]
    owners = _StillRedirected(real.owners, primaries)
    follower = ClusterEventsFollower(owners, block_ms=200)
    assert follower.follow([Q2], {Q2: cursor}) == [Q2]  # redirected: not an error
    for _ in range(3):
        assert follower.read() == ([], {})
    assert owners.refreshed >= 4 and follower.last_ids == {Q2: cursor}
    node_does(redis_cluster, "add", Q2, 1)  # while the map is still wrong
    owners.stale = False
    # From the kept cursor: the job added while redirected is not lost.
    assert [e.name for e in read_until(follower, 1) if e.name == "added"] == ["added"]


@pytest.mark.django_db(transaction=True)
def test_a_running_monitor_follows_cluster_queues_by_their_events(settings, live_setup, redis_cluster, built):
    point_at(settings, ConnectionSpec(NAME, redis_cluster.url, PREFIXES))
    settings.QUEUEWATCH_RECONCILE_MS = 600_000  # no periodic exact read: only events move the counts
    with monitor_thread(tick=0.3, name="cluster-events-monitor", lock_ttl_ms=2000) as monitor:
        wait_for(lambda: all(published_counts().get((q.prefix, q.name)) == built[q] for q in (Q2, ORDERS)))
        assert monitor.intake.follows_events(NAME)
        seen = monitor.intake.events_seen
        q2_after = node_does(redis_cluster, "add", Q2, 3)
        orders_after = node_does(redis_cluster, "work", ORDERS, 2)
        wait_for(lambda: published_counts()[("bull", "{q2}")] == q2_after)
        wait_for(lambda: published_counts()[("{app}", "orders")] == orders_after)
        # 3 added + (at least) 2 jobs taken and completed: every one arrived as an event.
        assert monitor.intake.events_seen - seen >= 3 + 2 * 2
        assert monitor.intake.gaps_seen == 0
    built[Q2], built[ORDERS] = q2_after, orders_after
