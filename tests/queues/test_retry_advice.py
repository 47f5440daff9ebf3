"""Retry-policy advice on real BullMQ 6.7 queues built by Node: each piece of
advice on a queue built to trigger it, and not on one built correctly. The sample is read with
``read_sample`` (bounded) and the worker count with one real CLIENT LIST (``read_workers``), as
the page does with the monitor's count."""

from __future__ import annotations

import time

import pytest

from queues.health import FAIL, PASS
from queues.redis.retry_advice import read_sample
from queues.redis.workers import read_workers
from queues.retry_advice import SAMPLE_PER_STATE, Sample, SampledJob, advise
from tests.support.node_workers import NodeWorkers
from tests.support.servers import node_available

GOOD = {"attempts": 2, "backoff": {"type": "exponential", "delay": 1000, "jitter": 0.5}, "removeOnFail": 1000}


def statuses(redis_prefix, name) -> dict[str, tuple[str, str]]:
    q = redis_prefix.queue(name)
    sample = read_sample(redis_prefix.client, q, now_ms=int(time.time() * 1000))
    workers = len(read_workers(redis_prefix.client, [q])[q])
    return {a.kind: (a.status, a.details["sample_job"]) for a in advise(sample, workers=workers)}


@pytest.fixture(scope="module")
def built(redis_server, request):
    """Every queue of this module, built once by one Node process (the prefix is the module's)."""
    if not node_available():
        pytest.skip("needs Node.js and npm")
    from tests.support.redis_db import PrefixedRedis, delete_prefixed, prefix_for

    prefix = prefix_for(request.node.nodeid)
    client = redis_server.client(0)
    delete_prefixed(client, prefix)
    node = NodeWorkers(redis_server.url(0), prefix)

    def run(queue, jobs, *, fail=False):
        node.send("add", queue=queue, jobs=jobs)
        node.send("start", id=queue, queue=queue, fail=fail, concurrency=5)
        node.send("drain", queue=queue, count=len(jobs))
        node.send("stop", id=queue)

    try:
        node.send("add", queue="bare", jobs=[{"name": "send"}] * 3)
        run("good", [{"name": "send", "opts": GOOD}] * 25)
        for name, backoff in (
            ("herd", {"type": "fixed", "delay": 1000}),
            ("herd-jitter", {"type": "fixed", "delay": 1000, "jitter": 0.5}),
        ):
            node.send("add", queue=name, jobs=[{"name": "call", "opts": {"attempts": 3, "backoff": backoff}}] * 8)
            for i in range(4):  # four workers holding one job each: the rest wait
                node.send("start", id=f"{name}-{i}", queue=name, hold=True)
        run("keepfail", [{"name": "x", "opts": {"attempts": 1}}] * 3, fail=True)
        run("dropfail", [{"name": "x", "opts": {"attempts": 1, "removeOnFail": 100}}] * 3, fail=True)
        run("jobid", [{"name": "order", "opts": {**GOOD, "jobId": f"order-{i}"}} for i in range(3)])
        run("dedup", [{"name": "order", "opts": {**GOOD, "deduplication": {"id": f"order-{i}"}}} for i in range(3)])
        run("overattempts", [{"name": "send", "opts": {**GOOD, "attempts": 10}}] * 25)
        yield PrefixedRedis(prefix, redis_server.url(0), client)
    finally:
        node.close()
        delete_prefixed(client, prefix)
        client.close()


@pytest.mark.node
def test_the_correct_queue_gets_no_advice(built):
    found = statuses(built, "good")
    assert {k: s for k, (s, _) in found.items()} == dict.fromkeys(found, PASS)
    assert len(found) == 5


@pytest.mark.node
def test_no_attempts(built):
    assert statuses(built, "bare")["retry.no_attempts"][0] == FAIL
    assert statuses(built, "good")["retry.no_attempts"][0] == PASS


@pytest.mark.node
def test_fixed_backoff_without_jitter_with_four_workers(built):
    status, job = statuses(built, "herd")["retry.fixed_backoff_herd"]
    assert status == FAIL and job
    assert statuses(built, "herd-jitter")["retry.fixed_backoff_herd"][0] == PASS


@pytest.mark.node
def test_remove_on_fail_missing_with_a_growing_failed_set(built):
    status, job = statuses(built, "keepfail")["retry.remove_on_fail"]
    assert status == FAIL and built.client.zscore(built.queue("keepfail").key("failed"), job) is not None
    assert statuses(built, "dropfail")["retry.remove_on_fail"][0] == PASS


@pytest.mark.node
def test_job_id_where_deduplication_was_meant(built):
    status, job = statuses(built, "jobid")["retry.jobid_not_deduplication"]
    assert status == FAIL and job.startswith("order-")
    assert statuses(built, "dedup")["retry.jobid_not_deduplication"][0] == PASS


@pytest.mark.node
def test_attempts_far_above_what_jobs_need(built):
    assert statuses(built, "overattempts")["retry.attempts_vs_observed"][0] == FAIL
    assert statuses(built, "good")["retry.attempts_vs_observed"][0] == PASS


def test_the_sample_is_bounded_whatever_the_queue_size(redis_prefix):
    q = redis_prefix.queue("big")
    pipe = redis_prefix.client.pipeline()
    for i in range(3 * SAMPLE_PER_STATE):
        pipe.lpush(q.key("wait"), str(i))
        pipe.hset(q.job_key(str(i)), mapping={"name": "n", "opts": "{not json", "atm": "x"})
    pipe.execute()
    sample = read_sample(redis_prefix.client, q, now_ms=int(time.time() * 1000))
    assert len(sample.jobs) == SAMPLE_PER_STATE  # hostile opts parse as {}: one bad job spoils nothing
    assert all(j.opts == {} and j.attempts_made == 0 for j in sample.jobs)


def test_unknown_workers_leave_the_herd_advice_unknown_not_passed():
    job = SampledJob("1", "wait", "n", {"attempts": 3, "backoff": {"type": "fixed", "delay": 5}}, 0)
    kinds = {a.kind: a.status for a in advise(Sample(None, [job]), workers=None)}
    assert kinds["retry.fixed_backoff_herd"] == "unknown"
