"""Python bullmq 3.4.4 on PostgreSQL (its own schema, migrated by the Python package to version
4) beside Node BullMQ 6.7 (schema version 11) in one database: Queuewatch discovers and counts
both, lists the Python worker by the name the Python package gives its sessions
(``<schema>:<queue>:w:<name>``), shows a Python job's failure, and the schema check knows both
versions."""

from __future__ import annotations

import asyncio
import html
import re

import pytest
from bullmq import Queue, Worker
from django.urls import reverse

from dashboard.connections.registry import reset_registry
from queues.keys import QueueRef
from queues.sources import ConnectionSpec, source_for
from tests.support.redis_db import point_at
from tests.support.servers import run_node

pytestmark = [pytest.mark.postgres, pytest.mark.node]

PY, NODE = QueueRef("pg", "pyq", "py-orders"), QueueRef("pg", "bullmq", "node-q")


def text_of(response) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode())))


async def python_side(url: str, while_working, name: str = PY.name):
    """Python bullmq adds 3 jobs to queue ``name`` of schema pyq (the first fails) and a worker
    named "pyw" processes them; ``while_working(python's counts, python's worker count)`` runs in a thread
    while that worker is still connected. Returns what it returned."""
    opts = {"backend": "postgres", "connection": url, "schema": "pyq"}
    queue = Queue(name, opts)
    for i in range(3):
        await queue.add("py-job", {"i": i}, {"attempts": 1})

    async def process(job, token):
        if job.data["i"] == 0:
            raise ValueError("py boom")
        return {"ok": job.data["i"]}

    worker = Worker(name, process, {**opts, "name": "pyw"})
    try:
        for _ in range(300):
            counts = await queue.getJobCounts()
            if counts["completed"] + counts["failed"] == 3:
                break
            await asyncio.sleep(0.05)
        workers = len(await queue.get_workers())
        return await asyncio.to_thread(while_working, counts, workers)
    finally:
        await worker.close()
        await queue.close()


@pytest.fixture(scope="module")
def mixed_url(postgres_server) -> str:
    url = postgres_server.create_database("pg_python")
    run_node("pg_fixture.mjs", "add", url, NODE.name, "2")
    return url


def test_python_bullmq_queues_are_discovered_counted_and_their_workers_listed(mixed_url):
    source = source_for(ConnectionSpec("pg", mixed_url, ("bullmq", "pyq")))

    def read(counts, workers):
        found = source.discover()
        snaps = {s.queue: s for s in source.snapshots(found)}
        return found, snaps, source.workers(found), counts, workers

    try:
        found, snaps, listed, counts, workers = asyncio.run(python_side(mixed_url, read))
    finally:
        source.close()
    assert found[0] == NODE and PY in found  # schemas in the spec's order
    assert {k: snaps[PY].counts[k] for k in counts} == counts
    assert counts["completed"] == 2 and counts["failed"] == 1
    assert snaps[NODE].counts["waiting"] == 2
    # Python names its worker's sessions "pyq:py-orders:w:pyw" (its blocking one too, once made).
    assert workers >= 1 and len(listed[PY]) >= 1
    assert {(w.name, w.client) for w in listed[PY]} == {("pyw", "pyq:py-orders:w:pyw")}
    assert listed[NODE] == []


@pytest.mark.django_db
def test_python_jobs_and_schema_version_on_the_pages(settings, mixed_url, logged_in):
    asyncio.run(python_side(mixed_url, lambda counts, workers: None, name="py-pages"))
    point_at(settings, ConnectionSpec("pg", mixed_url, ("bullmq", "pyq")))
    try:
        failed = logged_in.get(reverse("queue", args=["pg", "pyq", "py-pages"]) + "?state=failed")
        health_page = text_of(logged_in.get(reverse("health")))
    finally:
        reset_registry()
    assert failed.status_code == 200 and "py boom" in text_of(failed)
    assert "BullMQ schema version known: bullmq 11, pyq 4." in health_page
