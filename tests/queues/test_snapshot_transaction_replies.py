"""The snapshot's transactions read their ``+QUEUED`` replies through the connection's parser
(``queues.redis.snapshot_wire``): the counts are the same, a command the user's ACL
refuses is reported as itself (not as the transaction's ``EXECABORT``), and the connection that
failed is not handed back half-read."""

from __future__ import annotations

import pytest
import redis
from redis.connection import _HiredisParser, _RESP2Parser

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


# redis-py's two parsers: hiredis (installed with the project, its replies taken from its reader
# in one loop) and its own Python one (read one reply at a time).
PARSERS = pytest.mark.parametrize("parser", [_HiredisParser, _RESP2Parser], ids=["hiredis", "python"])


@PARSERS
def test_counts_are_read_whole_over_several_transactions(server, parser):
    client = redis.Redis(connection_pool=redis.ConnectionPool(host="127.0.0.1", port=server.port, parser_class=parser))
    try:
        snaps = read_snapshots(client, QUEUES)
        assert [(s.counts["waiting"], s.counts["failed"]) for s in snaps] == [(i % 5, i % 3) for i in range(300)]
        tagged = [QueueRef("default", "acl-snap", f"{{q{i}}}") for i in range(3)]  # a transaction per slot
        assert [s.counts["waiting"] for s in read_snapshots(client, tagged, per_slot=True)] == [0, 0, 0]
    finally:
        client.connection_pool.disconnect()


@PARSERS
def test_a_refused_command_is_named_and_the_connection_is_not_reused_half_read(server, parser):
    pool = redis.ConnectionPool(
        host="127.0.0.1", port=server.port, username="reader", password="pw", parser_class=parser
    )
    client = redis.Redis(connection_pool=pool)
    with server.client() as admin:  # refused again: the other parser's run allowed it
        admin.execute_command("ACL", "SETUSER", "reader", "-xrevrange")
    try:
        with pytest.raises(redis.exceptions.NoPermissionError, match="xrevrange"):
            read_snapshots(client, QUEUES)
        with server.client() as admin:
            admin.execute_command("ACL", "SETUSER", "reader", "+xrevrange")
        snaps = read_snapshots(client, QUEUES)  # the same pool: its next connection reads cleanly
        assert [s.counts["waiting"] for s in snaps] == [i % 5 for i in range(300)]
    finally:
        client.connection_pool.disconnect()


@PARSERS
def test_outside_a_transaction_an_error_reply_stays_with_its_own_queue(server, parser):
    """Queues without a hash tag are read as plain pipelined commands when reading per slot (a
    Cluster can hold no transaction of their keys), and the ready times of waiting jobs always
    are: an error reply (a key of the wrong type) is that queue's alone, read in its place."""
    # Keys of this run's own: the other parser's run wrote the same names on this module's server.
    prefix = f"plain-snap-{parser.__name__}"
    odd, job_odd, fine = (QueueRef("default", prefix, name) for name in ("odd", "job-odd", "fine"))
    with server.client() as admin:
        admin.set(odd.key("wait"), "a string")  # LLEN, LINDEX and LRANGE of wait: WRONGTYPE
        admin.zadd(odd.key("failed"), {"f": 1})
        admin.rpush(job_odd.key("wait"), "1")
        admin.set(job_odd.job_key("1"), "a string")  # its HMGET of ready-time fields: WRONGTYPE
        admin.lpush(fine.key("wait"), "1", "2")  # as BullMQ adds: job 1 is at the tail, next to run
        admin.hset(fine.job_key("1"), mapping={"timestamp": 1_700_000_000_000, "opts": "{}"})
        admin.hset(fine.job_key("2"), mapping={"timestamp": 1_700_000_000_500, "opts": "{}"})
    client = redis.Redis(connection_pool=redis.ConnectionPool(host="127.0.0.1", port=server.port, parser_class=parser))
    try:
        snaps = read_snapshots(client, [odd, job_odd, fine], per_slot=True)
    finally:
        client.connection_pool.disconnect()
    assert [s.counts["waiting"] for s in snaps] == [0, 1, 2]
    assert snaps[0].counts["failed"] == 1
    assert snaps[1].oldest_waiting_ts is None  # its job could not be read
    assert snaps[2].oldest_waiting_ts == 1_700_000_000_000 and not snaps[2].oldest_waiting_bound
