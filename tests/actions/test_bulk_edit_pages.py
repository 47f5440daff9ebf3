"""Bulk edit-and-retry of an error group from the page and the API, on jobs failed by real Node
BullMQ 6.7: the preview shows the count and what the patch does to each sample job's stored
data (secrets redacted), confirming stores the task with its patch and an audit row keeping the
sample's old data as a diff, and the stored task, run by the engine, edits and retries every job
of the group with its counters reset, and a Node worker then runs them with the new data.
Viewers are refused; bad patches get a clear message."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.urls import reverse

from dashboard.actions.bulk_runner import plan_for
from dashboard.actions.models import BulkTask
from dashboard.audit.models import AuditEntry
from queues.bulk import MemoryStore
from queues.error_groups import fingerprint
from queues.redis.bulk import run_bulk
from tests.support.servers import run_node

pytestmark = [pytest.mark.django_db, pytest.mark.node]

GROUP = fingerprint("bad email 1")


@pytest.fixture
def q(prefixed_queues) -> list[str]:
    """The queue 'fixable' under this test's own key prefix (the app pointed at it): URL arguments."""
    return prefixed_queues.args("fixable")


@pytest.fixture
def seeded(prefixed_queues, q):
    ids = run_node(
        "seed_actions.mjs",
        prefixed_queues.url,
        "fixable",
        "4",
        "0",
        "0",
        "mail",
        "bad email",
        prefix=prefixed_queues.prefix,
    )
    run_node(
        "seed_actions.mjs",
        prefixed_queues.url,
        "fixable",
        "2",
        "0",
        "0",
        "mail",
        "timeout after",
        prefix=prefixed_queues.prefix,
    )  # another group
    for n, job_id in enumerate(ids["failed"]):
        prefixed_queues.client.hset(
            f"{q[1]}:fixable:{job_id}", "data", json.dumps({"email": f"x{n}@", "password": "hunter2", **extra(n)})
        )
    return ids["failed"]


def extra(n: int) -> dict:
    """Data the patch leaves alone but must write back as Node reads it: text beyond ASCII, floats,
    integers past 2**53 and (every other job) past 64 bits."""
    more = {"who": "Zoë 😀 \t ✓ \u0001", "f": 0.1, "e": 1e-7, "neg": -0.0, "n": 10**17 + n, "t": [True, None]}
    return {**more, "big": 2**64 + n} if n % 2 == 0 else more


def as_node(value):
    """A JSON value as JavaScript holds it: every number a double."""
    if isinstance(value, dict):
        return {k: as_node(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_node(v) for v in value]
    return float(value) if type(value) in (int, float) else value


def token_for(role: str | None) -> dict:
    user = User.objects.create_user(f"u-{role}", password="pw")
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    out = StringIO()
    call_command("api_token", user.username, stdout=out)
    return {"HTTP_AUTHORIZATION": f"Bearer {out.getvalue().strip()}"}


def test_edit_an_error_group_from_the_page_then_the_stored_task_runs(client, seeded, prefixed_queues, q):
    user = User.objects.create_user("op", password="pw")
    user.groups.add(Group.objects.get_or_create(name="operator")[0])
    client.force_login(user)
    page = client.get(reverse("queue_errors", args=q)).content.decode()
    assert '<option value="edit-retry">' in page and 'name="patch"' in page
    form = {
        "action": "edit-retry",
        "state": "failed",
        "fingerprint": GROUP,
        "scope": "matching",
        "patch": '{"email": "fixed@example.com", "password": "s3cret", "v": 2}',
    }
    html = client.post(reverse("bulk_preview", args=q), form).content.decode()
    assert 'data-count="4"' in html and html.count('class="edit-diff"') == 4
    diffs = html[html.index('class="edit-diffs"') : html.index("</section>")]
    assert "fixed@example.com" in diffs and "diff-add" in diffs and "hunter2" not in html and "s3cret" not in diffs
    assert 'name="patch" value="{&quot;email&quot;:&quot;fixed@example.com&quot;' in html
    for bad, message in (("[1]", "non-empty JSON object"), ("{", "not valid JSON"), ("", "non-empty JSON object")):
        r = client.post(reverse("bulk_preview", args=q), {**form, "patch": bad})
        assert r.status_code == 400 and message in r.content.decode()

    r = client.post(reverse("bulk_start", args=q), {**form, "rate": "0", "reason": "mail validator fixed"})
    assert r.status_code == 200
    task = BulkTask.objects.get(action="edit-retry")
    assert task.patch == {"email": "fixed@example.com", "password": "s3cret", "v": 2}
    started = AuditEntry.objects.get(action="bulk.edit-retry", outcome=AuditEntry.STARTED)
    assert "s3cret" not in json.dumps(started.selection)  # the patch is kept redacted
    diff = started.selection["change"]["diff"]
    assert sum(line.startswith("@@ job ") for line in diff) == 4 and '-  "email": "x0@",' in diff  # the old data
    assert "hunter2" not in json.dumps(diff)

    final = run_bulk(prefixed_queues.client, plan=plan_for(task), store=MemoryStore())  # what the monitor runs
    assert (final.moved, final.skipped) == (4, 0)
    for n, job_id in enumerate(seeded):
        stored = prefixed_queues.client.hgetall(f"{q[1]}:fixable:{job_id}")
        assert json.loads(stored[b"data"]) == {"email": "fixed@example.com", "password": "s3cret", **extra(n), "v": 2}
        assert b"atm" not in stored and b"failedReason" not in stored
    assert prefixed_queues.client.zcard(f"{q[1]}:fixable:failed") == 2  # the other group stayed
    ran = run_node("toolbox.mjs", "run", prefixed_queues.url, "fixable", "4", "0", prefix=prefixed_queues.prefix)[
        "jobs"
    ]  # a Node BullMQ worker
    assert sorted(ran) == sorted(seeded) and all(j["state"] == "completed" and j["atm"] == 1 for j in ran.values())
    for n, job_id in enumerate(seeded):  # what the Node worker read is exactly the patched data
        expected = {"email": "fixed@example.com", "password": "s3cret", **extra(n), "v": 2}
        assert as_node(ran[job_id]["data"]) == as_node(expected) and list(ran[job_id]["data"]) == list(expected)


def test_bulk_edit_over_the_api_and_viewers_refused(client, seeded, q):
    body = {"action": "edit-retry", "state": "failed", "fingerprint": GROUP, "patch": {"email": "ok@example.com"}}
    viewer = token_for(None)
    r = client.post(reverse("api_bulk_preview", args=q), json.dumps(body), content_type="application/json", **viewer)
    assert r.status_code == 403
    operator = token_for("operator")
    r = client.post(reverse("api_bulk_preview", args=q), json.dumps(body), content_type="application/json", **operator)
    preview = r.json()
    assert r.status_code == 200 and preview["count"] == 4 and len(preview["diffs"]) == 4
    assert '+  "email": "ok@example.com",' in preview["diffs"][0]["diff"]
    r = client.post(
        reverse("api_bulk_start", args=q),
        json.dumps({**body, "patch": [1], "reason": "x"}),
        content_type="application/json",
        **operator,
    )
    assert r.status_code == 400 and "non-empty JSON object" in r.json()["message"]
    r = client.post(
        reverse("api_bulk_start", args=q),
        json.dumps({**body, "reason": "validator fixed"}),
        content_type="application/json",
        **operator,
    )
    assert r.status_code == 202 and r.json()["patch"] == {"email": "ok@example.com"}
    assert BulkTask.objects.get().patch == {"email": "ok@example.com"}
