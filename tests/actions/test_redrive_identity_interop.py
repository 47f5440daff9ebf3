"""A redriven dead letter keeps its identity, against real Node BullMQ 6.7 (``queues.redrive``):
its custom id when free, its deduplication id (a later ``Queue.add`` with that id is
deduplicated against the copy), its priority and lifo; and a second redrive of a dead letter
with the same custom id is never stuck."""

from __future__ import annotations

import json

import pytest

from queues import redrive
from tests.support.servers import node_available
from tests.support.toolbox import node, q, r, server  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.node,
              pytest.mark.skipif(not node_available(), reason="Node.js and npm are needed for interop tests")]

DLQ, SOURCE = q("orders-dlq"), q("orders")


def dead_letter(server, *specs) -> list[str]:
    return node(server, "add", DLQ.name, json.dumps(list(specs)))["ids"]


def move(r, job_id):
    return redrive.job_redrive_to_source(r, dlq=DLQ, job_id=job_id, source=SOURCE)


def test_a_redriven_dead_letter_keeps_its_id_deduplication_id_priority_and_lifo(server, r):
    node(server, "hashes", SOURCE.name, "[]")  # Node's Queue creates the source queue's meta
    plain = dead_letter(server, {"name": "charge", "data": {"n": 1},
                                 "opts": {"jobId": "order-42", "deduplication": {"id": "charge-42"}, "priority": 3}},
                        {"name": "mail", "data": {"n": 2}, "opts": {"jobId": "mail-7", "lifo": True}},
                        {"name": "plain", "data": {"n": 3}, "opts": {}})[2]
    charged, mailed, generated = move(r, "order-42"), move(r, "mail-7"), move(r, plain)
    assert (charged.outcome, charged.kept) == ("done", ("job_id", "deduplication", "priority")), charged.message
    assert "kept: its id, deduplication id charge-42, priority 3." in charged.message
    assert (mailed.outcome, mailed.kept) == ("done", ("job_id", "lifo"))
    assert generated.kept == ("new_id",) and f"as job redrive-orders-dlq-{plain};" in generated.message
    assert r.zscore(SOURCE.key("prioritized"), "order-42") is not None and not r.exists(DLQ.job_key("order-42"))

    again = node(server, "add", SOURCE.name, json.dumps([{"name": "charge", "data": {"n": 99},
                                                          "opts": {"deduplication": {"id": "charge-42"}}}]))
    assert again["ids"] == ["order-42"]  # Node's own Queue.add is deduplicated against the redriven copy
    assert json.loads(again["hashes"]["order-42"]["data"]) == {"n": 1}

    jobs = node(server, "run", SOURCE.name, "3", "0", "1")["jobs"]
    assert set(jobs) == {"order-42", "mail-7", f"redrive-orders-dlq-{plain}"}
    assert all(j["state"] == "completed" for j in jobs.values())
    assert jobs["order-42"]["opts"]["priority"] == 3 and jobs["order-42"]["opts"]["deduplication"] == {"id": "charge-42"}
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
