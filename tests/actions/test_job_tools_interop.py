"""The job tools and the deduplication keys against real Node BullMQ 6.7 producers and workers
(``TZ`` not UTC): a worker runs jobs in the changed priority order, a rescheduled job runs at
its new time, a job failed by hand is failed with its reason in BullMQ's own getters, and a
released deduplication id lets the next add through."""

from __future__ import annotations

import time

import pytest

from queues.redact import Redactor
from queues.redis import dedup, job_tools
from tests.support.job_tools_node import NodeJobTools
from tests.support.servers import node_available

pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="Node.js and npm are needed for interop tests"),
]


@pytest.fixture
def node(redis_prefix):
    with NodeJobTools(redis_prefix.url, redis_prefix.prefix) as proc:
        yield proc


def add(node, queue, *jobs) -> list[str]:
    return node.send("add", queue=queue.name, jobs=list(jobs))["ids"]


def test_a_worker_runs_jobs_in_the_changed_priority_order(node, redis_prefix):
    r, queue = redis_prefix.client, redis_prefix.queue("prio")
    ids = add(node, queue, *({"name": f"j{i}", "opts": {"priority": 10}} for i in range(3)))
    plain = add(node, queue, {"name": "plain"})[0]  # waiting (no priority): runs before any prioritized job
    results = [
        job_tools.change_priority(r, queue=queue, job_id=ids[2], priority=1),  # last added, now first
        job_tools.change_priority(r, queue=queue, job_id=plain, priority=20),  # from wait to last
    ]
    assert [x.outcome for x in results] == ["done", "done"]
    assert r.lpos(queue.key("wait"), plain) is None
    order = node.send("run", queue=queue.name, count=4)["order"]
    assert [o["id"] for o in order] == [ids[2], ids[0], ids[1], plain]
    assert [o["priority"] for o in order] == [1, 10, 10, 20]  # as Node's Job reads them


def test_change_priority_refuses_what_it_cannot_change(node, redis_prefix):
    r, queue = redis_prefix.client, redis_prefix.queue("prio-refused")
    done = add(node, queue, {"name": "x"})[0]
    node.send("run", queue=queue.name, count=1)
    assert job_tools.change_priority(r, queue=queue, job_id=done, priority=3).outcome == "wrong_state"
    assert r.hget(queue.job_key(done), "priority") == b"0"  # left as it was
    assert job_tools.change_priority(r, queue=queue, job_id="nope", priority=3).outcome == "missing"
    assert job_tools.change_priority(r, queue=queue, job_id="meta", priority=3).outcome == "not_a_job"
    r.set(queue.key("de:k"), done)
    assert job_tools.change_priority(r, queue=queue, job_id="de:k", priority=3).outcome == "not_a_job"
    assert r.type(queue.key("de:k")) == b"string"


def test_a_rescheduled_delayed_job_runs_at_its_new_time(node, redis_prefix):
    r, queue = redis_prefix.client, redis_prefix.queue("later")
    job_id = add(node, queue, {"name": "later", "opts": {"delay": 3_600_000}})[0]
    before = time.time() * 1000
    result = job_tools.change_delay(r, queue=queue, job_id=job_id, delay_ms=1500)
    after = time.time() * 1000
    assert result.outcome == "done", result.message
    seen = node.send("job", queue=queue.name, id=job_id)
    assert (seen["state"], seen["delay"]) == ("delayed", 1500)
    order = node.send("run", queue=queue.name, count=1, timeoutMs=15000)["order"]
    assert [o["id"] for o in order] == [job_id]
    ran = order[0]["processedOn"]
    assert before + 1500 <= ran < after + 1500 + 1500, ran - before  # at its new time, not in an hour
    again = job_tools.change_delay(r, queue=queue, job_id=job_id, delay_ms=5000)
    assert again.outcome == "wrong_state"  # completed now: nothing to reschedule


def test_a_job_moved_to_failed_is_failed_with_its_reason_in_bullmq(node, redis_prefix):
    r, queue = redis_prefix.client, redis_prefix.queue("fail")
    waiting, delayed, prioritized = add(
        node, queue, {"name": "w"}, {"name": "d", "opts": {"delay": 600_000}}, {"name": "p", "opts": {"priority": 4}}
    )
    for job_id in (waiting, delayed, prioritized):
        result = job_tools.move_to_failed(r, queue=queue, job_id=job_id, reason=f"bad input ({job_id})")
        assert result.outcome == "done", result.message
        seen = node.send("job", queue=queue.name, id=job_id)
        assert (seen["state"], seen["failedReason"], seen["attemptsMade"]) == ("failed", f"bad input ({job_id})", 1)
    assert sorted(node.send("failed", queue=queue.name)["ids"]) == sorted([waiting, delayed, prioritized])
    assert r.llen(queue.key("active")) == 0 and r.zcard(queue.key("delayed")) == 0
    events = [e[1][b"event"] for e in r.xrange(queue.key("events"))]
    assert events.count(b"failed") == 3
    again = job_tools.move_to_failed(r, queue=queue, job_id=waiting, reason="twice")
    assert again.outcome == "wrong_state" and node.send("job", queue=queue.name, id=waiting)["failedReason"] != "twice"


def test_move_to_failed_refuses_a_job_a_live_worker_holds_and_takes_one_whose_lock_lapsed(node, redis_prefix):
    r, queue = redis_prefix.client, redis_prefix.queue("held")
    add(node, queue, {"name": "a"}, {"name": "b"})
    held = node.send("take", queue=queue.name, token="tok-1")["id"]
    result = job_tools.move_to_failed(r, queue=queue, job_id=held, reason="stop")
    assert result.outcome == "locked"
    assert node.send("job", queue=queue.name, id=held)["state"] == "active"
    lapsed = node.send("take", queue=queue.name, token="tok-2")["id"]
    r.delete(queue.job_key(lapsed) + ":lock")  # as if its worker had died: a stalled job
    assert job_tools.move_to_failed(r, queue=queue, job_id=lapsed, reason="worker gone").outcome == "done"
    seen = node.send("job", queue=queue.name, id=lapsed)
    assert (seen["state"], seen["failedReason"]) == ("failed", "worker gone")


def test_moving_a_keep_last_owner_to_failed_adds_its_pending_successor(node, redis_prefix):
    r, queue = redis_prefix.client, redis_prefix.queue("succ")
    opts = {"deduplication": {"id": "sync", "keepLastIfActive": True}}
    owner = add(node, queue, {"name": "sync", "opts": opts})[0]
    assert node.send("take", queue=queue.name, token="t")["id"] == owner
    assert add(node, queue, {"name": "sync", "data": {"v": 2}, "opts": opts})[0] == owner  # held back in dn:
    listed = dedup.dedup_page(r, queue, cursor="0", redactor=Redactor()).keys
    assert [(k.dedup_id, k.owner, k.ttl_ms) for k in listed] == [("sync", owner, None)]
    assert listed[0].pending is not None and '"v":2' in listed[0].pending.data_preview
    r.delete(queue.job_key(owner) + ":lock")
    assert job_tools.move_to_failed(r, queue=queue, job_id=owner, reason="stuck").outcome == "done"
    successor = node.send("dedupOwner", queue=queue.name, dedupId="sync")["id"]
    assert successor and successor != owner  # BullMQ's own finalisation added the held-back job
    assert node.send("job", queue=queue.name, id=successor)["state"] == "waiting"


def test_a_released_deduplication_key_lets_the_next_add_through(node, redis_prefix):
    r, queue = redis_prefix.client, redis_prefix.queue("dedup")
    opts = {"deduplication": {"id": "report-7"}}
    owner = add(node, queue, {"name": "report", "opts": opts})[0]
    assert add(node, queue, {"name": "report", "opts": opts})[0] == owner  # deduplicated
    page = dedup.dedup_page(r, queue, cursor="0", redactor=Redactor())
    assert [(k.dedup_id, k.owner, k.ttl_ms, k.owner_exists) for k in page.keys] == [("report-7", owner, None, True)]
    assert not page.more
    assert dedup.release(r, queue=queue, dedup_id="report-7", owner="someone-else").outcome == "wrong_state"
    assert r.exists(queue.key("de:report-7"))
    assert dedup.release(r, queue=queue, dedup_id="report-7", owner=owner).outcome == "done"
    fresh = add(node, queue, {"name": "report", "opts": opts})[0]
    assert fresh != owner and node.send("dedupOwner", queue=queue.name, dedupId="report-7")["id"] == fresh


def test_the_listing_is_paged_and_shows_ttls_and_stuck_keys(node, redis_prefix):
    r, queue = redis_prefix.client, redis_prefix.queue("many")
    add(node, queue, {"name": "t", "opts": {"deduplication": {"id": "ttl", "ttl": 60_000}}})
    r.set(queue.key("de:orphan"), "gone-job")  # its owner was removed by a producer of another library
    for i in range(120):
        r.set(queue.key(f"de:bulk-{i}"), "x")
    r.set(redis_prefix.queue("many-other").key("de:not-mine"), "1")  # another queue's key
    seen, cursor, pages = [], "0", 0
    while True:
        page = dedup.dedup_page(r, queue, cursor=cursor, redactor=Redactor())
        seen.extend(page.keys)
        pages += 1
        assert page.examined_calls <= 20
        if not page.more:
            break
        cursor = page.cursor
    by_id = {k.dedup_id: k for k in seen}
    assert len(by_id) == 122 and "not-mine" not in by_id
    assert 0 < by_id["ttl"].ttl_ms <= 60_000 and not by_id["ttl"].stuck
    assert by_id["orphan"].stuck and not by_id["orphan"].owner_exists


def test_a_schedulers_pending_iteration_is_not_failed_by_hand(node, redis_prefix):
    r, queue = redis_prefix.client, redis_prefix.queue("sched")
    iteration = node.send("scheduler", queue=queue.name, id="hourly", every=3_600_000)["id"]
    refused = job_tools.move_to_failed(r, queue=queue, job_id=iteration, reason="no")
    assert refused.outcome == "scheduler_iteration"
    assert node.send("job", queue=queue.name, id=iteration)["state"] in ("waiting", "delayed")  # left as it was
