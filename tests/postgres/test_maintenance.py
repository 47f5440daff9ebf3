"""Queue maintenance and redrive on BullMQ-on-PostgreSQL queues through the API, checked by real
Node BullMQ 6.7: clean, drain and obliterate change exactly what Node's own ``Queue.clean``,
``Queue.drain`` and ``Queue.obliterate`` change on a twin queue seeded the same way (compared with
``getJobCounts()``); a redrive moves dead letters to their source queue, unwrapped, and a Node
worker completes them; a redrive to a queue of another connection (a Redis one) is refused with
the reason and nothing changes; a role without write grants gets the clear error and nothing changes."""

from __future__ import annotations

import json
import uuid

import pytest
from django.urls import reverse

from dashboard.accounts.auth import ADMIN, OPERATOR
from dashboard.audit.models import AuditEntry
from dashboard.connections.registry import reset_registry
from queues.keys import QueueRef
from queues.sources import ConnectionSpec, source_for
from queues.sources.facets import commands_of
from tests.support.accounts import token_for, user_with
from tests.support.pg_roles import ACT_GRANTS, READ_GRANTS, role_url
from tests.support.redis_db import point_at
from tests.support.servers import run_node

pytestmark = [pytest.mark.postgres, pytest.mark.node, pytest.mark.django_db]


@pytest.fixture(scope="module")
def pg_url(postgres_server) -> str:
    return postgres_server.create_database("pg_maintenance")


@pytest.fixture
def admin(settings, pg_url):
    point_at(settings, ConnectionSpec("pg", pg_url, ("bullmq",)))
    token = token_for(user_with(ADMIN))
    yield token
    reset_registry()


def node(mode: str, url: str, queue: str, *args: str) -> dict:
    return run_node("pg_bulk.mjs", mode, url, queue, *args, timeout=150)


def post(client, token: str, url: str, **body):
    return client.post(
        url,
        json.dumps({"reason": "test", **body}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def queue_action(client, token, queue: str, action: str, **body):
    return post(client, token, reverse("api_queue_action", args=["pg", "bullmq", queue, action]), **body)


def twins(url: str) -> tuple[str, str]:
    """Two queues seeded the same way: one for Queuewatch, one for Node's own call."""
    tag = uuid.uuid4().hex[:8]
    ours, theirs = f"pg-ours-{tag}", f"pg-node-{tag}"
    for name in (ours, theirs):
        node("mix", url, name, "4", "3")
    return ours, theirs


def counts(url: str, queue: str) -> dict:
    return node("counts", url, queue)["counts"]


def test_clean_removes_what_node_queue_clean_removes(client, admin, pg_url):
    ours, theirs = twins(pg_url)
    before = counts(pg_url, ours)
    for state in ("failed", "completed", "waiting", "prioritized", "delayed"):  # one state after another
        answer = queue_action(client, admin, ours, "clean", state=state, older_than_minutes=0)
        assert answer.status_code == 200, answer.content
        node_side = node("clean", pg_url, theirs, state, "0", "0", ours)  # then getJobCounts() of ours too
        assert answer.json()["affected"] == node_side["removed"] > 0, state
        assert node_side["twin"] == node_side["counts"] != before, state
        before = node_side["counts"]
    entries = AuditEntry.objects.filter(queue=ours, action="queue.clean").order_by("at")
    assert [(e.outcome, e.affected, e.connection) for e in entries] == [
        (AuditEntry.OK, n, "pg") for n in (4, 3, 3, 2, 2)
    ]


def test_clean_keeps_jobs_younger_than_the_age(client, admin, pg_url):
    ours, _ = twins(pg_url)
    before = counts(pg_url, ours)
    answer = queue_action(client, admin, ours, "clean", state="failed", older_than_minutes=60)
    assert answer.status_code == 200 and answer.json()["affected"] == 0
    assert counts(pg_url, ours) == before


def test_drain_removes_what_node_queue_drain_removes(client, admin, pg_url):
    ours, theirs = twins(pg_url)
    for delayed, removed in ((False, 5), (True, 2)):  # 3 waiting + 2 prioritized, then the 2 delayed
        answer = queue_action(client, admin, ours, "drain", delayed=delayed)
        assert answer.status_code == 200, answer.content
        node_side = node("drain", pg_url, theirs, "1" if delayed else "0", ours)
        theirs_after = node_side["counts"]
        assert node_side["twin"] == theirs_after
        assert answer.json()["affected"] == removed
    assert (theirs_after["completed"], theirs_after["failed"], theirs_after["delayed"]) == (3, 4, 0)


def test_obliterate_is_refused_until_paused_then_leaves_what_node_leaves(client, admin, pg_url):
    ours, theirs = twins(pg_url)
    before = counts(pg_url, ours)
    refused = queue_action(client, admin, ours, "obliterate", confirm=ours)
    assert refused.json()["outcome"] == "refused", refused.content
    assert refused.json()["message"] == f"Queue {ours} is not paused: pause it first, so no worker takes new jobs."
    assert counts(pg_url, ours) == before
    assert queue_action(client, admin, ours, "pause").status_code == 200
    answer = queue_action(client, admin, ours, "obliterate", confirm=ours)
    assert answer.status_code == 200 and answer.json()["outcome"] == "done", answer.content
    assert answer.json()["affected"] == sum(before.values())
    source = source_for(ConnectionSpec("pg", pg_url, ("bullmq",)))
    try:  # read before Node opens the queue again (a Queue writes its meta rows)
        assert QueueRef("pg", "bullmq", ours) not in source.discover()
    finally:
        source.close()
    assert counts(pg_url, ours) == node("obliterate", pg_url, theirs)["counts"] == dict.fromkeys(before, 0)


def test_the_settings_page_counts_as_node_does(client, admin, pg_url):
    ours, _ = twins(pg_url)
    node("pause", pg_url, ours)
    assert queue_action(client, admin, ours, "set-concurrency", concurrency=3).status_code == 200
    source = source_for(ConnectionSpec("pg", pg_url, ("bullmq",)))
    try:
        now = commands_of(source).settings(QueueRef("pg", "bullmq", ours))
    finally:
        source.close()
    reported = counts(pg_url, ours)
    assert now.paused and now.concurrency == 3
    # getJobCounts() of a paused queue: its 3 ready jobs are neither "waiting" nor listed (the
    # page shows them under "paused", as the queue page does on this backend).
    assert now.counts == {**{k: reported[k] for k in reported}, "paused": 3, "schedulers": 0}
    assert reported["waiting"] == 0


def test_a_redrive_moves_dead_letters_to_the_source_and_a_node_worker_completes_them(client, admin, settings, pg_url):
    tag = uuid.uuid4().hex[:6]
    dlq, src = f"orders{tag}-dlq", f"orders{tag}"
    settings.QUEUEWATCH_DLQ_MAP = {dlq: f"{src}:data"}  # its dead letters are envelopes: the original is "data"
    seeded = node("dlq", pg_url, dlq, "3", src)
    token = token_for(user_with(OPERATOR, username="redriver"))
    moved = []
    for job_id in seeded["ids"]:
        answer = post(client, token, reverse("api_job_action", args=["pg", "bullmq", dlq, "redrive", job_id]))
        assert answer.status_code == 200, answer.content
        moved.append(answer.json())
    custom = moved[-1]
    assert custom["outcome"] == "done" and f"moved from {dlq} to {src} as job order-7" in custom["message"]
    assert "deduplication id dedup-7" in custom["message"] and "priority 4" in custom["message"]
    assert counts(pg_url, dlq) == dict.fromkeys(counts(pg_url, dlq), 0)
    worked = node("work", pg_url, src)
    expected = {f"redrive-{dlq}-{i}" for i in seeded["ids"][:-1]} | {"order-7"}
    assert set(worked["done"]) == expected
    # The envelope was opened: the source's workers got the original data.
    assert worked["data"]["order-7"] == {"i": -7}
    assert sorted(worked["data"][f"redrive-{dlq}-{seeded['ids'][0]}"].items()) == [("i", 0)]
    assert worked["counts"]["completed"] == 1 + len(expected) and worked["counts"]["failed"] == 0
    again = post(client, token, reverse("api_job_action", args=["pg", "bullmq", dlq, "redrive", "order-7"]))
    assert again.status_code == 409 and again.json()["outcome"] == "missing"


def test_a_redrive_to_a_redis_queue_is_refused_and_nothing_changes(pg_url, redis_url):
    tag = uuid.uuid4().hex[:6]
    dlq, src = f"mixed{tag}-dlq", f"mixed{tag}"
    seeded = node("dlq", pg_url, dlq, "2", src)
    source = source_for(ConnectionSpec("pg", pg_url, ("bullmq",)))
    try:
        before = counts(pg_url, dlq)
        result = commands_of(source).redrive(
            QueueRef("pg", "bullmq", dlq), job_id=seeded["ids"][0], source=QueueRef("default", "bull", src)
        )
    finally:
        source.close()
    assert result.outcome == "other_connection"
    assert str(result.message) == (
        f"Job {seeded['ids'][0]} was not moved: {dlq} is on connection pg/bullmq and {src} on default/bull. "
        "A redrive adds the copy and removes the dead letter in one transaction of one PostgreSQL database "
        f"schema, so it cannot move a job between connections or schemas. It was left in {dlq}."
    )
    assert counts(pg_url, dlq) == before and counts(pg_url, src)["completed"] == 1


def test_a_role_without_write_grants_cannot_clean_or_drain_and_nothing_changes(
    client, settings, postgres_server, pg_url
):
    ours, _ = twins(pg_url)
    before = counts(pg_url, ours)
    url = role_url(postgres_server, pg_url, *READ_GRANTS)
    point_at(settings, ConnectionSpec("pg", url, ("bullmq",)))
    token = token_for(user_with(ADMIN, username="reader-admin"))
    try:
        answers = [
            queue_action(client, token, ours, "clean", state="failed", older_than_minutes=0),
            queue_action(client, token, ours, "drain", delayed=True),
        ]
    finally:
        reset_registry()
    assert [a.status_code for a in answers] == [503, 503]
    assert all("PostgreSQL refused the action" in a.content.decode() for a in answers)
    assert counts(pg_url, ours) == before
    assert [e.outcome for e in AuditEntry.objects.filter(queue=ours)] == [AuditEntry.ERROR, AuditEntry.ERROR]


def test_obliterate_with_the_action_grants_but_not_the_owner_role_says_what_it_needs(
    client, settings, postgres_server, pg_url
):
    ours, _ = twins(pg_url)
    node("pause", pg_url, ours)
    before = counts(pg_url, ours)
    url = role_url(postgres_server, pg_url, *READ_GRANTS, *ACT_GRANTS)
    point_at(settings, ConnectionSpec("pg", url, ("bullmq",)))
    token = token_for(user_with(ADMIN, username="acting-admin"))
    try:
        answer = queue_action(client, token, ours, "obliterate", confirm=ours)
    finally:
        reset_registry()
    assert answer.status_code == 503, answer.content
    assert answer.json()["message"] == (
        "Connection 'pg' is unavailable: PostgreSQL refused to obliterate the queue: BullMQ's last step drops the "
        "queue's job-id sequence, which only the role that owns it may do (the role the producers connect as); "
        "grant that role to Queuewatch's user, or obliterate from the application (nothing was changed)"
    )
    assert counts(pg_url, ours) == before
    entry = AuditEntry.objects.get(queue=ours, action="queue.obliterate")
    assert entry.outcome == AuditEntry.ERROR
