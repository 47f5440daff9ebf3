"""The follower's packed ``XREAD`` (``queues/redis/events.py``): kept between reads, it must stay
the command redis-py would send for the followed streams and their cursors, as cursors move and
queues are followed and dropped."""

from __future__ import annotations

import redis

from queues.redis.events import EventsFollower


def redis_py_xread(client: redis.Redis, follower: EventsFollower, block: int) -> bytes:
    """The same XREAD as redis-py packs it, from the follower's ``streams()``."""
    streams = follower.streams()
    args = ["XREAD", "COUNT", follower.count, *(["BLOCK", block] if block > 0 else []), "STREAMS"]
    conn = client.connection_pool.get_connection()
    try:
        return b"".join(conn.pack_command(*args, *streams.keys(), *streams.values()))
    finally:
        client.connection_pool.release(conn)


def test_the_packed_read_is_redis_pys_xread_as_cursors_move_and_queues_change(redis_prefix):
    client = redis_prefix.client
    a, b, c = (redis_prefix.queue(n) for n in ("a", "b/:{c}", "c"))
    for q in (a, b, c):
        client.xadd(q.key("events"), {"event": "added", "jobId": "0"})
    follower = EventsFollower(client, block_ms=10)
    assert follower.follow([a, b]) == [a, b]
    assert follower._packed_read(10) == redis_py_xread(client, follower, 10)

    client.xadd(b.key("events"), {"event": "waiting", "jobId": "1"})
    events, _gaps = follower.read()
    assert [(e.queue, e.name) for e in events] == [(b, "waiting")]
    assert follower._packed_read(0) == redis_py_xread(client, follower, 0)  # b's cursor moved

    assert follower.follow([b, c]) == [c]  # a dropped, c added
    assert follower._packed_read(10) == redis_py_xread(client, follower, 10)
    client.xadd(c.key("events"), {"event": "waiting", "jobId": "2"})
    client.xadd(a.key("events"), {"event": "waiting", "jobId": "3"})  # no longer followed
    events, _gaps = follower.read()
    assert [(e.queue, e.fields["jobId"]) for e in events] == [(c, "2")]
    assert follower._packed_read(10) == redis_py_xread(client, follower, 10)
    assert follower.read()[0] == []  # nothing read twice

    assert follower.follow([c]) == []  # b dropped, nothing added
    assert follower._packed_read(10) == redis_py_xread(client, follower, 10)
