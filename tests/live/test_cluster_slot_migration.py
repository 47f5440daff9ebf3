"""A watched queue's hash slot moves to another primary of the Redis Cluster while real Node
BullMQ 6.7 workers (ioredis ``Cluster``) keep adding and working its jobs, a monitor runs and a
logged-in websocket session watches the queue page: the monitor follows the queue on its new
owner without a restart, and what it shows converges to Node's ``getJobCounts()``."""
# Literal `bull:` keys kept: a Redis Cluster of its own, where Node BullMQ uses its default prefix.

from __future__ import annotations

import contextlib
import re
import threading
import time

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.urls import reverse

from dashboard.asgi import application
from queues.connections import ConnectionSpec
from queues.keys import QueueRef
from queues.redis.snapshot import queue_slot
from tests.support.cluster_queues import NAME, published_counts
from tests.support.live import monitor_thread, session_headers
from tests.support.node_workers import NodeWorkers
from tests.support.redis_db import point_at
from tests.support.waiting import receive_until, wait_for

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.node,
    pytest.mark.xdist_group("redis-cluster"),  # the session's cluster lives on one worker
    pytest.mark.django_db(transaction=True),
    pytest.mark.asyncio,
]

QUEUE = QueueRef(NAME, "bull", "{moving}")


def delete_queue_keys(cluster) -> None:
    with contextlib.closing(cluster.client()) as client:
        for key in client.scan_iter(match=f"bull:{QUEUE.name}:*", target_nodes=client.PRIMARIES):
            client.delete(key)


@pytest.fixture
def moving_queue(settings, live_setup, redis_cluster):
    """The app and monitor watch prefix ``bull`` on the session's cluster; ``{moving}``'s slot
    is put back on the primary it started on afterwards (the next cluster test expects the
    slot map ``redis-cli --cluster create`` made)."""
    point_at(settings, ConnectionSpec(NAME, redis_cluster.url, ("bull",)))
    settings.QUEUEWATCH_RECONCILE_MS = 600_000  # no periodic exact read: events move the counts
    delete_queue_keys(redis_cluster)
    slot = queue_slot(QUEUE)
    home = redis_cluster.owner_of(slot)
    yield slot
    for port in redis_cluster.primary_ports():  # a move the test left half-done is abandoned
        with redis_cluster.node_client(port) as node:
            node.execute_command("CLUSTER", "SETSLOT", slot, "STABLE")
    if redis_cluster.owner_of(slot) != home:
        redis_cluster.move_slot(slot, home)
    delete_queue_keys(redis_cluster)


def completed_shown(html: str, completed: int) -> bool:
    return 'class="queue-live"' in html and bool(
        re.search(rf'completed <span class="count"><data class="qw-num[^"]*" value="{completed}">', html)
    )


class Adder(threading.Thread):
    """A producer adding a job every few milliseconds through its own Node process until
    stopped. Its adds meet the half-moved slot: ioredis follows ASK and retries TRYAGAIN, and
    gives up after 16 redirections ("Too many Cluster redirections"); a refused add is counted
    and tried again, as a producer would."""

    def __init__(self, url: str):
        super().__init__(daemon=True)
        self.node = NodeWorkers(url, "bull")
        self.added = 0
        self.refused: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.02):
            try:
                self.node.send("add", queue=QUEUE.name, jobs=[{"name": "during", "data": {"n": self.added}}])
                self.added += 1
            except RuntimeError as exc:
                if self.node.proc.poll() is not None:  # Node itself is gone: nothing to retry
                    self.refused.append(f"exited: {exc}")
                    return
                self.refused.append(str(exc))


async def test_a_slot_moved_during_a_live_session_is_followed_on_its_new_owner(
    moving_queue, redis_cluster, client, user, caplog
):
    slot = moving_queue
    home = await sync_to_async(redis_cluster.owner_of)(slot)
    target = next(p for p in await sync_to_async(redis_cluster.primary_ports)() if p != home)
    node = await sync_to_async(NodeWorkers)(redis_cluster.url, "bull")
    adder = None
    try:
        await sync_to_async(node.send)("add", queue=QUEUE.name, jobs=[{"name": "before"}] * 5)
        before = await sync_to_async(node.send)("counts", queue=QUEUE.name)
        with monitor_thread(tick=0.3, name="slot-move-monitor", lock_ttl_ms=2000) as monitor:
            await sync_to_async(wait_for)(lambda: published_counts().get((QUEUE.prefix, QUEUE.name)) == before, 20)
            assert monitor.intake.follows_events(NAME)

            headers = await sync_to_async(session_headers)(client, user)
            path = reverse("ws_queue", urlconf="dashboard.routing", args=[NAME, QUEUE.prefix, QUEUE.name])
            comm = WebsocketCommunicator(application, path, headers=headers)
            assert (await comm.connect(timeout=5))[0]
            await receive_until(comm, lambda h: 'class="queue-live"' in h)

            # Workers take jobs and an adder keeps adding while the slot moves, key batch by
            # key batch (a few keys at a time: many commands meet the slot half-moved).
            await sync_to_async(node.send)("start", id="w1", queue=QUEUE.name)
            adder = Adder(redis_cluster.url)
            adder.start()
            await sync_to_async(wait_for)(lambda: adder.added >= 3)
            # A slow migration, as of a large slot: 0.1 s per batch, and once the events stream
            # has moved, 2.5 s more (over twice the monitor's blocking read) with the slot half
            # moved: reads of the stream answer ASK while the slot map still names the old owner.
            # (The pauses are the behaviour under test.)
            stream = QUEUE.key("events").encode()
            held = []

            def slowly() -> None:
                time.sleep(0.1)
                if not held and stream not in redis_cluster.keys_in_slot(home, slot):
                    held.append(stream)
                    time.sleep(2.5)

            await sync_to_async(redis_cluster.move_slot, thread_sensitive=False)(
                slot, target, batch=2, between_batches=slowly
            )
            assert held
            assert await sync_to_async(redis_cluster.owner_of)(slot) == target
            events_when_moved, added_when_moved = monitor.intake.events_seen, adder.added
            await sync_to_async(wait_for)(lambda: adder.added >= added_when_moved + 5, 30)  # on the new owner only
            adder.stop.set()
            await sync_to_async(adder.join)(30)
            assert not [r for r in adder.refused if r.startswith("exited")], adder.refused
            total = 5 + adder.added
            await sync_to_async(node.send)("drain", queue=QUEUE.name, count=total)
            after = await sync_to_async(node.send)("counts", queue=QUEUE.name)
            assert after["completed"] == total and after["waiting"] == 0

            # The queue's keys are all on the new owner, and nothing is left on the old one.
            assert await sync_to_async(redis_cluster.keys_in_slot)(home, slot) == []
            assert stream in await sync_to_async(redis_cluster.keys_in_slot)(target, slot)
            # The same monitor converges to Node's counts, live in the session.
            await sync_to_async(wait_for)(lambda: published_counts().get((QUEUE.prefix, QUEUE.name)) == after, 20)
            await receive_until(comm, lambda h: completed_shown(h, total), timeout=20)
            # ...having read the queue's events from the new owner: each job added after the
            # move was added, made active and completed there.
            # (The counts can converge from an exact read first: on a loaded machine the follower
            # may still be reconnecting to the new owner. Its events must follow.)
            wanted = 3 * (adder.added - added_when_moved)
            await sync_to_async(wait_for)(lambda: monitor.intake.events_seen - events_when_moved >= wanted, 20)
            assert monitor.intake.follows_events(NAME)
            assert monitor.intake.gaps_seen == 0
            # A resharding is no outage: the connection was never reported lost.
            assert not [r.getMessage() for r in caplog.records if "lost" in r.getMessage()]
            await comm.disconnect()
    finally:
        if adder is not None:
            adder.stop.set()
            adder.join(30)
            adder.node.close()
        node.close()
