"""Adding and duplicating jobs against real Node BullMQ 6.7: what we store is what Node's own
``Queue.add`` stores, a Node worker runs it with exactly those options, and ids/options BullMQ
refuses are refused with a message, changing nothing. This module runs its own redis-server."""

from __future__ import annotations

import json

import pytest

from queues import job_add
from queues.job_options import InvalidJob, new_job
from queues.keys import QueueRef
from queues.redis import actions
from queues.redis import job_add as redis_job_add
from tests.support.servers import node_available
from tests.support.toolbox import node, q, r, server  # noqa: F401  (fixtures)

pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="Node.js and npm are needed for interop tests"),
]

EVERY_OPTION = {
    "delay": 300,
    "attempts": 3,
    "backoff": {"type": "exponential", "delay": 50, "jitter": 0.5},
    "jobId": "order-7",
    "deduplication": {"id": "order-7-dedup", "ttl": 60000},
    "removeOnComplete": {"count": 10},
    "removeOnFail": 5,
}


def ours(r, queue: QueueRef, *, name="job", data=None, opts=None) -> job_add.AddOutcome:
    return redis_job_add.add_job(r, queue=queue, job=new_job(name=name, data=data, opts=opts or {}))


def without_times(fields: dict) -> dict:
    return {k: v for k, v in fields.items() if k != "timestamp"}


def raw(r, queue: QueueRef, job_id: str) -> dict:
    return {k.decode(): v.decode() for k, v in r.hgetall(queue.job_key(job_id)).items()}


@pytest.mark.parametrize(
    "opts",
    [
        {},
        EVERY_OPTION,
        {"priority": 5, "attempts": 2, "backoff": 1000},
        {"lifo": True, "removeOnComplete": True},
    ],
)
def test_an_added_job_is_stored_exactly_as_node_stores_it(server, r, opts):
    data = {"order": 7, "items": ["a", "é"], "nested": {"x": None}}
    node(server, "hashes", "twin", "[]")  # the queue exists (meta) before we add
    ours_added = ours(r, q("twin"), name="send-mail", data=data, opts=opts)
    assert ours_added.created
    mine = raw(r, q("twin"), ours_added.job_id)
    r.delete(q("twin").job_key(ours_added.job_id), q("twin").key("de:order-7-dedup"))
    theirs = node(server, "add", "twin-node", json.dumps([{"name": "send-mail", "data": data, "opts": opts}]))
    node_fields = theirs["hashes"][theirs["ids"][0]]
    assert without_times(mine) == without_times(node_fields)
    assert json.loads(mine["opts"]) == json.loads(node_fields["opts"])


def test_a_node_worker_runs_the_added_job_with_exactly_those_options(server, r):
    node(server, "hashes", "runs", "[]")
    added = ours(r, q("runs"), name="charge", data={"amount": 12}, opts=EVERY_OPTION)
    assert (added.job_id, added.outcome) == ("order-7", "created")
    assert r.zscore(q("runs").key("delayed"), "order-7") is not None
    done = node(server, "run", "runs", "1", "2")["jobs"]["order-7"]  # fails twice, then succeeds
    assert done["state"] == "completed" and done["atm"] == 3 and len(done["attempts"]) == 3
    assert done["name"] == "charge" and done["data"] == {"amount": 12}
    stored = {k: v for k, v in done["opts"].items()}
    assert stored["backoff"] == EVERY_OPTION["backoff"] and stored["attempts"] == 3 and stored["delay"] == 300
    assert stored["deduplication"] == EVERY_OPTION["deduplication"] and stored["removeOnFail"] == 5
    gaps = [b - a for a, b in zip(done["attempts"], done["attempts"][1:])]
    assert gaps[0] >= 25 and gaps[1] >= 50  # exponential backoff with jitter 0.5: 50·2^(n-1)·[0.5, 1]


def test_priority_and_lifo_order_is_obeyed_by_a_node_worker(server, r):
    node(server, "hashes", "order", "[]")
    actions.queue_pause(r, queue=q("order"), paused=True)  # nothing starts until all are in
    low = ours(r, q("order"), name="low", opts={"priority": 9}).job_id
    high = ours(r, q("order"), name="high", opts={"priority": 1}).job_id
    first = ours(r, q("order"), name="plain").job_id
    last_in = ours(r, q("order"), name="lifo", opts={"lifo": True}).job_id
    actions.queue_pause(r, queue=q("order"), paused=False)
    order = node(server, "run", "order", "4", "0", "1")["order"]
    assert order == [last_in, first, high, low]


def test_same_job_id_and_deduplication_return_the_existing_job(server, r):
    node(server, "hashes", "dups", "[]")
    first = ours(r, q("dups"), data={"v": 1}, opts={"jobId": "same-id"})
    again = ours(r, q("dups"), data={"v": 2}, opts={"jobId": "same-id"})
    assert (first.outcome, again.outcome, again.job_id) == ("created", "duplicated", "same-id")
    assert json.loads(raw(r, q("dups"), "same-id")["data"]) == {"v": 1}
    d1 = ours(r, q("dups"), opts={"deduplication": {"id": "k"}})
    d2 = ours(r, q("dups"), opts={"deduplication": {"id": "k"}})
    assert d1.created and (d2.outcome, d2.job_id) == ("deduplicated", d1.job_id)
    assert r.zcard(q("dups").key("delayed")) + r.llen(q("dups").key("wait")) == 2
    # And against a job Node added with that deduplication id.
    node(server, "add", "dups", json.dumps([{"name": "n", "data": {}, "opts": {"deduplication": {"id": "from-node"}}}]))
    assert ours(r, q("dups"), opts={"deduplication": {"id": "from-node"}}).outcome == "deduplicated"


@pytest.mark.parametrize(
    "opts, message",
    [
        ({"jobId": "42"}, "plain integer"),
        ({"jobId": "0"}, "plain integer"),
        ({"jobId": "a:b"}, "cannot contain ':'"),
        ({"jobId": "meta"}, "reserved"),
        ({"jobId": "events"}, "reserved"),
        ({"priority": 1.5}, "whole number"),
        ({"priority": 2**21}, "between 0 and 2097151"),
        ({"backoff": {"type": "fixed", "delay": 1, "jitter": 2}}, "jitter"),
        ({"backoff": {"type": "linear"}}, "'backoff.type'"),
        ({"deduplication": {"ttl": 5}}, "deduplication"),
        ({"lifo": True, "priority": 2}, "cannot be used together"),
        ({"delay": -1}, "between 0 and"),
        ({"repeat": {"every": 5}}, "Unknown option"),
        ({"attempts": "3"}, "whole number"),
    ],
)
def test_refused_options_say_why_and_change_nothing(r, opts, message):
    r.hset(q("refuse").key("meta"), "opts.maxLenEvents", 10000)
    before = sorted(r.keys("*"))
    with pytest.raises(InvalidJob, match=message):
        ours(r, q("refuse"), opts=opts)
    assert sorted(r.keys("*")) == before


def test_a_job_called_new_is_fine_and_no_queue_is_ever_created(r):
    with pytest.raises(InvalidJob, match="no queue"):
        ours(r, q("ghost"))
    assert r.keys("*") == []
    r.hset(q("named").key("meta"), "opts.maxLenEvents", 10000)
    assert ours(r, q("named"), opts={"jobId": "new"}).job_id == "new"


def test_a_duplicate_equals_its_source_but_for_id_and_timestamps(server, r):
    spec = {
        "name": "report",
        "data": {"password": "s3cret", "big": "x" * 5000},
        "opts": {
            "attempts": 4,
            "backoff": 200,
            "priority": 3,
            "removeOnFail": {"age": 60},
            "jobId": "src-1",
            "keepLogs": 5,
        },
    }
    source = node(server, "add", "dupe", json.dumps([spec]))
    copy = redis_job_add.duplicate_job(r, queue=q("dupe"), job_id="src-1")
    assert copy.created and copy.job_id != "src-1"
    fields = node(server, "hashes", "dupe", json.dumps([copy.job_id]))["hashes"][copy.job_id]
    original = source["hashes"]["src-1"]
    assert fields["data"] == original["data"]  # byte for byte, from Redis (unredacted, uncapped)
    expected_opts = {k: v for k, v in json.loads(original["opts"]).items() if k != "jobId"}
    assert json.loads(fields["opts"]) == expected_opts
    assert {k: v for k, v in fields.items() if k not in ("timestamp", "opts")} == {
        k: v for k, v in original.items() if k not in ("timestamp", "opts")
    }
    assert redis_job_add.duplicate_job(r, queue=q("dupe"), job_id="gone") is None
