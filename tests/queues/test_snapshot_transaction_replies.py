"""The snapshot's transactions read their ``+QUEUED`` replies through the connection's parser
(``queues.redis.snapshot._discard_replies``): the counts are the same, a command the user's ACL
refuses is reported as itself (not as the transaction's ``EXECABORT``), and the connection that
failed is not handed back half-read."""

from __future__ import annotations

import pytest
import redis

from queues.keys import QueueRef
from queues.redis.snapshot import read_snapshots
from tests.support.servers import RedisServer

QUEUES = [QueueRef("default", "acl-snap", f"q{i}") for i in range(300)]  # two transactions


@pytest.fixture(scope="module")
def server():
    server = RedisServer()
    with server.client() as admin:
        for i, q in enumerate(QUEUES):
            admin.hset(q.key("meta"), "opts.maxLenEvents", 100)
            if i % 5:
                admin.rpush(q.key("wait"), *[f"j{n}" for n in range(i % 5)])
            if i % 3:
                admin.zadd(q.key("failed"), {f"f{n}": n for n in range(i % 3)})
        admin.execute_command("ACL", "SETUSER", "reader", "on", ">pw", "~*", "+@read", "+multi", "+exec", "-xrevrange")
    yield server
    server.stop()


def test_counts_are_read_whole_over_several_transactions(server):
    with server.client() as client:
        snaps = read_snapshots(client, QUEUES)
    assert [(s.counts["waiting"], s.counts["failed"]) for s in snaps] == [(i % 5, i % 3) for i in range(300)]


def test_a_refused_command_is_named_and_the_connection_is_not_reused_half_read(server):
    client = redis.Redis(host="127.0.0.1", port=server.port, username="reader", password="pw")
    try:
        with pytest.raises(redis.exceptions.NoPermissionError, match="xrevrange"):
            read_snapshots(client, QUEUES)
        with server.client() as admin:
            admin.execute_command("ACL", "SETUSER", "reader", "+xrevrange")
        snaps = read_snapshots(client, QUEUES)  # the same pool: its next connection reads cleanly
        assert [s.counts["waiting"] for s in snaps] == [i % 5 for i in range(300)]
    finally:
        client.close()
