"""A redriven dead letter keeps its identity, against real Node BullMQ 6.7 (``queues.redis.redrive``):
its custom id when free, its deduplication id (a later ``Queue.add`` with that id is
deduplicated against the copy), its priority and lifo; a second redrive of a dead letter with
the same custom id is never stuck; dead letters that wait with a priority (the prioritized set)
are redriven in bulk too, and prioritized jobs can be discarded in bulk."""

from __future__ import annotations

import json
import time

import pytest

from queues.bulk import BulkPlan, MemoryStore
from queues.redis import redrive
from queues.redis.bulk import run_bulk
from queues.selection import JobFilter
from tests.support.servers import node_available
from tests.support.toolbox import node, q, r, server  # noqa: F401  (fixtures)

pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="Node.js and npm are needed for interop tests"),
]

DLQ, SOURCE = q("orders-dlq"), q("orders")


def dead_letter(server, *specs) -> list[str]:
    return node(server, "add", DLQ.name, json.dumps(list(specs)))["ids"]


def move(r, job_id):
    return redrive.job_redrive_to_source(r, dlq=DLQ, job_id=job_id, source=SOURCE)


def test_a_redriven_dead_letter_keeps_its_id_deduplication_id_priority_and_lifo(server, r):
    node(server, "hashes", SOURCE.name, "[]")  # Node's Queue creates the source queue's meta
    plain = dead_letter(
        server,
        {
            "name": "charge",
            "data": {"n": 1},
            "opts": {"jobId": "order-42", "deduplication": {"id": "charge-42"}, "priority": 3},
        },
        {"name": "mail", "data": {"n": 2}, "opts": {"jobId": "mail-7", "lifo": True}},
        {"name": "plain", "data": {"n": 3}, "opts": {}},
    )[2]
    charged, mailed, generated = move(r, "order-42"), move(r, "mail-7"), move(r, plain)
    assert (charged.outcome, charged.kept) == ("done", ("job_id", "deduplication", "priority")), charged.message
    assert "kept: its id, deduplication id charge-42, priority 3." in charged.message
    assert (mailed.outcome, mailed.kept) == ("done", ("job_id", "lifo"))
    assert generated.kept == ("new_id",) and f"as job redrive-orders-dlq-{plain};" in generated.message
    assert r.zscore(SOURCE.key("prioritized"), "order-42") is not None and not r.exists(DLQ.job_key("order-42"))

    again = node(
        server,
        "add",
        SOURCE.name,
        json.dumps([{"name": "charge", "data": {"n": 99}, "opts": {"deduplication": {"id": "charge-42"}}}]),
    )
    assert again["ids"] == ["order-42"]  # Node's own Queue.add is deduplicated against the redriven copy
    assert json.loads(again["hashes"]["order-42"]["data"]) == {"n": 1}

    jobs = node(server, "run", SOURCE.name, "3", "0", "1")["jobs"]
    assert set(jobs) == {"order-42", "mail-7", f"redrive-orders-dlq-{plain}"}
    assert all(j["state"] == "completed" for j in jobs.values())
    assert jobs["order-42"]["opts"]["priority"] == 3 and jobs["order-42"]["opts"]["deduplication"] == {
        "id": "charge-42"
    }
    assert jobs["mail-7"]["opts"]["lifo"] is True and jobs["mail-7"]["data"] == {"n": 2}


def test_a_second_redrive_with_the_same_custom_id_is_never_stuck(server, r):
    node(server, "hashes", SOURCE.name, "[]")
    dead_letter(server, {"name": "invoice", "data": {"try": 1}, "opts": {"jobId": "inv-9"}})
    assert move(r, "inv-9").kept[0] == "job_id"
    # The same work dead-letters again while its first copy still waits: not run twice, kept.
    dead_letter(server, {"name": "invoice", "data": {"try": 2}, "opts": {"jobId": "inv-9"}})
    waiting = move(r, "inv-9")
    assert waiting.outcome == "target_exists" and "inv-9 (wait)" in waiting.message
    assert r.exists(DLQ.job_key("inv-9"))
    node(server, "run", SOURCE.name, "1", "0")  # the first copy completes
    second = move(r, "inv-9")  # no longer refused: a new id, and the reason
    assert second.outcome == "done", second.message
    assert "as job redrive-orders-dlq-inv-9; kept: a new id (inv-9 is taken by a completed job)." in second.message
    jobs = node(server, "run", SOURCE.name, "1", "0")["jobs"]
    assert jobs["redrive-orders-dlq-inv-9"]["data"] == {"try": 2} and r.llen(DLQ.key("wait")) == 0
    # A third time both ids are taken by finished copies: test_actions_unit covers that id.


def test_prioritized_dead_letters_are_redriven_in_bulk_and_keep_their_priority(server, r):
    """A dead letter added with a priority waits in the dead-letter queue's prioritized set, not
    its wait list: a bulk redrive of that state moves each (by filter and ticked), priority kept,
    and Node's worker runs them in priority order in the source queue."""
    node(server, "hashes", SOURCE.name, "[]")
    ids = dead_letter(
        server,
        *({"name": "charge", "data": {"n": n}, "opts": {"jobId": f"p-{n}", "priority": n}} for n in (5, 1, 3)),
        {"name": "plain", "data": {"n": 0}, "opts": {"jobId": "w-0"}},
    )
    assert r.zcard(DLQ.key("prioritized")) == 3 and r.lrange(DLQ.key("wait"), 0, -1) == [b"w-0"]
    now = int(time.time() * 1000) + 1
    by_filter = run_bulk(
        r,
        plan=BulkPlan(queue=DLQ, action="redrive", before_ms=now, filt=JobFilter(state="prioritized"), rate=None),
        store=MemoryStore(),
    )
    assert (by_filter.moved, by_filter.skipped, by_filter.kept_by) == (3, 0, {"job_id": 3, "priority": 3})
    assert r.zcard(DLQ.key("prioritized")) == 0 and r.lrange(DLQ.key("wait"), 0, -1) == [b"w-0"]  # the plain one stays
    assert {m.decode() for m in r.zrange(SOURCE.key("prioritized"), 0, -1)} == {"p-5", "p-1", "p-3"}
    jobs = node(server, "run", SOURCE.name, "3", "0", "1")
    assert jobs["order"] == ["p-1", "p-3", "p-5"] and jobs["jobs"]["p-5"]["opts"]["priority"] == 5
    assert ids[:3] == ["p-5", "p-1", "p-3"]


def test_ticked_prioritized_jobs_can_be_discarded_in_bulk(server, r):
    ids = node(
        server,
        "add",
        SOURCE.name,
        json.dumps(
            [{"name": "p", "data": {"n": n}, "opts": {"priority": n}} for n in (2, 4)]
            + [{"name": "w", "data": {}, "opts": {}}]
        ),
    )["ids"]
    final = run_bulk(
        r,
        plan=BulkPlan(
            queue=SOURCE, action="discard", before_ms=int(time.time() * 1000) + 1, job_ids=tuple(ids[:2]), rate=None
        ),
        store=MemoryStore(),
    )
    assert (final.moved, final.skipped) == (2, 0)
    assert r.zcard(SOURCE.key("prioritized")) == 0 and not r.exists(SOURCE.job_key(ids[0]))
    assert r.lrange(SOURCE.key("wait"), 0, -1) == [ids[2].encode()]
