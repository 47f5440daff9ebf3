"""The operator toolbox on BullMQ-on-PostgreSQL queues through the API, checked by real Node
BullMQ 6.7: a job added with options is where Node's ``Queue.add`` puts it and a Node worker runs
it with its data; the same custom id answers "duplicated" and the same deduplication id
"deduplicated", nothing added; a duplicate copies a job's name and data under a new id; an
edit-and-retry writes the patched data and the job runs again with it; a stale preview is
refused and nothing changes; a bulk edit-and-retry patches every failed job of a filter."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from django.urls import reverse

from dashboard.accounts.auth import OPERATOR
from dashboard.audit.models import AuditEntry
from dashboard.connections.registry import reset_registry
from queues.bulk import BulkPlan, MemoryStore
from queues.keys import QueueRef
from queues.selection import JobFilter
from queues.sources import ConnectionSpec, source_for
from queues.sources.facets import bulk_of
from tests.support.accounts import token_for, user_with
from tests.support.redis_db import point_at
from tests.support.servers import run_node

pytestmark = [pytest.mark.postgres, pytest.mark.node, pytest.mark.django_db]


@pytest.fixture(scope="module")
def pg_url(postgres_server) -> str:
    return postgres_server.create_database("pg_toolbox")


@pytest.fixture
def token(settings, pg_url):
    point_at(settings, ConnectionSpec("pg", pg_url, ("bullmq",)))
    yield token_for(user_with(OPERATOR))
    reset_registry()


def post(client, token: str, url: str, **body):
    return client.post(
        url,
        json.dumps({"reason": "test", **body}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def test_add_as_node_adds_and_duplicates_and_deduplication_are_told_apart(client, token, pg_url):
    name = f"tb-{uuid.uuid4().hex[:6]}"
    run_node("pg_actions.mjs", "seed", pg_url, name)  # the queue exists (Queuewatch never creates one)
    url = reverse("api_jobs", args=["pg", "bullmq", name])
    added = post(client, token, url, name="invoice", data={"n": 41}, opts={"jobId": "inv-41", "priority": 2})
    assert added.status_code == 201 and added.json() == {"id": "inv-41"}, added.content
    again = post(client, token, url, name="invoice", data={"n": 0}, opts={"jobId": "inv-41"})
    assert again.status_code == 200 and again.json()["created"] is False and again.json()["reason"] == "duplicated"
    first = post(client, token, url, name="mail", data={"n": 1}, opts={"deduplication": {"id": "d-1"}})
    assert first.status_code == 201
    second = post(client, token, url, name="mail", data={"n": 2}, opts={"deduplication": {"id": "d-1"}})
    assert second.status_code == 200 and second.json()["reason"] == "deduplicated"
    assert second.json()["id"] == first.json()["id"]
    counts = run_node("pg_actions.mjs", "counts", pg_url, name)["counts"]
    assert (counts["prioritized"], counts["waiting"], counts["delayed"]) == (1, 1, 1)
    worked = run_node("pg_bulk.mjs", "work", pg_url, name)
    assert worked["data"]["inv-41"] == {"n": 41} and worked["data"][first.json()["id"]] == {"n": 1}
    assert [e.outcome for e in AuditEntry.objects.filter(queue=name, action="queue.add").order_by("at")] == [
        "ok",
        "refused",
        "ok",
        "refused",
    ]


def test_duplicate_and_edit_and_retry_run_again_under_a_node_worker(client, token, pg_url):
    name = f"tb-{uuid.uuid4().hex[:6]}"
    seeded = run_node("pg_actions.mjs", "seed", pg_url, name)

    def act(action: str, job_id: str, **body):
        return post(client, token, reverse("api_job_action", args=["pg", "bullmq", name, action, job_id]), **body)

    copy = act("duplicate", seeded["completed"])
    assert copy.status_code == 200 and copy.json()["outcome"] == "done", copy.content
    stale = act("edit-retry", seeded["failed"], patch={"n": 10, "fixed": True}, expected="0" * 16)
    assert stale.status_code == 409 and stale.json()["outcome"] == "changed"
    edited = act("edit-retry", seeded["failed"], patch={"n": 10, "fixed": True})
    assert edited.json() == {
        "job_id": seeded["failed"],
        "outcome": "done",
        "message": f"Job {seeded['failed']}'s data was edited and the job moved back to waiting.",
    }
    not_failed = act("edit-retry", seeded["failed"], patch={"n": 11})
    assert not_failed.status_code == 409 and not_failed.json()["outcome"] == "wrong_state"
    worked = run_node("pg_bulk.mjs", "work", pg_url, name)
    assert worked["data"][seeded["failed"]] == {"n": 10, "fixed": True}
    copies = [i for i in worked["done"] if i != seeded["failed"]]
    assert len(copies) == 1 and worked["data"][copies[0]] == {"n": 2}  # the completed job's data
    assert worked["counts"]["failed"] == 0


def test_a_bulk_edit_and_retry_patches_each_failed_job_and_node_runs_them_with_it(pg_url):
    name = f"tb-{uuid.uuid4().hex[:6]}"
    failed = run_node("pg_bulk.mjs", "mix", pg_url, name, "6", "1")["failed"]
    queue = QueueRef("pg", "bullmq", name)
    schema = {"type": "object", "required": ["i", "fixed"]}
    plan = BulkPlan(
        queue=queue,
        action="edit-retry",
        before_ms=int(time.time() * 1000),
        filt=JobFilter(state="failed", reason_contains="boom"),
        rate=None,
        patch={"fixed": True},
        schema=schema,
    )
    source = source_for(ConnectionSpec("pg", pg_url, ("bullmq",)))
    try:
        progress = bulk_of(source).run(
            plan=plan, store=MemoryStore(), should_cancel=lambda: False, on_progress=lambda p: None, count_limit=None
        )
    finally:
        source.close()
    assert (progress.state, progress.total, progress.moved, progress.skipped) == ("done", 6, 6, 0)
    worked = run_node("pg_bulk.mjs", "work", pg_url, name)
    assert {i: worked["data"][i] for i in failed} == {i: {"i": n, "fixed": True} for n, i in enumerate(failed)}
