"""The action pages with real Node BullMQ jobs: controls shown by role, error groups, preview,
refusals with clear messages, export (streamed, redacted), the audit log page and CSV, and
hostile job names, failure reasons and audit reasons escaped everywhere."""

from __future__ import annotations

import csv
import io
import json
from io import StringIO

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.urls import reverse

from dashboard.actions import services as operations
from dashboard.actions.models import BulkTask
from dashboard.audit.models import AuditEntry
from queues.connections import ConnectionSpec
from queues.error_groups import fingerprint
from queues.errors import SourceUnavailable
from queues.keys import QueueRef
from tests.support.redis_db import point_at
from tests.support.servers import RedisServer, refused_port, run_node

pytestmark = [pytest.mark.django_db, pytest.mark.node]

HOSTILE_NAME = '<script>alert("n")</script>'
HOSTILE_REASON = '<img src=x onerror=alert(1)> "quoted" & <b>bold</b>'
HOSTILE_AUDIT = '</td><script>alert("audit")</script>'
UNSEEDED = ("default", "bull", "hostile")  # the tests on a refused port or a redis-server of their own


@pytest.fixture
def q(prefixed_queues) -> list[str]:
    """The queue 'hostile' under this test's own key prefix (the app pointed at it): URL arguments."""
    return prefixed_queues.args("hostile")


@pytest.fixture
def seeded(prefixed_queues):
    ids = run_node(
        "seed_actions.mjs",
        prefixed_queues.url,
        "hostile",
        "4",
        "1",
        "1",
        HOSTILE_NAME,
        HOSTILE_REASON,
        prefix=prefixed_queues.prefix,
    )
    # A secret in a failed job's data, for the export's redaction.
    prefixed_queues.client.hset(
        prefixed_queues.queue("hostile").job_key(ids["failed"][0]), "data", json.dumps({"password": "hunter2", "i": 0})
    )
    return ids


@pytest.fixture
def operator_client(client):
    user = User.objects.create_user("op", password="pw")
    user.groups.add(Group.objects.get_or_create(name="operator")[0])
    client.force_login(user)
    client.user = user
    return client


def assert_escaped(html: str) -> None:
    assert "<script>alert" not in html and "<img src=x" not in html and "<b>bold</b>" not in html
    assert "&lt;script&gt;alert(" in html or "&lt;img src=x" in html


def test_viewers_see_no_action_controls_and_operators_do(client, seeded, q):
    viewer = User.objects.create_user("v", password="pw")
    client.force_login(viewer)
    job_url = reverse("job", args=[*q, seeded["failed"][0]])
    queue_url = reverse("queue", args=q) + "?state=failed"
    for url in (job_url, queue_url):
        html = client.get(url).content.decode()
        assert "job-retry" not in html and 'id="bulk-form"' not in html and "queue-pause" not in html
        assert 'class="can-operate"' not in html  # the (live) list's checkboxes stay hidden
    operator = User.objects.create_user("o", password="pw")
    operator.groups.add(Group.objects.get_or_create(name="operator")[0])
    client.force_login(operator)
    html = client.get(job_url).content.decode()
    assert "job-retry" in html and "job-discard" in html and "job-promote" not in html
    html = client.get(queue_url).content.decode()
    assert 'id="bulk-form"' in html and "queue-pause" in html and 'form="bulk-form"' in html
    html = client.get(reverse("job", args=[*q, seeded["delayed"][0]])).content.decode()
    assert "job-promote" in html
    html = client.get(reverse("job", args=[*q[:2], "hostile-dlq", seeded["dlq"][0]])).content.decode()
    assert "job-redrive" in html


def test_error_groups_page_groups_and_escapes(operator_client, seeded, q):
    html = operator_client.get(reverse("queue_errors", args=q)).content.decode()
    assert_escaped(html)
    group = fingerprint(HOSTILE_REASON + " 1")
    assert f'data-fingerprint="{group}"' in html
    assert '<td class="num count">4</td>' in html  # "reason 0" … "reason 3": one group
    assert 'name="fingerprint"' in html and "Preview" in html


def test_preview_counts_samples_and_escapes(operator_client, seeded, q):
    group = fingerprint(HOSTILE_REASON + " 1")
    r = operator_client.post(
        reverse("bulk_preview", args=q),
        {"action": "redrive", "state": "failed", "fingerprint": group, "scope": "matching"},
    )
    html = r.content.decode()
    assert r.status_code == 200 and 'data-count="4"' in html
    assert_escaped(html)
    assert f'name="fingerprint" value="{group}"' in html and 'name="reason" required' in html
    ticked = operator_client.post(
        reverse("bulk_preview", args=q),
        {"action": "discard", "state": "failed", "scope": "selected", "ids": seeded["failed"][:2]},
    )
    assert 'data-count="2"' in ticked.content.decode()


@pytest.mark.parametrize(
    "data, message",
    [
        ({"action": "retry", "state": "failed", "scope": "selected"}, "No jobs are ticked"),
        ({"action": "promote", "state": "failed", "scope": "matching"}, "cannot act on failed jobs"),
        ({"action": "explode", "state": "failed", "scope": "matching"}, "Unknown bulk action"),
        (
            {"action": "retry", "state": "failed", "scope": "matching", "finished_from": "yesterday"},
            "must be a date and time",
        ),
    ],
)
def test_bad_bulk_input_gets_a_clear_message(operator_client, seeded, data, message, q):
    r = operator_client.post(reverse("bulk_preview", args=q), data)
    assert r.status_code == 400 and message in r.content.decode()


def test_refusals_and_vanished_jobs_are_explained(operator_client, seeded, q):
    r = operator_client.post(reverse("bulk_start", args=q), {"action": "retry", "state": "failed", "rate": "10"})
    assert r.status_code == 400 and "Say why" in r.content.decode()
    r = operator_client.post(reverse("job_action", args=[*q, "promote", seeded["failed"][0]]), HTTP_HX_REQUEST="true")
    assert (
        r.status_code == 200
        and "action-result refused" in r.content.decode()
        and "no longer delayed" in r.content.decode()
    )
    r = operator_client.post(reverse("job_action", args=[*q, "retry", "no-such-job"]))
    assert r.status_code == 409 and "no longer exists" in r.content.decode()
    r = operator_client.post(reverse("job_action", args=[*q[:2], "nope", "retry", "1"]))
    assert r.status_code == 404 and "No queue" in r.content.decode()
    r = operator_client.post(
        reverse("queue_action", args=[*q, "clean"]), {"state": "failed", "older_than_minutes": "x", "reason": "r"}
    )
    assert r.status_code == 400 and "whole number of minutes" in r.content.decode()
    assert (
        AuditEntry.objects.filter(outcome="refused").exclude(queue="").count() == 2
    )  # the two that reached Redis (validation refusals are queue-less events)


def test_export_streams_redacted_jsonl_and_csv(operator_client, seeded, q):
    url = reverse("queue_export", args=q)
    r = operator_client.get(url, {"state": "failed", "format": "jsonl"})
    assert r.status_code == 200 and r.streaming and r["Content-Type"].startswith("application/x-ndjson")
    lines = [json.loads(x) for x in b"".join(r.streaming_content).decode().splitlines()]
    assert len(lines) == 4 and all(x["name"] == HOSTILE_NAME for x in lines)
    body = json.dumps(lines)
    assert "hunter2" not in body and "[redacted]" in body
    r = operator_client.get(url, {"state": "failed", "format": "csv", "reason_contains": "ONERROR"})
    rows = list(csv.reader(io.StringIO(b"".join(r.streaming_content).decode())))
    assert len(rows) == 5 and HOSTILE_NAME in rows[1]  # a header and the four matches
    r = operator_client.get(url, {"state": "failed", "format": "csv", "reason_contains": "not there"})
    assert len(b"".join(r.streaming_content).decode().splitlines()) == 1
    r = operator_client.get(url, {"state": "failed", "format": "xml"})
    assert r.status_code == 400 and "jsonl" in r.content.decode()


def test_audit_page_filters_escapes_and_exports_csv(operator_client, seeded, q):
    queue = QueueRef(*q)
    operations.job_action(
        user=operator_client.user,
        via="page",
        queue=queue,
        job_id=seeded["failed"][0],
        action="discard",
        reason=HOSTILE_AUDIT,
    )
    task = operations.bulk_start(
        user=operator_client.user,
        via="api",
        queue=queue,
        action="retry",
        chosen=operations.Selection(state="failed", name=HOSTILE_NAME),
        reason="=cmd|' /C calc'!A0",
        rate=None,
    )
    html = operator_client.get(reverse("audit")).content.decode()
    assert '<script>alert("audit")' not in html and "&lt;/td&gt;&lt;script&gt;" in html
    assert "<script>alert" not in html
    assert "job.discard" in html and "bulk.retry" in html and f'href="/tasks/{task.pk}/"' in html
    only = operator_client.get(reverse("audit"), {"action": "job.discard"}).content.decode()
    assert "job.discard" in only and "bulk.retry</td>" not in only
    r = operator_client.get(reverse("audit_csv"), {"action": "bulk.retry"})
    rows = list(csv.reader(io.StringIO(b"".join(r.streaming_content).decode())))
    assert rows[0][:4] == ["at", "username", "via", "action"] and len(rows) == 2
    assert rows[1][3] == "bulk.retry" and rows[1][9].startswith("'=")  # no spreadsheet formula
    # The queue page links to the running task; the task page shows the filter escaped.
    assert f'href="/tasks/{task.pk}/"' in operator_client.get(reverse("queue", args=q)).content.decode()
    html = operator_client.get(reverse("task", args=[task.pk])).content.decode()
    assert "<script>alert" not in html and "&lt;script&gt;" in html
    assert BulkTask.objects.get(pk=task.pk).state == BulkTask.PENDING  # no monitor in this test


def test_unreachable_redis_gets_a_clear_503(operator_client, settings):
    point_at(settings, ConnectionSpec("default", f"redis://:s3cret@127.0.0.1:{refused_port()}/0", ("bull",)))
    r = operator_client.post(reverse("queue_action", args=[*UNSEEDED, "pause"]))
    assert r.status_code == 503 and "is unavailable" in r.content.decode() and "s3cret" not in r.content.decode()
    r = operator_client.post(
        reverse("api_queue_action", args=[*UNSEEDED, "pause"]), "{}", content_type="application/json"
    )
    assert r.status_code == 503 and r.json()["error"] == "redis_unavailable" and "s3cret" not in r.json()["message"]


def test_an_action_that_fails_on_redis_is_audited_as_an_error(operator_client, settings):
    server = RedisServer()
    try:
        point_at(settings, ConnectionSpec("default", server.url(0), ("bull",)))
        queue = QueueRef(*UNSEEDED)
        operations.queue_action(user=operator_client.user, via="page", queue=queue, action="pause")
        server.kill()  # Redis goes away between two clicks
        with pytest.raises(SourceUnavailable):
            operations.queue_action(user=operator_client.user, via="page", queue=queue, action="resume")
    finally:
        server.stop()
    ok, failed = AuditEntry.objects.order_by("pk")
    assert (ok.action, ok.outcome) == ("queue.pause", "ok")
    assert (failed.action, failed.outcome, failed.username) == ("queue.resume", "error", "op")
    assert "unavailable" in failed.message


def test_api_bulk_with_ids_conflicts_and_bad_bodies(client, seeded, q):
    operator = User.objects.create_user("api-op", password="pw")
    operator.groups.add(Group.objects.get_or_create(name="operator")[0])
    out = StringIO()
    call_command("api_token", "api-op", stdout=out)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {out.getvalue().strip()}"}
    url = reverse("api_bulk_start", args=q)
    body = {"action": "discard", "ids": seeded["failed"][:3], "reason": "duplicates", "rate": 0}
    r = client.post(url, json.dumps(body), content_type="application/json", **auth)
    assert r.status_code == 202, r.content
    task = r.json()
    assert task["state"] == "pending" and task["selection"]["ids"] == seeded["failed"][:3] and task["rate"] is None
    r = client.post(url, json.dumps(body), content_type="application/json", **auth)
    assert r.status_code == 409 and r.json()["task"] == task["id"]
    assert client.get(reverse("api_task", args=[task["id"]]), **auth).json()["id"] == task["id"]
    assert client.get(reverse("api_task", args=[999999]), **auth).status_code == 404
    r = client.post(url, json.dumps({**body, "ids": "1,2"}), content_type="application/json", **auth)
    assert r.status_code == 400 and "must be a list" in r.json()["message"]
    r = client.post(url, "[1, 2", content_type="application/json", **auth)
    assert r.status_code == 400 and "not valid JSON" in r.json()["message"]
    r = client.post(
        reverse("api_bulk_preview", args=q),
        json.dumps({"action": "retry", "state": "active"}),
        content_type="application/json",
        **auth,
    )
    assert r.status_code == 400 and "Unknown state" in r.json()["message"]
    r = client.post(
        reverse("api_job_action", args=[*q, "discard", seeded["failed"][0]]),
        "{}",
        content_type="application/json",
        **auth,
    )
    assert r.status_code == 400 and "Say why" in r.json()["message"]


def test_api_export_for_scripts(client, seeded, q):
    viewer = User.objects.create_user("reader", password="pw")
    out = StringIO()
    call_command("api_token", "reader", stdout=out)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {out.getvalue().strip()}"}
    r = client.get(reverse("api_export", args=q), {"state": "failed", "format": "jsonl"}, **auth)
    lines = b"".join(r.streaming_content).decode().splitlines()
    assert r.status_code == 200 and len(lines) == 4 and "hunter2" not in "".join(lines)
    r = client.get(reverse("api_export", args=q), {"format": "xml"}, **auth)
    assert r.status_code == 400 and r.json()["error"] == "bad_request"
    assert client.get(reverse("api_export", args=q)).status_code == 401
    assert viewer.groups.count() == 0  # reading needs no more than the viewer role


def test_set_role_command_gives_exactly_one_role():
    from django.core.management.base import CommandError

    from dashboard.accounts.auth import role_of

    user = User.objects.create_user("carol", password="pw")
    out = StringIO()
    call_command("set_role", "carol", "admin", stdout=out)
    assert role_of(user) == "admin" and "carol is now admin" in out.getvalue()
    call_command("set_role", "carol", "operator", stdout=StringIO())
    assert role_of(user) == "operator" and list(user.groups.values_list("name", flat=True)) == ["operator"]
    call_command("set_role", "carol", "viewer", stdout=StringIO())
    assert role_of(user) == "viewer" and not user.groups.exists()
    with pytest.raises(CommandError, match="No user named 'ghost'"):
        call_command("set_role", "ghost", "operator")


def test_clean_is_previewed_then_removes_what_was_counted(operator_client, prefixed_queues):
    run_node("produce.mjs", "complete", prefixed_queues.url, "tidy", "3", "", prefixed_queues.prefix)
    q = prefixed_queues.args("tidy")
    r = operator_client.post(
        reverse("bulk_preview", args=q),
        {"action": "clean", "state": "completed", "older_than_minutes": "0", "scope": "matching"},
    )
    html = r.content.decode()
    assert 'data-count="3"' in html and reverse("queue_action", args=[*q, "clean"]) in html
    r = operator_client.post(
        reverse("queue_action", args=[*q, "clean"]),
        {"state": "completed", "older_than_minutes": "0", "reason": "tidy up"},
        HTTP_HX_REQUEST="true",
    )
    assert "Removed 3 completed jobs" in r.content.decode()
    entry = AuditEntry.objects.get(action="queue.clean")
    assert (entry.affected, entry.reason, entry.selection["state"]) == (3, "tidy up", "completed")


def test_task_list_shows_active_then_recent_escaped(client, seeded):
    client.force_login(User.objects.create_user("viewer-t", password="pw"))
    done = BulkTask.objects.create(
        action="discard",
        connection="default",
        prefix="bull",
        queue="old",
        before_ms=1,
        reason=HOSTILE_AUDIT,
        state=BulkTask.DONE,
        total=3,
        moved=3,
    )
    running = BulkTask.objects.create(
        action="redrive",
        connection="default",
        prefix="bull",
        queue=HOSTILE_NAME,
        before_ms=1,
        reason="r",
        state=BulkTask.RUNNING,
        total=10,
        moved=4,
    )
    html = client.get(reverse("tasks")).content.decode()
    assert html.index(f'data-task-id="{running.pk}"') < html.index(f'data-task-id="{done.pk}"')
    assert "40%" in html and "100%" in html
    assert "<script>alert" not in html and "&lt;script&gt;" in html


def test_a_dead_letter_queues_prioritized_tab_offers_a_bulk_redrive_and_counts_it(operator_client, prefixed_queues):
    """Dead letters that wait with a priority (the prioritized set): the tab offers the redrive
    (ticked or all matching) and the queue offers "Redrive all prioritized"; the preview counts
    them. An ordinary queue's prioritized tab offers discard, not redrive."""
    run_node("toolbox.mjs", "hashes", prefixed_queues.url, "bills", "[]", prefix=prefixed_queues.prefix)
    run_node(
        "toolbox.mjs",
        "add",
        prefixed_queues.url,
        "bills-dlq",
        json.dumps([{"name": "bill", "data": {"n": n}, "opts": {"priority": n}} for n in (1, 2)]),
        prefix=prefixed_queues.prefix,
    )
    run_node(
        "toolbox.mjs",
        "add",
        prefixed_queues.url,
        "bills",
        json.dumps([{"name": "bill", "data": {}, "opts": {"priority": 4}}]),
        prefix=prefixed_queues.prefix,
    )
    dlq_tab = operator_client.get(
        reverse("queue", args=prefixed_queues.args("bills-dlq")) + "?state=prioritized"
    ).content.decode()
    form = dlq_tab[dlq_tab.index('<form id="bulk-form"') :]
    form = form[: form.index("</form>")]
    assert '<option value="redrive">redrive to source</option>' in form and '<option value="discard">' in form
    assert 'class="bulk-redrive-prioritized">Redrive all prioritized to the source queue…' in dlq_tab
    preview = operator_client.post(
        reverse("bulk_preview", args=prefixed_queues.args("bills-dlq")),
        {"action": "redrive", "state": "prioritized", "scope": "matching"},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    assert 'data-count="2"' in preview
    plain_tab = operator_client.get(
        reverse("queue", args=prefixed_queues.args("bills")) + "?state=prioritized"
    ).content.decode()
    form = plain_tab[plain_tab.index('<form id="bulk-form"') :]
    form = form[: form.index("</form>")]
    assert '<option value="discard">' in form and 'value="redrive"' not in form
    assert "bulk-redrive-prioritized" not in plain_tab
