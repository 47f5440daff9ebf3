"""Queuewatch behind Redis ACL users, with the command lists docs/operations.md gives (read
from that page, so the documentation and what is tested cannot drift apart): the read-only user
serves every page of a queue; the actions user runs actions; a user without the write commands
gets a clear error from an action, the job stays as it was, and the audit log records it."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from dashboard.audit.models import AuditEntry
from dashboard.core import dash_redis
from queues.connections import ConnectionSpec
from queues.keys import QueueRef
from tests.support.accounts import token_for, user_with
from tests.support.cluster_queues import published_counts
from tests.support.live import monitor_thread
from tests.support.redis_db import point_at
from tests.support.servers import ROOT, RedisServer, node_available, run_node
from tests.support.waiting import wait_for

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not node_available(), reason="needs node and npm (Node BullMQ builds the queue)"),
]

Q = {"connection": "default", "prefix": "bull", "name": "mail"}
MAIL = QueueRef("default", "bull", "mail")
OPTIONAL = {"client|setname", "client|list", "config|get"}  # docs/operations.md: optional for a reader
STATES = ("waiting", "active", "prioritized", "delayed", "completed", "failed", "waiting-children")


def documented_rule(user: str) -> list[str]:
    """The ``ACL SETUSER <user> …`` rule of docs/operations.md, without the user and password,
    with the key pattern opened to every key (the test's server holds only this queue)."""
    docs = (ROOT / "docs" / "operations.md").read_text()
    [line] = re.findall(rf"^ACL SETUSER {user} on >PASSWORD (.+)$", docs, flags=re.M)
    return ["~*" if word.startswith("~") else word for word in line.split()]


@pytest.fixture(scope="module")
def acl_server():
    """A queue in every state built by Node BullMQ (toolbox.mjs fill: waiting, prioritized,
    delayed, completed, failed, a job scheduler), and the documented users."""
    server = RedisServer()
    ids = run_node("toolbox.mjs", "fill", server.url(0), "mail", "0")["ids"]
    with server.client() as admin:
        admin.execute_command("ACL", "SETUSER", "reader", "on", ">pw", *documented_rule("queuewatch-reader"))
        admin.execute_command("ACL", "SETUSER", "actor", "on", ">pw", *documented_rule("queuewatch"))
        # Allowed scripts but none of the writes they make.
        admin.execute_command(
            "ACL", "SETUSER", "scripter", "on", ">pw", *documented_rule("queuewatch-reader"), "+evalsha", "+script|load"
        )
    server.ids = ids
    yield server
    server.stop()


def app_as(settings, redis_db, server: RedisServer, user: str) -> None:
    point_at(settings, ConnectionSpec("default", f"redis://{user}:pw@127.0.0.1:{server.port}/0", ("bull",)))
    settings.QUEUEWATCH_DASHBOARD_REDIS_URL = redis_db.url


@pytest.fixture
def admin(client):
    user = user_with("admin")
    client.force_login(user)
    client.token = token_for(user)
    return client


def body_of(response) -> str:
    return (b"".join(response.streaming_content) if response.streaming else response.content).decode()


def test_the_read_only_user_serves_every_page_of_a_queue(admin, settings, redis_db, acl_server):
    app_as(settings, redis_db, acl_server, "reader")
    ids = acl_server.ids
    failed, delayed = ids["failed"][0], ids["delayed"][0]
    queue = reverse("queue", kwargs=Q)
    pages = [reverse("overview"), reverse("schedulers"), reverse("health"), queue]
    pages += [f"{queue}?state={state}" for state in STATES]
    pages += [
        reverse(name, kwargs=Q)
        for name in ("queue_schedulers", "queue_history", "queue_timings", "queue_advice", "queue_errors")
    ]
    pages += [reverse(name, kwargs=Q) for name in ("queue_export", "add_job", "queue_settings", "migrate_repeat")]
    pages += [reverse("job", kwargs={**Q, "job_id": job}) for jobs in ids.values() for job in jobs]
    pages += [reverse("job_raw", kwargs={**Q, "job_id": failed, "field": field}) for field in ("data", "opts")]
    pages += [reverse("edit_retry", kwargs={**Q, "job_id": failed})]
    pages += [reverse("scheduler_edit", kwargs={**Q, "scheduler_id": "hourly"})]
    for page in pages:
        response = admin.get(page)
        text = body_of(response)
        assert response.status_code == 200, (page, text[:500])
        assert "may not run a command" not in text and "Cannot reach" not in text, page
    assert ">mail</a>" in admin.get(reverse("overview")).content.decode()
    assert "boom" in admin.get(reverse("job", kwargs={**Q, "job_id": failed})).content.decode()
    assert "hourly" in admin.get(reverse("queue_schedulers", kwargs=Q)).content.decode()

    bearer = {"HTTP_AUTHORIZATION": f"Bearer {admin.token}"}
    admin.logout()
    counts = admin.get(reverse("api_queue", kwargs=Q), **bearer).json()["counts"]
    assert (counts["failed"], counts["delayed"], counts["completed"]) == (1, 2, 1)
    listed = admin.get(reverse("api_jobs", kwargs=Q) + "?state=delayed", **bearer)
    assert listed.status_code == 200 and delayed in listed.content.decode()
    assert admin.get(reverse("api_job", kwargs={**Q, "job_id": failed}), **bearer).json()["state"] == "failed"


def api_post(client, name: str, body: dict, **kwargs):
    return client.post(
        reverse(name, kwargs={**Q, **kwargs}),
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {client.token}",
    )


@pytest.mark.parametrize("user", ["reader", "scripter"])
def test_an_action_without_the_write_commands_is_a_clear_error_and_audited(admin, settings, redis_db, acl_server, user):
    app_as(settings, redis_db, acl_server, user)
    failed = acl_server.ids["failed"][0]
    with acl_server.client() as direct:
        before = direct.hgetall(MAIL.job_key(failed)), direct.zscore(MAIL.key("failed"), failed)
        response = api_post(admin, "api_job_action", {}, action="retry", job_id=failed)
        after = direct.hgetall(MAIL.job_key(failed)), direct.zscore(MAIL.key("failed"), failed)
    assert response.status_code == 503
    body = response.json()
    assert body["error"] == "redis_unavailable"
    assert "the Redis user may not run a command (its ACL)" in body["message"]
    assert after == before  # still failed, nothing written
    entry = AuditEntry.objects.get(action="job.retry")
    assert (entry.outcome, entry.job_ids, entry.queue) == (AuditEntry.ERROR, [failed], "mail")
    assert "may not run a command" in entry.message


def test_the_actions_user_runs_actions(admin, settings, redis_db, acl_server):
    app_as(settings, redis_db, acl_server, "actor")
    ids = acl_server.ids
    outcomes = [
        api_post(admin, "api_job_action", {}, action="retry", job_id=ids["failed"][0]),
        api_post(admin, "api_job_action", {}, action="promote", job_id=ids["delayed"][0]),
        api_post(admin, "api_job_action", {"reason": "not needed"}, action="discard", job_id=ids["waiting"][0]),
        api_post(admin, "api_queue_action", {}, action="pause"),
        api_post(admin, "api_queue_action", {}, action="resume"),
        api_post(admin, "api_jobs", {"name": "hello", "data": {"to": "a@example.com"}}),
    ]
    assert [r.status_code for r in outcomes] == [200, 200, 200, 200, 200, 201], [r.content for r in outcomes]
    with acl_server.client() as direct:
        assert direct.zscore(MAIL.key("failed"), ids["failed"][0]) is None
        assert direct.zscore(MAIL.key("delayed"), ids["delayed"][0]) is None
        assert not direct.exists(MAIL.job_key(ids["waiting"][0]))
        assert direct.exists(MAIL.job_key(outcomes[-1].json()["id"]))
    assert set(AuditEntry.objects.values_list("outcome", flat=True)) == {AuditEntry.OK}


@pytest.mark.django_db(transaction=True)
def test_the_monitor_reads_with_the_read_only_user(settings, live_setup, acl_server):
    # The dashboard's own Redis (live_setup's database) is another server: the reader only reads.
    point_at(settings, ConnectionSpec("default", f"redis://reader:pw@127.0.0.1:{acl_server.port}/0", ("bull",)))
    with acl_server.client() as direct:
        direct.acl_log_reset()
        with monitor_thread(tick=0.3, name="reader-monitor", lock_ttl_ms=2000):
            wait_for(lambda: (published_counts().get(("bull", "mail")) or {}).get("completed") == 1, timeout=20)
            wait_for(lambda: dash_redis.read_workers(dash_redis.dashboard_redis()) is not None, timeout=20)
        refused = {entry["object"] for entry in direct.acl_log()}
    # Only what the guide calls optional was refused, and the monitor carried on without it.
    assert refused <= OPTIONAL and "client|list" in refused
    assert "default" in dash_redis.read_workers(dash_redis.dashboard_redis())["unknown"]
