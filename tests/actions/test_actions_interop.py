"""Actions against real Node BullMQ 6.7 producers and workers, on the session redis-server
(a database of each test's own)."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest
import redis

from queues import dead_letters
from queues.bulk import BulkPlan, MemoryStore
from queues.keys import QueueRef
from queues.redis import actions, redrive
from queues.redis.bulk import run_bulk
from queues.selection import JobFilter
from tests.support.servers import NODE_DIR, ensure_node_modules, node_available, run_node

pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="Node.js and npm are needed for interop tests"),
]


@pytest.fixture
def r(redis_prefix):
    return redis_prefix.client


@pytest.fixture
def url(redis_prefix):
    return redis_prefix.url


@pytest.fixture
def q(redis_prefix):
    """A queue under this test's own key prefix, by name."""
    return redis_prefix.queue


def failed_ids(r, queue: QueueRef) -> list[str]:
    return [m.decode() for m in r.zrange(queue.key("failed"), 0, -1)]


def test_retry_with_reset_gives_the_full_attempt_budget_and_without_only_one_try(r, url, q, redis_prefix):
    queue = q("budget")
    ids = run_node("actions.mjs", "fail", url, queue.name, "2", "3", redis_prefix.prefix)["ids"]
    assert sorted(failed_ids(r, queue)) == sorted(ids)
    r.hset(queue.job_key(ids[0]), "stc", 1)  # as if it had stalled once: the reset clears it too
    assert r.hget(queue.job_key(ids[0]), "atm") == b"3"

    reset = actions.job_retry(r, queue=queue, job_id=ids[0])
    kept = actions.job_retry(r, queue=queue, job_id=ids[1], reset_counters=False)
    assert (reset.outcome, kept.outcome) == ("done", "done")
    assert r.hget(queue.job_key(ids[0]), "stc") is None
    assert r.hget(queue.job_key(ids[0]), "atm") is None and r.hget(queue.job_key(ids[1]), "atm") == b"3"

    jobs = run_node("actions.mjs", "work", url, queue.name, "fail", "2", redis_prefix.prefix)["jobs"]
    assert jobs[ids[0]]["state"] == "failed" and jobs[ids[0]]["atm"] == 3  # three more tries
    assert jobs[ids[1]]["state"] == "failed" and jobs[ids[1]]["atm"] == 4  # exactly one more


def test_retried_jobs_are_processed_by_a_node_worker(r, url, q, redis_prefix):
    queue = q("retry-ok")
    ids = run_node("actions.mjs", "fail", url, queue.name, "3", "1", redis_prefix.prefix)["ids"]
    results = [actions.job_retry(r, queue=queue, job_id=i) for i in ids]
    assert [x.outcome for x in results] == ["done"] * 3
    jobs = run_node("actions.mjs", "work", url, queue.name, "complete", "3", redis_prefix.prefix)["jobs"]
    assert {i: jobs[i]["state"] for i in ids} == {i: "completed" for i in ids}
    assert actions.job_retry(r, queue=queue, job_id=ids[0]).outcome == "done"  # completed jobs too
    assert actions.job_retry(r, queue=queue, job_id="nope").outcome == "missing"


def test_the_same_job_retried_twice_concurrently_is_moved_once(r, url, q, redis_prefix):
    queue = q("race")
    ids = run_node("actions.mjs", "fail", url, queue.name, "20", "1", redis_prefix.prefix)["ids"]
    outcomes: dict[str, list[str]] = {i: [] for i in ids}
    barrier = threading.Barrier(2)

    def retry_all():
        client = redis.Redis.from_url(url)
        barrier.wait()
        for i in ids:
            outcomes[i].append(actions.job_retry(client, queue=queue, job_id=i).outcome)
        client.close()

    threads = [threading.Thread(target=retry_all) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for i in ids:
        assert sorted(outcomes[i]) == ["done", "wrong_state"], (i, outcomes[i])
    waiting = [m.decode() for m in r.lrange(queue.key("wait"), 0, -1)]
    assert sorted(waiting) == sorted(ids)  # each exactly once


def test_discard_promote_pause_and_clean(r, url, q, redis_prefix):
    queue = q("misc")
    ids = run_node("actions.mjs", "fail", url, queue.name, "3", "1", redis_prefix.prefix)["ids"]
    assert actions.job_discard(r, queue=queue, job_id=ids[0]).outcome == "done"
    assert not r.exists(queue.job_key(ids[0]))
    assert actions.job_discard(r, queue=queue, job_id=ids[0]).outcome == "missing"
    assert actions.queue_clean(r, queue=queue, state="failed", older_than_ms=0) == 2
    assert failed_ids(r, queue) == []
    with pytest.raises(ValueError):
        actions.queue_clean(r, queue=queue, state="active", older_than_ms=0)

    actions.queue_pause(r, queue=queue, paused=True)
    assert r.hexists(queue.key("meta"), "paused")
    actions.queue_pause(r, queue=queue, paused=False)
    assert not r.hexists(queue.key("meta"), "paused")


def test_discard_refuses_a_locked_job_and_a_scheduler_iteration(r, q):
    queue = q("refuse")
    r.hset(queue.job_key("7"), mapping={"name": "x", "data": "{}", "opts": "{}", "timestamp": 1})
    r.lpush(queue.key("active"), "7")
    r.set(queue.job_key("7") + ":lock", "worker-token", px=60000)
    locked = actions.job_discard(r, queue=queue, job_id="7")
    assert locked.outcome == "locked" and "lock" in locked.message
    assert r.exists(queue.job_key("7"))

    it = "repeat:nightly:1700000000000"
    r.zadd(queue.key("repeat"), {"nightly": 1700000000000})
    r.hset(queue.job_key(it), mapping={"name": "n", "data": "{}", "opts": "{}", "timestamp": 1, "rjk": "nightly"})
    r.zadd(queue.key("delayed"), {it: 1700000000000 * 4096})
    sched = actions.job_discard(r, queue=queue, job_id=it)
    assert sched.outcome == "scheduler_iteration" and r.exists(queue.job_key(it))
    promoted = actions.job_promote(r, queue=queue, job_id=it)
    assert promoted.outcome == "done" and r.lrange(queue.key("wait"), 0, -1) == [it.encode()]
    assert actions.job_promote(r, queue=queue, job_id=it).outcome == "wrong_state"


def test_discard_says_what_happens_to_children(r, q):
    queue = q("flow")
    parent = queue.job_key("p")
    r.hset(parent, mapping={"name": "parent", "data": "{}", "opts": "{}", "timestamp": 1})
    r.zadd(queue.key("waiting-children"), {"p": 1})
    for c in ("c1", "c2"):
        r.hset(
            queue.job_key(c),
            mapping={
                "name": "child",
                "data": "{}",
                "opts": "{}",
                "timestamp": 1,
                "parentKey": parent,
                "parent": f'{{"id":"p","queueKey":"{queue.prefix}:flow"}}',
            },
        )
        r.lpush(queue.key("wait"), c)
        r.sadd(parent + ":dependencies", queue.job_key(c))
    result = actions.job_discard(r, queue=queue, job_id="p")
    assert result.outcome == "done" and "2 unfinished and 0 finished child job(s) were kept" in result.message
    assert r.exists(queue.job_key("c1")) and r.exists(queue.job_key("c2"))
    child = actions.job_discard(r, queue=queue, job_id="c1")
    assert "parent" in child.message


def test_a_dlq_job_lands_in_its_source_queue_and_completes(r, url, q, redis_prefix):
    dlq = q("payments-dlq")
    ids = run_node("actions.mjs", "dlq", url, dlq.name, "3", "payments", redis_prefix.prefix)["ids"]
    data = [r.hget(dlq.job_key(i), "data") for i in ids]
    source_name = dead_letters.dlq_source(dlq_name=dlq.name)
    assert source_name == "payments"
    source = q(source_name)
    first = redrive.job_redrive_to_source(r, dlq=dlq, job_id=ids[0], source=source, payload_field="data")
    assert first.outcome == "done"
    again = redrive.job_redrive_to_source(r, dlq=dlq, job_id=ids[0], source=source, payload_field="data")
    assert again.outcome == "missing"  # a repeat cannot duplicate
    for i in ids[1:]:
        assert redrive.job_redrive_to_source(r, dlq=dlq, job_id=i, source=source).outcome == "done"
    assert r.llen(dlq.key("wait")) == 0 and r.llen(source.key("wait")) == 3
    jobs = run_node("actions.mjs", "work", url, source.name, "complete", "3", redis_prefix.prefix)["jobs"]
    new_ids = {redrive.redrive_job_id(dlq_name=dlq.name, job_id=i) for i in ids}
    assert set(jobs) == new_ids and all(j["state"] == "completed" for j in jobs.values())
    first_copy = jobs[redrive.redrive_job_id(dlq_name=dlq.name, job_id=ids[0])]
    assert first_copy["data"] == {"i": 0} and first_copy["atm"] == 1  # unwrapped payload, fresh counters
    assert data[1] is not None


def test_redrive_refuses_when_the_target_id_is_still_retained(r, q):
    dlq, source = q("orders-dlq"), q("orders")
    r.hset(source.key("meta"), "opts.maxLenEvents", 10000)  # the source queue exists (a redrive never creates one)
    for _ in range(2):
        r.hset(dlq.job_key("a:1"), mapping={"name": "x", "data": '{"k":1}', "opts": "{}", "timestamp": 5})
        r.lpush(dlq.key("wait"), "a:1")
        result = redrive.job_redrive_to_source(r, dlq=dlq, job_id="a:1", source=source)
    assert result.outcome == "target_exists"
    assert r.exists(dlq.job_key("a:1"))  # left where it was, not lost
    assert r.exists(source.job_key("redrive-orders-dlq-a%3A1"))


# --- bulk actions with live Node workers ------------------------------------------------------


def test_bulk_retry_with_reset_then_node_processes_every_job_with_its_full_budget(r, url, q, redis_prefix):
    queue = q("bulk-budget")
    ids = run_node("actions.mjs", "fail", url, queue.name, "40", "2", redis_prefix.prefix)["ids"]
    plan = BulkPlan(queue=queue, action="retry", before_ms=int(time.time() * 1000), filt=JobFilter(), rate=None)
    progress = run_bulk(r, plan=plan, store=MemoryStore())
    assert (progress.state, progress.total, progress.moved, progress.skipped) == ("done", 40, 40, 0)
    jobs = run_node("actions.mjs", "work", url, queue.name, "fail", "40", redis_prefix.prefix)["jobs"]
    assert sorted(jobs) == sorted(ids)
    assert {j["atm"] for j in jobs.values()} == {2}  # two full attempts again, not one


def test_bulk_redrive_of_a_dlq_then_node_completes_them_in_the_source(r, url, q, redis_prefix):
    dlq = q("emails-dlq")
    ids = run_node("actions.mjs", "dlq", url, dlq.name, "25", "emails", redis_prefix.prefix)["ids"]
    plan = BulkPlan(
        queue=dlq,
        action="redrive",
        before_ms=int(time.time() * 1000) + 1,
        filt=JobFilter(state="waiting"),
        rate=None,
        payload_field="data",
    )
    progress = run_bulk(r, plan=plan, store=MemoryStore())
    assert (progress.moved, progress.skipped) == (25, 0)
    jobs = run_node("actions.mjs", "work", url, "emails", "complete", "25", redis_prefix.prefix)["jobs"]
    assert sorted(jobs) == sorted(redrive.redrive_job_id(dlq_name=dlq.name, job_id=i) for i in ids)
    assert sorted(j["data"]["i"] for j in jobs.values()) == list(range(25))


@pytest.fixture
def stall_worker(url, redis_prefix):
    """Start tests/node/stall_worker.mjs on a queue: it takes one job, holds its lock ~2 s."""
    procs = []

    def start(queue_name: str) -> str:
        ensure_node_modules()
        proc = subprocess.Popen(
            ["node", "stall_worker.mjs", url, queue_name, redis_prefix.prefix],
            cwd=NODE_DIR,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        procs.append(proc)
        line = proc.stdout.readline().strip()
        assert line.startswith("ACTIVE "), line
        return line.split(" ", 1)[1]

    yield start
    for proc in procs:
        proc.kill()
        proc.wait(10)
        proc.stdout.close()


def test_a_job_a_worker_takes_during_a_bulk_action_is_skipped_and_counted(r, url, stall_worker, q, redis_prefix):
    queue = q("taken")
    ids = run_node("produce.mjs", "add", url, queue.name, "6", "", redis_prefix.prefix)["ids"]
    taken = []

    def sleep_then_worker_takes_next(seconds):
        if not taken:  # between the first and second batch a worker picks up the oldest job
            taken.append(stall_worker(queue.name))

    plan = BulkPlan(
        queue=queue, action="discard", before_ms=int(time.time() * 1000) + 1, filt=JobFilter(state="waiting"), rate=4
    )  # one job per batch
    progress = run_bulk(r, plan=plan, store=MemoryStore(), sleep=sleep_then_worker_takes_next)
    assert taken == [ids[1]]
    assert (progress.total, progress.moved, progress.skipped, progress.skipped_by) == (6, 5, 1, {"gone": 1})
    assert r.exists(queue.job_key(ids[1])) and r.lrange(queue.key("active"), 0, -1) == [ids[1].encode()]
    assert not any(r.exists(queue.job_key(i)) for i in ids if i != ids[1])


def test_a_selected_job_that_is_locked_by_a_worker_is_skipped_and_counted(r, url, stall_worker, q, redis_prefix):
    queue = q("locked")
    ids = run_node("produce.mjs", "add", url, queue.name, "3", "", redis_prefix.prefix)["ids"]
    active = stall_worker(queue.name)
    plan = BulkPlan(queue=queue, action="discard", before_ms=int(time.time() * 1000) + 1, job_ids=tuple(ids), rate=None)
    progress = run_bulk(r, plan=plan, store=MemoryStore())
    assert (progress.moved, progress.skipped, progress.skipped_by) == (2, 1, {"locked": 1})
    assert r.exists(queue.job_key(active))
