"""The snapshot planned per hash slot (what a Redis Cluster kind will use, docs/architecture.md
"Snapshot per hash slot"): the same snapshots as the node default, and no transaction that mixes
slots."""

from __future__ import annotations

import dataclasses

from redis.crc import key_slot

from queues.keys import QueueRef
from queues.redis import snapshot
from queues.redis.snapshot import plan_transactions, queue_slot, read_keys, read_snapshots

TAGGED_1 = [QueueRef("default", "{t1}", name) for name in ("emails", "invoices", "reports")]
TAGGED_2 = [QueueRef("default", "bull", "{t2}"), QueueRef("default", "bull", "{t2}:retry")]
UNTAGGED = [QueueRef("default", "bull", "plain"), QueueRef("default", "bull", "other")]
# Interleaved, so grouping by slot really reorders.
QUEUES = [TAGGED_1[0], UNTAGGED[0], TAGGED_2[0], TAGGED_1[1], UNTAGGED[1], TAGGED_2[1], TAGGED_1[2]]


def seed(r) -> None:
    for n, q in enumerate(QUEUES, start=1):
        r.hset(q.key("meta"), mapping={"opts.maxLenEvents": 10000})
        for i in range(n):
            r.hset(q.job_key(f"w{i}"), mapping={"name": "job", "timestamp": 1_700_000_000_000 + i})
            r.lpush(q.key("wait"), f"w{i}")
        r.zadd(q.key("failed"), {f"f{i}": i for i in range(2 * n)})
        r.zadd(q.key("delayed"), {"d": 1})
        r.xadd(q.key("events"), {"event": "added", "jobId": f"w{n - 1}"})
    r.hset(TAGGED_2[0].key("meta"), "paused", 1)
    r.set(UNTAGGED[1].key("completed"), "not a zset")  # an error reply stays in place here too


def without_time(snaps):
    return [dataclasses.replace(s, taken_at=0) for s in snaps]


def test_per_slot_reading_gives_the_same_snapshots_as_the_node_default(redis_client):
    seed(redis_client)
    node = read_snapshots(redis_client, QUEUES)
    per_slot = read_snapshots(redis_client, QUEUES, per_slot=True)
    assert [s.queue for s in per_slot] == QUEUES  # in the order given, whatever the plan
    assert without_time(per_slot) == without_time(node)
    assert [s.counts["waiting"] for s in node] == list(range(1, len(QUEUES) + 1))
    assert node[2].paused and node[4].counts["completed"] == 0 and node[4].counts["failed"] == 10
    assert all(s.last_event_id for s in node)
    assert redis_client.ping()  # the pooled connection is still in sync


def test_each_planned_transaction_holds_keys_of_one_slot(monkeypatch):
    monkeypatch.setattr(snapshot, "TRANSACTION_CHUNK", 2)  # a slot's group is chunked too
    plan = plan_transactions(QUEUES, per_slot=True)
    atomic = [t for t in plan if t.atomic]
    for t in atomic:
        assert len({key_slot(key) for q in t.queues for key in read_keys(q)}) == 1, t
    assert sorted(q for t in atomic for q in t.queues) == sorted(TAGGED_1 + TAGGED_2)
    assert [len(t.queues) for t in atomic] == [2, 1, 2]  # {t1}: 3 queues in chunks of 2; {t2}: 2
    # An untagged queue's keys span slots: no transaction can hold them on a Cluster, so its
    # reads go out as plain commands.
    assert {queue_slot(q) for q in UNTAGGED} == {None}
    assert [t.queues for t in plan if not t.atomic] == [tuple(UNTAGGED)]


def test_the_node_default_is_the_fewest_transactions():
    many = [QueueRef("default", "bull", f"q{i}") for i in range(2 * snapshot.TRANSACTION_CHUNK + 1)]
    plan = plan_transactions(many)
    assert [len(t.queues) for t in plan] == [snapshot.TRANSACTION_CHUNK, snapshot.TRANSACTION_CHUNK, 1]
    assert all(t.atomic for t in plan) and [q for t in plan for q in t.queues] == many
    assert len({queue_slot(q) for q in TAGGED_1}) == 1 and queue_slot(TAGGED_1[0]) == key_slot(b"t1")
