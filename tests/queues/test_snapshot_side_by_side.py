"""Snapshots of several servers read side by side (``read_snapshots_side_by_side``, what a
Cluster's primaries get): each server's result equals its own ``read_snapshots``, and when one
server fails the error is raised and no server's connection goes back to its pool half-read."""

from __future__ import annotations

import pytest
import redis

from queues.keys import QueueRef
from queues.redis.snapshot import read_snapshots, read_snapshots_side_by_side
from tests.support.servers import RedisServer


def queues_of(label: str, n: int) -> list[QueueRef]:
    return [QueueRef("default", "side", f"{{{label}{i}}}") for i in range(n)]  # a slot each, as on a Cluster


@pytest.fixture(scope="module")
def servers():
    started = [RedisServer(), RedisServer()]
    for server, label in zip(started, "ab", strict=True):
        with server.client() as admin:
            for i, q in enumerate(queues_of(label, 40)):
                admin.hset(q.key("meta"), "opts.maxLenEvents", 100)
                admin.xadd(q.key("events"), {"event": "added", "jobId": "1"})
                for n in range(i % 4):
                    admin.lpush(q.key("wait"), f"j{n}")
                    admin.hset(q.job_key(f"j{n}"), mapping={"timestamp": 1_700_000_000_000 + i * 10 + n, "opts": "{}"})
                if i % 3:
                    admin.zadd(q.key("failed"), {f"f{n}": n for n in range(i % 3)})
            admin.execute_command("ACL", "SETUSER", "reader", "on", ">pw", "~*", "+@read", "+multi", "+exec")
    yield started
    for server in started:
        server.stop()


def figures(snaps):
    return [(s.queue, s.counts, s.oldest_waiting_ts, s.oldest_waiting_id, s.last_event_id) for s in snaps]


def test_each_server_reads_as_it_does_alone(servers):
    with servers[0].client() as a, servers[1].client() as b:
        together = read_snapshots_side_by_side([(a, queues_of("a", 40)), (b, queues_of("b", 40))], per_slot=True)
        alone = [
            read_snapshots(a, queues_of("a", 40), per_slot=True),
            read_snapshots(b, queues_of("b", 40), per_slot=True),
        ]
    assert [figures(snaps) for snaps in together] == [figures(snaps) for snaps in alone]
    assert [s.counts["waiting"] for s in together[1]] == [i % 4 for i in range(40)]
    assert together[0][3].oldest_waiting_ts == 1_700_000_000_030  # j0, the first pushed: the tail


def test_one_failing_server_raises_and_no_connection_is_reused_half_read(servers):
    first = redis.Redis(host="127.0.0.1", port=servers[0].port)
    second = redis.Redis(host="127.0.0.1", port=servers[1].port, username="reader", password="pw")
    with servers[1].client() as admin:
        admin.execute_command("ACL", "SETUSER", "reader", "-xrevrange")
    try:
        with pytest.raises(redis.exceptions.NoPermissionError, match="xrevrange"):
            read_snapshots_side_by_side([(first, queues_of("a", 40)), (second, queues_of("b", 40))], per_slot=True)
        with servers[1].client() as admin:
            admin.execute_command("ACL", "SETUSER", "reader", "+xrevrange")
        # The same pools: their next connections read cleanly (the first server's was dropped
        # with its replies unread, not handed back).
        again = read_snapshots_side_by_side([(first, queues_of("a", 40)), (second, queues_of("b", 40))], per_slot=True)
        assert [[s.counts["failed"] for s in snaps] for snaps in again] == [[i % 3 for i in range(40)]] * 2
    finally:
        first.close()
        second.close()
