"""A queue's job schema through the pages and the JSON API, on queues and jobs real Node BullMQ
6.7 made: an admin sets, replaces and removes it (audited with before and after; viewers,
operators, read-only mode and a missing CSRF token are refused); a bad schema is refused;
adding (page and API: 400 with the reasons, nothing written), duplicating, editing-and-retrying
one job and a whole group all refuse data that does not pass it; valid data is added and a Node
worker processes it."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from dashboard.actions.bulk_runner import plan_for
from dashboard.actions.models import BulkTask, QueueSchema
from dashboard.audit.models import AuditEntry
from queues.bulk import MemoryStore
from queues.messages import from_data
from queues.redis.bulk import run_bulk
from tests.support.accounts import token_for, user_with
from tests.support.servers import run_node

pytestmark = [pytest.mark.django_db, pytest.mark.node]

SCHEMA = {
    "type": "object",
    "required": ["email"],
    "properties": {
        "email": {"type": "string", "pattern": "^[^@]+@[^@]+\\.[a-z]+$"},
        "amount": {"type": "integer", "minimum": 1},
    },
}


@pytest.fixture
def q(prefixed_queues) -> list[str]:
    """The queue 'sc' under this test's own key prefix (the app pointed at it): URL arguments."""
    return prefixed_queues.args("sc")


@pytest.fixture
def failed(prefixed_queues):
    specs = [
        {"name": "mail", "data": {"email": "bad@", "password": "hunter2"}},
        {"name": "mail", "data": {"email": "also-bad@", "amount": 0}},
    ]
    return run_node("toolbox.mjs", "fail", prefixed_queues.url, "sc", json.dumps(specs), prefix=prefixed_queues.prefix)[
        "ids"
    ]


def api(client, url: str, body, token: str):
    data = body if isinstance(body, str) else json.dumps(body)
    return client.post(url, data, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def api_get(client, url: str, token: str):
    return client.get(url, HTTP_AUTHORIZATION=f"Bearer {token}")


def keys(redis_prefix) -> list:
    return sorted(k for k in redis_prefix.client.keys(redis_prefix.queue("sc").key("*")) if not k.endswith(b":events"))


def set_schema(client, q, schema=SCHEMA) -> str:
    token = token_for(user_with("admin", username="schema-admin"))
    assert (
        api(client, reverse("api_queue_action", args=[*q, "set-schema"]), {"schema": schema}, token).status_code == 200
    )
    return token


def test_an_admin_sets_replaces_and_removes_the_schema_on_the_settings_page(client, failed, q):
    admin = user_with("admin")
    client.force_login(admin)
    page = client.get(reverse("queue_settings", args=q)).content.decode()
    assert "No job schema" in page and 'name="schema"' in page
    url = reverse("queue_action", args=[*q, "set-schema"])
    done = client.post(url, {"schema": json.dumps(SCHEMA)}, HTTP_HX_REQUEST="true")
    assert b'class="action-result ok"' in done.content
    row = QueueSchema.objects.get(connection="default", prefix=q[1], queue="sc")
    assert row.schema == SCHEMA and row.updated_by == admin and row.updated_by_name == "user-admin"
    page = client.get(reverse("queue_settings", args=q)).content.decode()
    assert "&quot;required&quot;: [" in page and "user-admin" in page  # the current schema, in the textarea
    replaced = {**SCHEMA, "required": ["email", "amount"]}
    assert b"replaced" in client.post(url, {"schema": json.dumps(replaced)}, HTTP_HX_REQUEST="true").content
    first, second = AuditEntry.objects.filter(action="queue.set-schema", outcome=AuditEntry.OK).order_by("pk")
    assert first.selection["change"]["before"] is None and first.selection["change"]["after"] == SCHEMA
    assert second.selection["change"]["before"] == SCHEMA and second.selection["change"]["after"] == replaced
    assert '+    "amount"' in second.selection["change"]["diff"] and first.user == admin and first.via == "page"
    removed = client.post(reverse("queue_action", args=[*q, "remove-schema"]), HTTP_HX_REQUEST="true")
    assert b"removed" in removed.content and not QueueSchema.objects.exists()
    entry = AuditEntry.objects.get(action="queue.remove-schema")
    assert entry.selection["change"]["before"] == replaced and entry.selection["change"]["after"] is None
    audit_page = client.get(reverse("audit")).content.decode()
    assert "job schema changed" in audit_page and "queue.set-schema" in audit_page


def test_viewers_operators_and_read_only_mode_cannot_set_it(client, failed, settings, q):
    url = reverse("api_queue_action", args=[*q, "set-schema"])
    for role in ("viewer", "operator"):
        user = user_with(role)
        assert api(client, url, {"schema": SCHEMA}, token_for(user)).status_code == 403, role
        client.force_login(user)
        assert client.post(reverse("queue_action", args=[*q, "set-schema"]), {"schema": "{}"}).status_code == 403
        page = client.get(reverse("queue_settings", args=q)).content.decode()
        assert "queue-set-schema" not in page
    settings.QUEUEWATCH_READ_ONLY = True
    admin_token = token_for(user_with("admin"))
    assert api(client, url, {"schema": SCHEMA}, admin_token).status_code == 403
    assert api(client, reverse("api_queue_action", args=[*q, "remove-schema"]), {}, admin_token).status_code == 403
    assert not QueueSchema.objects.exists()
    assert AuditEntry.objects.filter(action="refused.role").count() >= 4


def test_a_session_post_without_the_csrf_token_is_refused(failed, q):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user_with("admin"))
    page = browser.post(reverse("queue_action", args=[*q, "set-schema"]), {"schema": json.dumps(SCHEMA)})
    assert page.status_code == 403
    api_call = browser.post(
        reverse("api_queue_action", args=[*q, "set-schema"]),
        json.dumps({"schema": SCHEMA}),
        content_type="application/json",
    )
    assert api_call.status_code == 403 and not QueueSchema.objects.exists()


@pytest.mark.parametrize(
    "schema, says",
    [
        ({"properties": {"email": {"pattern": "(x+x+)+y"}}}, "takes too long"),
        ({"$ref": "https://example.com/schema.json"}, "only local references"),
        ({"type": "objekt"}, "not a valid JSON Schema"),
        ('{"type": "object",}', "not valid JSON"),
        ("", "Paste a JSON Schema"),
    ],
)
def test_a_bad_schema_is_refused_with_a_reason_and_nothing_is_stored(client, failed, schema, says, q):
    token = token_for(user_with("admin"))
    response = api(client, reverse("api_queue_action", args=[*q, "set-schema"]), {"schema": schema}, token)
    assert response.status_code == 400 and says in response.json()["message"]
    assert not QueueSchema.objects.exists()


def test_the_api_refuses_invalid_data_with_400_and_the_reasons_then_adds_valid_data_a_node_worker_runs(
    client, failed, q, redis_prefix
):
    set_schema(client, q)
    token = token_for(user_with("operator"))
    url = reverse("api_jobs", args=q)
    before = keys(redis_prefix)
    bad = api(client, url, {"name": "mail", "data": {"email": "nope", "amount": 0}}, token)
    assert bad.status_code == 400
    assert bad.json()["errors"] == [
        "$.amount: should be ≥ 1.",
        '$.email: should match the pattern "^[^@]+@[^@]+\\\\.[a-z]+$".',
    ]
    assert bad.json()["message"].startswith("The data does not pass the queue's schema: $.amount: should be ≥ 1.")
    missing = api(client, url, {"name": "mail", "data": {}}, token)
    assert missing.json()["errors"] == ['$: the required property "email" is missing.']
    assert keys(redis_prefix) == before and not AuditEntry.objects.filter(action="queue.add").exists()
    good = api(
        client, url, {"name": "mail", "data": {"email": "ok@example.com", "amount": 2}, "opts": {"jobId": "m-1"}}, token
    )
    assert (good.status_code, good.json()) == (201, {"id": "m-1"})
    ran = run_node("toolbox.mjs", "run", redis_prefix.url, "sc", "1", "0", prefix=redis_prefix.prefix)["jobs"]
    assert ran["m-1"]["state"] == "completed" and ran["m-1"]["data"] == {"email": "ok@example.com", "amount": 2}


def test_the_add_page_shows_the_schema_and_refuses_data_that_does_not_pass(client, failed, redis_prefix, q):
    set_schema(client, q)
    client.force_login(user_with("operator"))
    page = client.get(reverse("add_job", args=q)).content.decode()
    assert '<details class="job-schema-applies">' in page and "&quot;required&quot;" in page
    url = reverse("queue_action", args=[*q, "add"])
    before = keys(redis_prefix)
    refused = client.post(url, {"name": "mail", "data": '{"email": 7}'}, HTTP_HX_REQUEST="true").content.decode()
    assert "action-result refused" in refused and "$.email: should be of type string." in refused
    assert keys(redis_prefix) == before
    ok = client.post(url, {"name": "mail", "data": '{"email": "a@b.io"}'}, HTTP_HX_REQUEST="true")
    assert b'class="action-result ok"' in ok.content


def test_duplicating_a_job_whose_data_does_not_pass_is_refused(client, failed, redis_prefix, q):
    set_schema(client, q)
    token = token_for(user_with("operator"))
    before = keys(redis_prefix)
    response = api(client, reverse("api_job_action", args=[*q, "duplicate", failed[0]]), {}, token)
    assert response.status_code == 400 and response.json()["errors"][0].startswith("$.email: should match")
    assert keys(redis_prefix) == before


def test_edit_and_retry_the_preview_says_why_and_the_confirmation_is_refused(client, failed, redis_prefix, q):
    set_schema(client, q)
    client.force_login(user_with("operator"))
    job = failed[0]
    preview = client.post(
        reverse("edit_retry_preview", args=[*q, job]), {"patch": '{"amount": 0}'}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert "job schema, so it cannot be saved" in preview and "$.amount: should be ≥ 1." in preview
    assert "job-edit-retry" not in preview and "hunter2" not in preview  # no confirm button; secrets redacted
    stored = redis_prefix.client.hget(f"{q[1]}:sc:{job}", "data")
    token = token_for(user_with("operator", username="op2"))
    refused = api(client, reverse("api_job_action", args=[*q, "edit-retry", job]), {"patch": {"amount": 0}}, token)
    assert refused.status_code == 409 and "$.amount: should be ≥ 1." in refused.json()["message"]
    assert (
        redis_prefix.client.hget(f"{q[1]}:sc:{job}", "data") == stored
        and redis_prefix.client.zscore(f"{q[1]}:sc:failed", job) is not None
    )
    fixed = api(
        client, reverse("api_job_action", args=[*q, "edit-retry", job]), {"patch": {"email": "ok@ex.com"}}, token
    )
    assert fixed.status_code == 200 and fixed.json()["outcome"] == "done"


def test_bulk_edit_and_retry_leaves_jobs_that_would_not_pass_failed_and_says_why(client, failed, redis_prefix, q):
    set_schema(client, q)
    token = token_for(user_with("operator"))
    body = {"action": "edit-retry", "ids": failed, "patch": {"email": "fixed@example.com"}}
    preview = api(client, reverse("api_bulk_preview", args=q), body, token).json()
    diffs = {d["job_id"]: d["diff"] for d in preview["diffs"]}
    assert diffs[failed[1]][-1] == "! $.amount: should be ≥ 1." and not diffs[failed[0]][-1].startswith("!")
    assert (
        api(client, reverse("api_bulk_start", args=q), {**body, "reason": "fix mail", "rate": None}, token).status_code
        == 202
    )
    task = BulkTask.objects.get()
    final = run_bulk(redis_prefix.client, plan=plan_for(task), store=MemoryStore())  # what the monitor runs
    assert (final.moved, final.skipped, final.skipped_by) == (1, 1, {"invalid_data": 1})
    why = f"Job {failed[1]} was left failed: The data does not pass the queue's schema: $.amount: should be ≥ 1."
    assert [str(from_data(r)) for r in final.refusals] == [why]
    assert json.loads(redis_prefix.client.hget(f"{q[1]}:sc:{failed[0]}", "data"))["email"] == "fixed@example.com"
    assert json.loads(redis_prefix.client.hget(f"{q[1]}:sc:{failed[1]}", "data")) == {"email": "also-bad@", "amount": 0}
    assert redis_prefix.client.zscore(f"{q[1]}:sc:failed", failed[1]) is not None
    # The reasons are kept with their message ids (the task's row holds the engine's progress as
    # JSON), so the task page says them in the reader's language, and the API in English.
    BulkTask.objects.filter(pk=task.pk).update(
        progress=json.loads(json.dumps(final.as_dict())), state=BulkTask.DONE, moved=final.moved, skipped=final.skipped
    )
    body = api_get(client, reverse("api_task", args=[task.pk]), token).json()
    assert body["refusals"] == [why]
    assert body["skipped_by"] == {"invalid_data": 1}
    client.force_login(user_with("viewer", username="reader"))
    english = client.get(reverse("task", args=[task.pk]), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "was left failed: The data does not pass the queue&#x27;s schema: $.amount: should be ≥ 1." in english
    arabic = client.get(reverse("task", args=[task.pk]), HTTP_ACCEPT_LANGUAGE="ar").content.decode()
    assert f"تُركت المهمة {failed[1]} فاشلة: البيانات لا تجتاز مخطط الطابور: $.amount: يجب أن يكون ≥ 1." in arabic
    assert "was left failed" not in arabic
