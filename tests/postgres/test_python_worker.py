"""Beside Python BullMQ workers: failed jobs retried by a bulk task and dead letters redriven on
PostgreSQL are run by a worker of the Python ``bullmq`` package (the pinned one; it knows the
schema up to migration 4, Node migrates to 11, so it runs with ``skipVersionCheck``)."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from queues.bulk import BulkPlan, MemoryStore
from queues.keys import QueueRef
from queues.selection import JobFilter
from queues.sources import ConnectionSpec, source_for
from queues.sources.facets import bulk_of, commands_of
from tests.support.servers import run_node

pytestmark = [pytest.mark.postgres, pytest.mark.node]


def run_python_worker(url: str, queue: str, n: int) -> list[tuple[str, object]]:
    """A Python bullmq worker on ``queue`` until it has run ``n`` jobs: (id, data) of each."""
    from bullmq import Worker

    done: list[tuple[str, object]] = []

    async def work() -> None:
        async def process(job, token):
            done.append((job.id, job.data))
            return "ok"

        worker = Worker(queue, process, {"backend": "postgres", "connection": url, "skipVersionCheck": True})
        deadline = time.monotonic() + 60
        while len(done) < n and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await worker.close()

    asyncio.run(work())
    return done


def test_retried_and_redriven_jobs_are_run_by_a_python_worker(postgres_db):
    url, tag = postgres_db.url, uuid.uuid4().hex[:6]
    name, dlq, src = f"py-{tag}", f"py{tag}-dlq", f"py{tag}"
    failed = run_node("pg_bulk.mjs", "mix", url, name, "5", "0")["failed"]
    dead = run_node("pg_bulk.mjs", "dlq", url, dlq, "3", src)["ids"]
    source = source_for(ConnectionSpec("pg", url, ("bullmq",)))
    try:
        plan = BulkPlan(
            queue=QueueRef("pg", "bullmq", name),
            action="retry",
            before_ms=int(time.time() * 1000),
            filt=JobFilter(),
            rate=None,
        )
        progress = bulk_of(source).run(
            plan=plan, store=MemoryStore(), should_cancel=lambda: False, on_progress=lambda p: None, count_limit=None
        )
        moved = [
            commands_of(source).redrive(
                QueueRef("pg", "bullmq", dlq), job_id=i, source=QueueRef("pg", "bullmq", src), payload_field="data"
            )
            for i in dead
        ]
    finally:
        source.close()
    assert progress.moved == 5 and all(m.ok for m in moved)
    ran = dict(run_python_worker(url, name, 10))  # the 5 retried, and the 5 that were waiting already
    assert set(failed) <= set(ran) and len(ran) == 10
    redriven = dict(run_python_worker(url, src, 4))
    assert redriven == {**{f"redrive-{dlq}-{i}": {"i": n} for n, i in enumerate(dead[:-1])}, "order-7": {"i": -7}}
    assert run_node("pg_bulk.mjs", "counts", url, src)["counts"]["completed"] == 5  # the opener and the 4
