"""Actions on BullMQ-on-PostgreSQL queues through the API, checked by real Node BullMQ 6.7: a
retried failed job is waiting again for Node and a Node worker completes it; discard, promote,
pause and resume do what Node's own calls would; a job a worker holds is refused with the lock
message; every action is in the audit log; a role that may only read gets a clear error and
nothing changes."""

from __future__ import annotations

import json
import subprocess
import uuid

import pytest
from django.urls import reverse

from dashboard.accounts.auth import OPERATOR
from dashboard.audit.models import AuditEntry
from dashboard.connections.registry import reset_registry
from queues.sources import ConnectionSpec, source_for
from tests.support import pg_roles
from tests.support.accounts import token_for, user_with
from tests.support.pg_roles import ACT_GRANTS, READ_GRANTS
from tests.support.redis_db import point_at
from tests.support.servers import NODE_DIR, finish, run_node

pytestmark = [pytest.mark.postgres, pytest.mark.node, pytest.mark.django_db]


@pytest.fixture(scope="module")
def pg_url(postgres_server) -> str:
    return postgres_server.create_database("pg_actions")


@pytest.fixture
def api(settings, pg_url):
    point_at(settings, ConnectionSpec("pg", pg_url, ("bullmq",)))
    token = token_for(user_with(OPERATOR))
    yield token
    reset_registry()


def node(mode: str, url: str, queue: str) -> dict:
    return run_node("pg_actions.mjs", mode, url, queue)


def post(client, token: str, url: str, **body):
    return client.post(
        url,
        json.dumps({"reason": "test", **body}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def job_action(client, token, queue: str, action: str, job_id: str, **body):
    return post(client, token, reverse("api_job_action", args=["pg", "bullmq", queue, action, job_id]), **body)


def queue_action(client, token, queue: str, action: str):
    return post(client, token, reverse("api_queue_action", args=["pg", "bullmq", queue, action]))


def fresh_queue() -> str:
    return f"pg-act-{uuid.uuid4().hex[:8]}"


def test_a_retried_failed_job_waits_again_and_a_node_worker_completes_it(client, api, pg_url):
    name = fresh_queue()
    seeded = node("seed", pg_url, name)
    assert seeded["counts"]["failed"] == 1
    answer = job_action(client, api, name, "retry", seeded["failed"])
    assert answer.status_code == 200, answer.content
    assert answer.json() == {
        "job_id": seeded["failed"],
        "outcome": "done",
        "message": f"Job {seeded['failed']} moved from failed back to waiting.",
    }
    counts = node("counts", pg_url, name)["counts"]
    assert (counts["waiting"], counts["failed"], counts["completed"]) == (1, 0, 1)
    again = job_action(client, api, name, "retry", seeded["failed"])  # waiting now
    assert again.status_code == 409 and again.json() == {
        "job_id": seeded["failed"],
        "outcome": "wrong_state",
        "message": f"Job {seeded['failed']} is neither failed nor completed, so it cannot be retried.",
    }
    worked = node("work", pg_url, name)
    assert worked["done"] == [seeded["failed"]] and worked["counts"]["completed"] == 2
    entries = AuditEntry.objects.filter(queue=name, action="job.retry").order_by("at")
    assert [(e.job_ids, e.outcome, e.connection) for e in entries] == [
        ([seeded["failed"]], AuditEntry.OK, "pg"),
        ([seeded["failed"]], AuditEntry.REFUSED, "pg"),
    ]


def test_a_retry_resets_the_attempts_a_node_worker_counts(client, api, pg_url):
    name = fresh_queue()
    seeded = node("seed", pg_url, name)
    assert job_action(client, api, name, "retry", seeded["completed"]).json()["outcome"] == "done"
    source = source_for(ConnectionSpec("pg", pg_url, ("bullmq",)))
    try:
        row = source._db.rows(  # what BullMQ stored, read back as it is
            "SELECT state::text, attempts_made, attempts_started FROM bullmq.job WHERE queue = %s AND id = %s",
            (name, seeded["completed"]),
        )
    finally:
        source.close()
    assert row == [("waiting", 0, 0)]


def test_discard_and_promote_and_a_missing_job(client, api, pg_url):
    name = fresh_queue()
    seeded = node("seed", pg_url, name)
    promoted = job_action(client, api, name, "promote", seeded["delayed"])
    assert promoted.json()["message"] == f"Job {seeded['delayed']} promoted: it runs as soon as a worker is free."
    counts = node("counts", pg_url, name)["counts"]
    assert (counts["delayed"], counts["waiting"]) == (0, 1)
    not_delayed = job_action(client, api, name, "promote", seeded["delayed"])
    assert not_delayed.status_code == 409 and not_delayed.json()["outcome"] == "wrong_state"
    removed = job_action(client, api, name, "discard", seeded["completed"])
    assert removed.json() == {
        "job_id": seeded["completed"],
        "outcome": "done",
        "message": f"Job {seeded['completed']} removed.",
    }
    assert node("counts", pg_url, name)["counts"]["completed"] == 0
    gone = job_action(client, api, name, "discard", seeded["completed"])
    assert gone.status_code == 409
    assert gone.json()["outcome"] == "missing"
    assert gone.json()["message"] == f"Job {seeded['completed']} no longer exists."
    assert [e.action for e in AuditEntry.objects.filter(queue=name).order_by("at")] == [
        "job.promote",
        "job.promote",
        "job.discard",
        "job.discard",
    ]


def test_pause_then_resume_as_node_sees_it(client, api, pg_url):
    name = fresh_queue()
    node("seed", pg_url, name)
    assert queue_action(client, api, name, "pause").status_code == 200
    paused = node("counts", pg_url, name)
    assert paused["paused"] is True
    assert queue_action(client, api, name, "resume").status_code == 200
    assert node("counts", pg_url, name)["paused"] is False
    assert [(e.action, e.outcome) for e in AuditEntry.objects.filter(queue=name).order_by("at")] == [
        ("queue.pause", AuditEntry.OK),
        ("queue.resume", AuditEntry.OK),
    ]


def test_a_job_a_worker_holds_is_not_discarded(client, api, pg_url):
    name = fresh_queue()
    holder = subprocess.Popen(
        ["node", "pg_actions.mjs", "hold", pg_url, name],
        cwd=NODE_DIR,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = holder.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("HELD "), (line, holder.stderr.read() if holder.poll() is not None else "")  # type: ignore[union-attr]
        job_id = line.split()[1]
        refused = job_action(client, api, name, "discard", job_id)
        assert refused.status_code == 409
        assert refused.json()["outcome"] == "locked"
        assert refused.json()["message"] == (
            f"Job {job_id} is being processed by a worker (it holds the lock); "
            "it was not removed. Try again when it has finished."
        )
        entry = AuditEntry.objects.get(queue=name, action="job.discard")
        assert entry.outcome == AuditEntry.REFUSED and entry.job_ids == [job_id]
        out, err = finish(holder, input="release\n", timeout=60)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    assert holder.returncode == 0, err
    assert json.loads(out.strip().splitlines()[-1])["counts"]["completed"] == 1  # the worker finished it


def role_url(postgres_server, pg_url: str, *grants: str) -> str:
    node("counts", pg_url, "migrated")  # BullMQ's schema made, for the grants to name
    return pg_roles.role_url(postgres_server, pg_url, *grants)


@pytest.fixture
def read_only_role(postgres_server, pg_url):
    """A role that may read the BullMQ schema but not change it."""
    return role_url(postgres_server, pg_url, *READ_GRANTS)


def test_a_role_with_the_documented_grants_can_act(client, settings, postgres_server, pg_url):
    url = role_url(postgres_server, pg_url, *READ_GRANTS, *ACT_GRANTS)
    name = fresh_queue()
    seeded = node("seed", pg_url, name)
    point_at(settings, ConnectionSpec("pg", url, ("bullmq",)))
    token = token_for(user_with(OPERATOR))
    try:
        outcomes = [
            job_action(client, token, name, "retry", seeded["failed"]).json()["outcome"],
            job_action(client, token, name, "promote", seeded["delayed"]).json()["outcome"],
            job_action(client, token, name, "discard", seeded["completed"]).json()["outcome"],
            queue_action(client, token, name, "pause").json()["outcome"],
        ]
    finally:
        reset_registry()
    assert outcomes == ["done"] * 4
    after = node("counts", pg_url, name)
    assert after["paused"] is True
    assert (after["counts"]["failed"], after["counts"]["completed"], after["counts"]["delayed"]) == (0, 0, 0)


def test_a_role_without_write_grants_gets_a_clear_error_and_nothing_changes(client, settings, pg_url, read_only_role):
    name = fresh_queue()
    seeded = node("seed", pg_url, name)
    point_at(settings, ConnectionSpec("pg", read_only_role, ("bullmq",)))
    token = token_for(user_with(OPERATOR))
    try:
        answer = job_action(client, token, name, "retry", seeded["failed"])
        paused = queue_action(client, token, name, "pause")
    finally:
        reset_registry()
    assert answer.status_code == 503 and paused.status_code == 503
    assert "PostgreSQL refused the action" in answer.content.decode()
    counts = node("counts", pg_url, name)
    assert (counts["counts"]["failed"], counts["paused"]) == (1, False)
    assert [e.outcome for e in AuditEntry.objects.filter(queue=name)] == [AuditEntry.ERROR, AuditEntry.ERROR]
