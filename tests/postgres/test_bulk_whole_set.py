"""A whole failed set retried on PostgreSQL (``queues.postgres.bulk_head``): batches go through
BullMQ's own ``retry_jobs``, except a batch holding a flow child or one cut down to nothing by a
tie on the finish time, which go job by job. Whatever the road, every job comes back once with
its counters reset and its ``waiting`` event, and a retried flow child is its parent's pending
dependency again. The jobs are failed by real Node BullMQ 6.7."""

from __future__ import annotations

import time
import uuid

import psycopg
import pytest

from queues.bulk import BulkPlan, MemoryStore
from queues.keys import QueueRef
from queues.postgres import bulk as pg_bulk
from queues.postgres.connection import PostgresConnection
from queues.selection import JobFilter
from tests.support.servers import run_node

pytestmark = [pytest.mark.postgres, pytest.mark.node]

PLAIN, CHILDREN = 230, 3
TIED = 120  # the oldest plain jobs given one finish time: wider than a batch


@pytest.fixture(scope="module")
def pg_url(postgres_server) -> str:
    return postgres_server.create_database("pg_bulk_whole_set")


def rows(url: str, query: str, *params) -> list[tuple]:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(query, params).fetchall()


def test_a_whole_set_retry_moves_each_job_once_and_gives_flow_children_back_to_their_parent(pg_url, monkeypatch):
    name = f"whole-{uuid.uuid4().hex[:8]}"
    made = run_node("pg_bulk.mjs", "flowfail", pg_url, name, str(PLAIN), str(CHILDREN), timeout=180)
    failed, children = made["failed"], set(made["children"])
    failed_now = rows(pg_url, "SELECT count(*) FROM bullmq.job WHERE queue = %s AND state = 'failed'", name)
    assert failed_now == [(len(failed),)]
    # Ties on the finish time are what the batch cut is for: make one wider than a batch (test
    # data only; jobs failed within one millisecond tie the same way).
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE bullmq.job SET finished_at_ms = 1 WHERE queue = %s AND id IN ("
            " SELECT id FROM bullmq.job WHERE queue = %s AND state = 'failed' AND parent_id IS NULL"
            " ORDER BY finished_at_ms, id LIMIT %s)",
            (name, name, TIED),
        )
    roads: list[str] = []
    real_head = pg_bulk.retry_head

    def recording_head(conn, plan):
        head = real_head(conn, plan)
        roads.append("head" if head else "per-job")
        return head

    monkeypatch.setattr(pg_bulk, "retry_head", recording_head)
    queue = QueueRef("pg", "bullmq", name)
    plan = BulkPlan(queue=queue, action="retry", before_ms=int(time.time() * 1000), filt=JobFilter(), rate=400)
    db = PostgresConnection(pg_url, read_only=False)
    try:
        progress = pg_bulk.run_bulk(db, plan=plan, store=MemoryStore())
    finally:
        db.close()

    assert (progress.state, progress.moved, progress.skipped, progress.failed) == ("done", len(failed), 0, 0)
    # Batches of 100: the tie and the batch with the children went job by job, the rest in one statement.
    assert "head" in roads and "per-job" in roads, roads
    waiting = rows(
        pg_url,
        "SELECT id, attempts_made, attempts_started FROM bullmq.job WHERE queue = %s AND state = 'waiting'",
        name,
    )
    assert sorted(i for i, _, _ in waiting) == sorted(failed)
    assert all((made_, started) == (0, 0) for _, made_, started in waiting)
    events = rows(
        pg_url,
        "SELECT data ->> 'jobId', count(*) FROM bullmq.event WHERE queue = %s AND event = 'waiting'"
        " AND data ->> 'prev' = 'failed' GROUP BY 1",
        name,
    )
    assert sorted(i for i, _ in events) == sorted(failed) and all(n == 1 for _, n in events)
    # Each retried child is its parent's pending dependency again, as reprocess_job leaves it
    # (retry_jobs would have left the dependency "failed", the parent's count unchanged).
    parent_queue = f"{name}-parents"
    pending = rows(
        pg_url,
        "SELECT child_id FROM bullmq.job_dependency WHERE parent_queue = %s AND status = 'pending'",
        parent_queue,
    )
    assert {i for (i,) in pending} == children
    assert rows(pg_url, "SELECT pending_deps FROM bullmq.job WHERE queue = %s", parent_queue) == [(CHILDREN,)]
