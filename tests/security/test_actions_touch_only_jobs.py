"""Discard used to accept any key under the queue: discarding job id ``meta`` wiped the
queue's pause flag, concurrency and rate limit; ``repeat:sch1`` deleted a scheduler's hash and
left its zset entry. A job action now acts on an id only if it is in one of the queue's state
structures, checked inside the same script; a scheduler iteration that is a real job is accepted."""

from __future__ import annotations

import pytest

from queues import actions
from queues.bulk import BulkPlan
from queues.keys import QueueRef
from queues.redis import actions as redis_actions
from queues.redis.bulk import execute_batch

Q = QueueRef("default", "bull", "shop")
ITERATION = "repeat:sch1:1700000000000"


def seed(r) -> None:
    r.hset(
        Q.key("meta"), mapping={"paused": 1, "concurrency": 3, "max": 10, "duration": 1000, "opts.maxLenEvents": 10000}
    )
    r.xadd(Q.key("events"), {"event": "added", "jobId": "1"})
    r.zadd(Q.key("repeat"), {"sch1": 1800000000000})
    r.hset(Q.key("repeat:sch1"), mapping={"name": "nightly", "pattern": "0 0 * * *", "ic": 1})
    r.set(Q.key("de:order-7"), "1")
    # A real iteration of the scheduler, finished and failed: an ordinary job.
    r.hset(
        Q.key(ITERATION),
        mapping={
            "name": "nightly",
            "data": "{}",
            "opts": "{}",
            "timestamp": 1700000000000,
            "finishedOn": 1700000001000,
            "rjk": "sch1",
            "failedReason": "boom",
        },
    )
    r.zadd(Q.key("failed"), {ITERATION: 1700000001000})


def snapshot_of_structures(r) -> dict:
    return {
        "meta": r.hgetall(Q.key("meta")),
        "events": r.xlen(Q.key("events")),
        "repeat": r.zrange(Q.key("repeat"), 0, -1),
        "repeat:sch1": r.hgetall(Q.key("repeat:sch1")),
        "de:order-7": r.get(Q.key("de:order-7")),
    }


STRUCTURES = ("meta", "events", "repeat:sch1", "de:order-7")


@pytest.mark.parametrize("job_id", STRUCTURES)
def test_discard_refuses_a_key_that_is_not_a_job(redis_client, job_id):
    seed(redis_client)
    before = snapshot_of_structures(redis_client)
    result = redis_actions.job_discard(redis_client, queue=Q, job_id=job_id)
    assert result.outcome in (actions.NOT_A_JOB, actions.MISSING), result
    if redis_client.exists(Q.key(job_id)):
        assert result.outcome == actions.NOT_A_JOB and "is not a job" in result.message
    assert snapshot_of_structures(redis_client) == before


@pytest.mark.parametrize("job_id", STRUCTURES)
def test_retry_promote_and_bulk_discard_refuse_it_too(redis_client, job_id):
    seed(redis_client)
    before = snapshot_of_structures(redis_client)
    assert not redis_actions.job_retry(redis_client, queue=Q, job_id=job_id).ok
    assert not redis_actions.job_promote(redis_client, queue=Q, job_id=job_id).ok
    # The bulk engine selected the id from a state that it has since left (or never was in).
    plan = BulkPlan(queue=Q, action="discard", before_ms=1800000000000, job_ids=(job_id,))
    [result] = execute_batch(redis_client, plan, [(job_id, "failed")], now_ms=1800000000000)
    assert result.outcome == actions.NOT_A_JOB
    assert snapshot_of_structures(redis_client) == before


def test_a_scheduler_iteration_that_is_a_real_job_is_accepted(redis_client):
    seed(redis_client)
    retried = redis_actions.job_retry(redis_client, queue=Q, job_id=ITERATION)
    assert retried.ok, retried
    redis_client.lrem(Q.key("wait"), 0, ITERATION)
    redis_client.zadd(Q.key("failed"), {ITERATION: 1700000001000})
    discarded = redis_actions.job_discard(redis_client, queue=Q, job_id=ITERATION)
    assert discarded.ok, discarded
    assert not redis_client.exists(Q.key(ITERATION))
    assert redis_client.hgetall(Q.key("repeat:sch1"))  # the scheduler itself is untouched


@pytest.mark.django_db
@pytest.mark.parametrize("job_id", ["repeat:sch1", "events", "de:order-7"])
def test_duplicate_refuses_a_key_that_is_not_a_job_and_says_so(scratch_queues, client, job_id):
    """The attack: duplicating ``repeat:sch1`` copied a scheduler's hash into a new job; a key of
    another type (the events stream, a deduplication string) answered "Redis unavailable"."""
    from django.urls import reverse

    from tests.support.accounts import user_with

    seed(scratch_queues)
    client.force_login(user_with("operator"))
    waiting_before = scratch_queues.llen(Q.key("wait"))
    response = client.post(reverse("job_action", args=[Q.connection, Q.prefix, Q.name, "duplicate", job_id]))
    assert response.status_code == 409
    assert "is not a job" in response.content.decode() and "unavailable" not in response.content.decode()
    assert scratch_queues.llen(Q.key("wait")) == waiting_before and not scratch_queues.exists(Q.key("1"))


@pytest.mark.django_db
def test_duplicating_a_real_job_still_works(scratch_queues, client):
    from django.urls import reverse

    from tests.support.accounts import user_with

    seed(scratch_queues)
    client.force_login(user_with("operator"))
    response = client.post(reverse("job_action", args=[Q.connection, Q.prefix, Q.name, "duplicate", ITERATION]))
    assert response.status_code == 200 and "duplicated as job" in response.content.decode()
