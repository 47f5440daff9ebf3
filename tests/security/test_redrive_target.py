"""Job data used to choose a redrive's target (``data.source``, ``queue``, ``sourceQueue``
overrode the DLQ map and name patterns) and the target need not exist, so a producer could
inject jobs into any queue, even one that did not exist. The target now comes from the
operator's configuration only, and must be an existing queue (checked in the same script)."""

from __future__ import annotations

import json

import pytest

from queues import dead_letters
from queues.bulk import BulkPlan, MemoryStore
from queues.keys import QueueRef
from queues.redis import redrive
from queues.redis.bulk import run_bulk
from queues.selection import JobFilter

STEERING = {"source": "victim", "queue": "victim", "sourceQueue": "victim", "source_queue": "victim", "i": 1}


def dead_letter(r, dlq: QueueRef, job_id: str) -> None:
    r.hset(dlq.job_key(job_id), mapping={"name": "x", "data": json.dumps(STEERING), "opts": "{}", "timestamp": 5})
    r.lpush(dlq.key("wait"), job_id)


def exists(r, queue: QueueRef) -> None:
    r.hset(queue.key("meta"), "opts.maxLenEvents", 10000)


def test_job_data_cannot_choose_the_target(redis_prefix):
    r = redis_prefix.client
    DLQ, ORDERS, VICTIM = (redis_prefix.queue(n) for n in ("orders-dlq", "orders", "victim"))
    exists(r, ORDERS), exists(r, VICTIM)
    dead_letter(r, DLQ, "1")
    source = dead_letters.dlq_source(dlq_name=DLQ.name)
    assert source == "orders"
    assert redrive.job_redrive_to_source(r, dlq=DLQ, job_id="1", source=redis_prefix.queue(source)).ok
    dead_letter(r, DLQ, "2")
    plan = BulkPlan(queue=DLQ, action="redrive", before_ms=10**13, filt=JobFilter(state="waiting"), rate=None)
    assert run_bulk(r, plan=plan, store=MemoryStore()).moved == 1
    assert r.llen(ORDERS.key("wait")) == 2 and r.llen(VICTIM.key("wait")) == 0


@pytest.mark.parametrize("bulk", [False, True])
def test_a_target_queue_that_does_not_exist_is_refused(redis_prefix, bulk):
    r = redis_prefix.client
    ghost_dlq, ghost = redis_prefix.queue("ghost-dlq"), redis_prefix.queue("ghost")
    dead_letter(r, ghost_dlq, "1")
    if bulk:
        plan = BulkPlan(queue=ghost_dlq, action="redrive", before_ms=10**13, filt=JobFilter(state="waiting"), rate=None)
        progress = run_bulk(r, plan=plan, store=MemoryStore())
        assert progress.moved == 0 and progress.skipped_by == {redrive.UNKNOWN_TARGET: 1}
    else:
        result = redrive.job_redrive_to_source(r, dlq=ghost_dlq, job_id="1", source=ghost)
        assert result.outcome == redrive.UNKNOWN_TARGET and "no queue ghost" in result.message
    assert r.exists(ghost_dlq.job_key("1"))  # left where it was
    assert r.keys(ghost.key("*")) == []  # nothing was created


@pytest.mark.django_db
def test_a_redrive_copies_only_bullmq_job_options(prefixed_queues, client):
    """The attack: a producer writes a dead letter whose ``opts`` carry keys BullMQ does not
    define (``prefix``, anything): the redrive copied them into the source queue's job. Only
    BullMQ's own job options are copied now."""
    from django.urls import reverse

    from tests.support.accounts import user_with

    r = prefixed_queues.client
    dlq, orders = prefixed_queues.queue("orders-dlq"), prefixed_queues.queue("orders")
    exists(r, orders), exists(r, dlq)
    opts = {"attempts": 4, "backoff": {"type": "fixed", "delay": 10}, "kl": 5, "prefix": "evil", "x-anything": [1, 2]}
    r.hset(dlq.job_key("d1"), mapping={"name": "x", "data": "{}", "opts": json.dumps(opts), "timestamp": 5})
    r.lpush(dlq.key("wait"), "d1")
    client.force_login(user_with("operator"))
    response = client.post(
        reverse("job_action", args=[*prefixed_queues.args("orders-dlq"), "redrive", "d1"]), {"reason": "fixed"}
    )
    assert response.status_code == 200, response.content.decode()[:500]
    (copy_id,) = [i.decode() for i in r.lrange(orders.key("wait"), 0, -1)]
    copied = json.loads(r.hget(orders.job_key(copy_id), "opts"))
    assert "prefix" not in copied and "x-anything" not in copied
    assert copied["attempts"] == 4 and copied["backoff"] == {"type": "fixed", "delay": 10} and copied["kl"] == 5
