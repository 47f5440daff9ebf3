"""Bulk tasks on BullMQ-on-PostgreSQL queues, run by the monitor and driven through the API as the
Redis ones are (tests/actions/test_bulk_tasks.py), checked by real Node BullMQ 6.7: a paced retry
shows its preview and its progress on the way and a live Node worker completes every job exactly
once; a cancel stops a paced task with what moved staying moved; a bulk redrive moves a dead-letter
queue into its source; a role without write grants ends the task with the clear error and nothing
changes; every task is in the audit log; the pages preview, start and cancel a task the same way."""

from __future__ import annotations

import json
import subprocess
import time
import uuid

import pytest
from django.urls import reverse

from dashboard.accounts.auth import OPERATOR
from dashboard.actions.models import BulkTask
from dashboard.audit.models import AuditEntry
from dashboard.core.db import db_retry
from queues.sources import ConnectionSpec
from tests.support.accounts import token_for, user_with
from tests.support.live import monitor_thread
from tests.support.pg_roles import ACT_GRANTS, READ_GRANTS, role_url
from tests.support.redis_db import point_at
from tests.support.servers import NODE_DIR, finish, run_node
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.node, pytest.mark.django_db(transaction=True)]


def node(mode: str, url: str, queue: str, *args: str) -> dict:
    return run_node("pg_bulk.mjs", mode, url, queue, *args, timeout=150)


@pytest.fixture
def pg_app(live_setup, redis_db, postgres_db, settings):
    """The app and a running monitor on a Redis connection and this test's PostgreSQL database."""
    redis_side = ConnectionSpec("default", redis_db.url, ("bull",))
    point_at(settings, redis_side, ConnectionSpec("pg", postgres_db.url, ("bullmq",)))
    with monitor_thread(tick=0.3, name="pg-bulk", lock_ttl_ms=2000):
        yield postgres_db.url


@pytest.fixture
def operator_token():
    return token_for(user_with(OPERATOR, username="bulk-op"))


def api(client, token: str, name: str, route: str, **body):
    return client.post(
        reverse(route, args=["pg", "bullmq", name]),
        json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def task_json(client, token: str, task_id: int) -> dict:
    answer = db_retry(lambda: client.get(reverse("api_task", args=[task_id]), HTTP_AUTHORIZATION=f"Bearer {token}"))
    assert answer.status_code == 200, answer.content
    return answer.json()


def follow(client, token: str, task_id: int, until: set[str], timeout: float = 60) -> list[dict]:
    """The task's API answers, polled until its state is one of ``until``."""
    seen = [task_json(client, token, task_id)]
    deadline = time.monotonic() + timeout
    while seen[-1]["state"] not in until:
        assert time.monotonic() < deadline, seen[-1]
        time.sleep(0.05)
        seen.append(task_json(client, token, task_id))
    return seen


def test_a_paced_retry_shows_preview_and_progress_and_a_live_node_worker_completes_each_job_once(
    client, pg_app, postgres_db, operator_token
):
    url, name = postgres_db.url, f"bulk-{uuid.uuid4().hex[:6]}"
    failed = node("mix", url, name, "40", "2")["failed"]
    preview = api(
        client,
        operator_token,
        name,
        "api_bulk_preview",
        action="retry",
        state="failed",
        reason_contains="boom",
        scope="matching",
    )
    assert preview.status_code == 200, preview.content
    assert (preview.json()["count"], preview.json()["complete"], len(preview.json()["sample"])) == (40, True, 10)
    assert {j["id"] for j in preview.json()["sample"]} <= set(failed)
    worker = subprocess.Popen(
        ["node", "pg_bulk.mjs", "serve", url, name, "45"],
        cwd=NODE_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stdout.readline().strip() == "READY", worker.stderr.read()  # type: ignore[union-attr]
        started = api(
            client,
            operator_token,
            name,
            "api_bulk_start",
            action="retry",
            state="failed",
            scope="matching",
            reason="fixed in v2",
            rate=20,
        )
        assert started.status_code == 202, started.content
        task_id = started.json()["id"]
        seen = follow(client, operator_token, task_id, {"done", "failed", "cancelled"})
        out, err = finish(worker, timeout=90)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    final = seen[-1]
    assert (final["state"], final["total"], final["moved"], final["skipped"], final["failed"]) == (
        "done",
        40,
        40,
        0,
        0,
    ), final
    # Paced at 20 jobs/s in batches of 5: progress was shown on the way, not only at the end.
    assert any(0 < s["percent"] < 100 and s["moved"] for s in seen[:-1]), [s["percent"] for s in seen]
    done = json.loads(out.strip().splitlines()[-1])
    assert worker.returncode == 0, err
    # Every retried job run once by the live worker (beside the 5 that were waiting already).
    assert len(done["done"]) == len(set(done["done"])) == 45 and set(failed) <= set(done["done"])
    assert (done["counts"]["completed"], done["counts"]["failed"]) == (47, 0)
    entries = AuditEntry.objects.filter(queue=name, action="bulk.retry").order_by("at")
    assert [(e.outcome, e.via, e.affected) for e in entries] == [("started", "api", 0), ("ok", "task", 40)]
    page = client.get(reverse("task", args=[task_id]))
    assert page.status_code in (200, 302)  # the task page (signed-in readers) exists for PostgreSQL tasks too


def test_cancel_stops_a_paced_task_and_what_moved_stays_moved(client, pg_app, postgres_db, operator_token):
    url, name = postgres_db.url, f"slow-{uuid.uuid4().hex[:6]}"
    node("mix", url, name, "60", "0")
    started = api(
        client,
        operator_token,
        name,
        "api_bulk_start",
        action="retry",
        state="failed",
        scope="matching",
        reason="again",
        rate=10,
    )
    task_id = started.json()["id"]
    wait_for(lambda: task_json(client, operator_token, task_id)["moved"] >= 5, timeout=30)
    cancel = client.post(reverse("api_task_cancel", args=[task_id]), HTTP_AUTHORIZATION=f"Bearer {operator_token}")
    assert cancel.status_code == 200, cancel.content
    final = follow(client, operator_token, task_id, {"cancelled", "done"})[-1]
    assert final["state"] == "cancelled" and 5 <= final["moved"] < 60
    counts = node("counts", url, name)["counts"]
    assert (counts["waiting"] - 3, counts["failed"]) == (final["moved"], 60 - final["moved"])  # 3 were waiting before
    entry = AuditEntry.objects.get(queue=name, action="bulk.retry", via="task")
    assert entry.outcome == "partial" and entry.affected == final["moved"]
    again = api(
        client,
        operator_token,
        name,
        "api_bulk_start",
        action="discard",
        state="failed",
        scope="matching",
        reason="give up",
        rate="unpaced",
    )
    assert again.status_code == 202  # the queue is free for the next task
    assert follow(client, operator_token, again.json()["id"], {"done", "failed"})[-1]["moved"] == 60 - final["moved"]
    assert node("counts", url, name)["counts"]["failed"] == 0


def test_a_bulk_redrive_moves_a_dead_letter_queue_into_its_source(
    client, pg_app, postgres_db, operator_token, settings
):
    url, tag = postgres_db.url, uuid.uuid4().hex[:6]
    dlq, source = f"pay{tag}-dlq", f"pay{tag}"
    settings.QUEUEWATCH_DLQ_MAP = {dlq: f"{source}:data"}
    ids = node("dlq", url, dlq, "12", source)["ids"]
    started = api(
        client,
        operator_token,
        dlq,
        "api_bulk_start",
        action="redrive",
        state="waiting",
        scope="matching",
        reason="fixed",
        rate="unpaced",
    )
    assert started.status_code == 202, started.content
    final = follow(client, operator_token, started.json()["id"], {"done", "failed"})[-1]
    assert (final["state"], final["moved"], final["skipped"]) == ("done", 12, 0), final
    worked = node("work", url, source)
    assert sorted(worked["done"]) == sorted(f"redrive-{dlq}-{i}" for i in ids[:-1])
    assert sorted(d["i"] for d in worked["data"].values()) == list(range(12))


def test_a_role_without_write_grants_ends_the_task_with_the_clear_error_and_nothing_changes(
    client, live_setup, redis_db, settings, postgres_db, postgres_server, operator_token
):
    url, name = postgres_db.url, f"ro-{uuid.uuid4().hex[:6]}"
    node("mix", url, name, "8", "0")
    redis_side = ConnectionSpec("default", redis_db.url, ("bull",))
    for grants, expected in ((READ_GRANTS, "failed"), ((*READ_GRANTS, *ACT_GRANTS), "done")):
        # The monitor's registry is made when it starts: one monitor per role.
        point_at(settings, redis_side, ConnectionSpec("pg", role_url(postgres_server, url, *grants), ("bullmq",)))
        with monitor_thread(tick=0.3, name=f"pg-bulk-{expected}", lock_ttl_ms=2000):
            started = api(
                client,
                operator_token,
                name,
                "api_bulk_start",
                action="retry",
                state="failed",
                scope="matching",
                reason="x",
                rate="unpaced",
            )
            final = follow(client, operator_token, started.json()["id"], {"done", "failed", "cancelled"})[-1]
        assert final["state"] == expected, final
        if expected == "failed":  # the reading grant only: the clear error, nothing changed
            assert final["moved"] == 0 and "PostgreSQL refused the action" in final["error"]
            assert node("counts", url, name)["counts"]["failed"] == 8
            entry = AuditEntry.objects.get(queue=name, action="bulk.retry", via="task")
            assert entry.outcome == "error"
        else:  # with the documented grants the same task works
            assert final["moved"] == 8 and node("counts", url, name)["counts"]["failed"] == 0
    assert db_retry(lambda: BulkTask.objects.filter(queue=name).count()) == 2


def test_the_pages_preview_start_and_cancel_a_postgres_bulk_task(client, settings, postgres_db):
    url, name = postgres_db.url, f"page-{uuid.uuid4().hex[:6]}"
    failed = node("mix", url, name, "6", "0")["failed"]
    point_at(settings, ConnectionSpec("pg", url, ("bullmq",)))
    client.force_login(user_with(OPERATOR, username="page-op"))
    q = ["pg", "bullmq", name]
    ticked = client.post(
        reverse("bulk_preview", args=q), {"action": "retry", "state": "failed", "scope": "selected", "ids": failed[:2]}
    )
    assert ticked.status_code == 200 and 'data-count="2"' in ticked.content.decode()
    matching = client.post(reverse("bulk_preview", args=q), {"action": "retry", "state": "failed", "scope": "matching"})
    assert matching.status_code == 200 and 'data-count="6"' in matching.content.decode()
    # The queue page's one filter (a part of the name, any case) selects in the database too.
    for part, count in (("OO", 6), ("fine", 0)):
        named = client.post(
            reverse("bulk_preview", args=q),
            {"action": "retry", "state": "failed", "name_contains": part, "all_matching": "yes", "scope": "selected"},
        )
        assert named.status_code == 200 and f'data-count="{count}"' in named.content.decode(), (part, named.content)
    started = client.post(
        reverse("bulk_start", args=q),
        {"action": "retry", "state": "failed", "scope": "matching", "reason": "from the page", "rate": "5"},
    )
    assert started.status_code == 200, started.content
    task = BulkTask.objects.get(queue=name)
    assert (task.connection, task.state, task.reason) == ("pg", BulkTask.PENDING, "from the page")
    cancelled = client.post(reverse("task_cancel", args=[task.pk]))  # no monitor runs: it stops before it starts
    assert cancelled.status_code == 200
    task.refresh_from_db()
    assert task.state == BulkTask.CANCELLED
    assert node("counts", url, name)["counts"]["failed"] == 6
    assert [e.action for e in AuditEntry.objects.filter(queue=name).order_by("at")] == ["bulk.retry", "bulk.cancel"]
