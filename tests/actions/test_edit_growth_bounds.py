"""A patch is copied into every job an edit-and-retry touches, so its size multiplies: these
tests make the edits an operator (or a script with a token) can send, through the pages, the
API and the task the monitor runs, against real Redis, and check that Redis does not grow past
the bounds (the patch's size, the bytes added per job and per task), that the preview shows the
growth and refuses what is over, and that the audit log keeps a digest and an excerpt of big
values rather than the values themselves."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.urls import reverse

from dashboard.actions.bulk_runner import plan_for
from dashboard.actions.models import BulkTask
from dashboard.audit.models import AuditEntry
from queues.bulk import MemoryStore
from queues.messages import from_data
from queues.redis.bulk import run_bulk
from tests.support.accounts import token_for, user_with
from tests.support.seeding import seed_failed

pytestmark = pytest.mark.django_db

BIG = 2_300_000  # the size of the patch of the incident (bytes)


@pytest.fixture
def q(prefixed_queues):
    queue = prefixed_queues.queue("fixable")
    prefixed_queues.client.hset(queue.key("meta"), "opts.maxLenEvents", 10000)
    return queue


@pytest.fixture
def operator(client):
    user = user_with("operator", username="op")
    client.force_login(user)
    return {"HTTP_AUTHORIZATION": f"Bearer {token_for(user)}"}


def args(queue) -> list[str]:
    return [queue.connection, queue.prefix, queue.name]


def stored(r, queue, ids) -> list[bytes]:
    return [r.hget(queue.job_key(i), "data") for i in ids]


def api(client, name, queue, body, headers, *extra):
    return client.post(
        reverse(name, args=[*args(queue), *extra]), json.dumps(body), content_type="application/json", **headers
    )


def test_a_patch_over_the_bound_is_refused_by_the_api_and_the_form_alike_and_nothing_grows(
    client, prefixed_queues, q, operator
):
    r = prefixed_queues.client
    ids = seed_failed(r, q, 300, data=lambda i: {"email": f"x{i}@"})
    before, memory = stored(r, q, ids), r.memory_usage(q.job_key(ids[0]))
    patch = {"email": "ok@example.com", "blob": "x" * BIG}
    body = {"action": "edit-retry", "state": "failed", "patch": patch}
    for name in ("api_bulk_preview", "api_bulk_start"):
        answer = api(client, name, q, {**body, "reason": "fix", "rate": 0}, operator)
        assert answer.status_code == 400, name
        assert "a patch may be at most 262144 bytes" in answer.json()["message"]
    single = api(client, "api_job_action", q, {"patch": patch, "reason": "fix"}, operator, "edit-retry", ids[0])
    assert single.status_code == 400 and "a patch may be at most" in single.json()["message"]
    form = {"action": "edit-retry", "state": "failed", "scope": "matching", "patch": json.dumps(patch)}
    page = client.post(reverse("bulk_preview", args=args(q)), form)
    assert page.status_code == 400 and "a patch may be at most 262144 bytes" in page.content.decode()
    assert not BulkTask.objects.exists()
    assert stored(r, q, ids) == before and r.memory_usage(q.job_key(ids[0])) == memory
    assert r.zcard(q.key("failed")) == 300


def test_the_preview_shows_the_growth_and_a_task_over_the_total_bound_is_refused(
    client, settings, prefixed_queues, q, operator
):
    settings.QUEUEWATCH_EDIT_MAX_TASK_GROWTH = 1_000_000
    r = prefixed_queues.client
    ids = seed_failed(r, q, 300, data=lambda i: {"email": f"x{i}@"})
    before = stored(r, q, ids)
    patch = {"note": "y" * 10_000}  # under the patch's and the job's bounds; 300 of them are 3 MB
    added = len(json.dumps({"email": "x0@", **patch}, separators=(",", ":"))) - len(before[0])

    preview = api(client, "api_bulk_preview", q, {"action": "edit-retry", "state": "failed", "patch": patch}, operator)
    growth = preview.json()["growth"]
    assert preview.status_code == 200 and growth["largest"] == added and growth["jobs"] == 300
    assert growth["total"] == 300 * added and growth["max_total"] == 1_000_000
    assert set(growth["per_job"].values()) == {added} and len(growth["per_job"]) == 10
    assert "more than the 1000000 bytes one bulk task may add" in growth["refusal"]

    form = {"action": "edit-retry", "state": "failed", "scope": "matching", "patch": json.dumps(patch)}
    html = client.post(reverse("bulk_preview", args=args(q)), form).content.decode()
    assert f'data-total="{300 * added}"' in html and 'class="action-result refused growth-refusal"' in html
    assert 'class="confirm"' not in html  # nothing to confirm
    assert html.count('class="muted job-growth"') == 10

    for start in (
        api(client, "api_bulk_start", q, {**form, "patch": patch, "reason": "fix", "rate": 0}, operator),
        client.post(reverse("bulk_start", args=args(q)), {**form, "reason": "fix", "rate": "0"}),
    ):
        assert start.status_code == 400 and "one bulk task may add; nothing was started" in start.content.decode()
    assert not BulkTask.objects.exists() and stored(r, q, ids) == before


def test_the_running_task_stops_adding_at_the_bounds_even_when_the_sample_did_not_grow(
    client, settings, prefixed_queues, q, operator
):
    """The preview's sample already holds the value (it grows by nothing), the others do not:
    the task is started, and the runner keeps the total under the task's bound job by job."""
    settings.QUEUEWATCH_EDIT_MAX_TASK_GROWTH = 200_000
    r = prefixed_queues.client
    note = "z" * 10_000
    ids = seed_failed(r, q, 100, data=lambda i: {"n": i, **({"note": note} if i < 10 else {})})
    before = stored(r, q, ids)
    body = {"action": "edit-retry", "ids": ids, "patch": {"note": note}, "reason": "fix", "rate": 0}
    preview = api(client, "api_bulk_preview", q, body, operator).json()
    assert preview["growth"]["total"] == 0 and preview["growth"]["refusal"] is None
    started = api(client, "api_bulk_start", q, body, operator)
    assert started.status_code == 202

    final = run_bulk(r, plan=plan_for(BulkTask.objects.get()), store=MemoryStore())  # what the monitor runs
    after = stored(r, q, ids)
    grown = sum(len(a) - len(b) for a, b in zip(after, before))
    assert 0 < grown <= 200_000 and final.grown == grown
    edited = sum(a != b for a, b in zip(after, before))
    assert edited == 19  # 19 notes of 10,008 bytes fit in 200,000
    assert final.skipped_by == {"too_big": 90 - edited} and final.moved == 10 + edited
    assert "would take it past the 200000 bytes one bulk task may add" in str(from_data(final.refusals[0]))


def test_one_job_edit_that_adds_more_than_a_job_may_is_refused_and_audited(client, prefixed_queues, q, operator):
    r = prefixed_queues.client
    [job] = seed_failed(r, q, 1, data=lambda i: {"email": "x@"})
    patch = {"note": "w" * 100_000}  # under the patch's bound, over what one job may grow by
    preview = client.post(reverse("edit_retry_preview", args=[*args(q), job]), {"patch": json.dumps(patch)})
    html = preview.content.decode()
    assert 'class="action-result refused edit-too-big"' in html and 'id="edit-save"' not in html
    assert "more than the 65536 bytes allowed per job" in html
    answer = api(client, "api_job_action", q, {"patch": patch, "reason": "fix"}, operator, "edit-retry", job)
    assert answer.status_code == 409 and answer.json()["outcome"] == "too_big"
    assert json.loads(r.hget(q.job_key(job), "data")) == {"email": "x@"} and r.zscore(q.key("failed"), job)
    row = AuditEntry.objects.get(action="job.edit-retry")
    assert row.outcome == AuditEntry.REFUSED and "allowed per job" in row.message
    small = api(client, "api_job_action", q, {"patch": {"email": "ok@"}, "reason": "fix"}, operator, "edit-retry", job)
    assert small.status_code == 200 and json.loads(r.hget(q.job_key(job), "data")) == {"email": "ok@"}


def test_the_audit_log_keeps_a_digest_and_an_excerpt_of_a_big_patch_and_its_page_stays_small(
    client, settings, prefixed_queues, q, operator
):
    """Bounds raised by an admin let a 2.3 MB patch through: the audit rows still stay small."""
    settings.QUEUEWATCH_EDIT_MAX_PATCH_BYTES = settings.QUEUEWATCH_EDIT_MAX_JOB_GROWTH = 4_000_000
    settings.QUEUEWATCH_EDIT_MAX_TASK_GROWTH = 100_000_000
    r = prefixed_queues.client
    ids = seed_failed(r, q, 12, data=lambda i: {"email": f"x{i}@", "blob": "a" * BIG})
    patch = {"email": "ok@example.com", "blob": "b" * BIG}
    body = {"action": "edit-retry", "state": "failed", "patch": patch, "reason": "fix", "rate": 0}
    assert api(client, "api_bulk_start", q, body, operator).status_code == 202
    single = api(client, "api_job_action", q, {"patch": patch, "reason": "one"}, operator, "edit-retry", ids[0])
    assert single.status_code == 200
    rows = {row.action: row for row in AuditEntry.objects.filter(queue=q.name)}
    bulk_row, job_row = rows["bulk.edit-retry"], rows["job.edit-retry"]
    text = json.dumps(bulk_row.selection)
    assert len(text) < 100_000 and len(json.dumps(job_row.selection)) < 100_000
    compact = json.dumps(patch, separators=(",", ":"), ensure_ascii=False).encode()
    kept = bulk_row.selection["patch"]
    assert kept["bytes"] == len(compact) and kept["sha256"] == hashlib.sha256(compact).hexdigest()
    assert kept["excerpt"].startswith('{"email":"ok@example.com","blob":"bbbb')
    assert job_row.selection["change"]["before"]["bytes"] > BIG  # the data before, as a digest
    assert any("ok@example.com" in line for line in job_row.selection["change"]["diff"])
    page = client.get(reverse("audit"))
    assert page.status_code == 200 and len(page.content) < 300_000
    assert "ok@example.com" in page.content.decode()
