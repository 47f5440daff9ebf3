"""The toolbox through the pages and the JSON API, on jobs Node BullMQ made: add (201 / 200
"created": false), duplicate, edit-and-retry with a preview and an audited diff, queue settings,
drain and obliterate; roles, read-only mode, bad JSON and impossible options refused with a
message and nothing changed."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from dashboard.audit.models import AuditEntry
from tests.support.accounts import token_for, user_with
from tests.support.servers import run_node

pytestmark = [pytest.mark.django_db, pytest.mark.node]


@pytest.fixture
def q(prefixed_queues) -> list[str]:
    """The queue 'tb' under this test's own key prefix (the app pointed at it): URL arguments."""
    return prefixed_queues.args("tb")


@pytest.fixture
def failed(prefixed_queues):
    specs = [
        {"name": "charge", "data": {"fail": 1, "email": "bad@", "password": "hunter2"}},
        {"name": "other", "data": {"v": 1}},
    ]
    return run_node("toolbox.mjs", "fail", prefixed_queues.url, "tb", json.dumps(specs), prefix=prefixed_queues.prefix)[
        "ids"
    ]


@pytest.fixture
def r(prefixed_queues):
    """A client on the database the app is pointed at (keys under the test's prefix)."""
    return prefixed_queues.client


def api(client, url: str, body, token: str):
    data = body if isinstance(body, str) else json.dumps(body)
    return client.post(url, data, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def keys(r, q) -> list:
    return sorted(k for k in r.keys(f"{q[1]}:tb:*") if not k.endswith(b":events"))


def test_api_adds_a_job_and_says_when_bullmq_returned_an_existing_one(client, failed, r, q):
    token = token_for(user_with("operator"))
    url = reverse("api_jobs", args=q)
    body = {"name": "send", "data": {"to": "a@b.c"}, "opts": {"jobId": "mail-1", "attempts": 2, "priority": 4}}
    created = api(client, url, body, token)
    assert (created.status_code, created.json()) == (201, {"id": "mail-1"})
    assert json.loads(r.hget(f"{q[1]}:tb:mail-1", "opts")) == {"attempts": 2, "priority": 4, "jobId": "mail-1"}
    again = api(client, url, body, token)
    assert again.status_code == 200
    assert {k: again.json()[k] for k in ("id", "created", "reason")} == {
        "id": "mail-1",
        "created": False,
        "reason": "duplicated",
    }
    dedup = {"name": "d", "data": {}, "opts": {"deduplication": {"id": "once", "ttl": 60000}}}
    first = api(client, url, dedup, token).json()["id"]
    hit = api(client, url, dedup, token).json()
    assert (hit["id"], hit["created"], hit["reason"]) == (first, False, "deduplicated")
    entry = AuditEntry.objects.filter(action="queue.add", outcome=AuditEntry.OK).order_by("pk").first()
    assert entry.selection["job_id"] == "mail-1" and entry.selection["opts"]["priority"] == 4
    assert entry.via == "api" and entry.affected == 1
    listed = client.get(url + "?state=prioritized", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert listed.status_code == 200 and "mail-1" in json.dumps(listed.json())  # GET still lists


@pytest.mark.parametrize(
    "body, message",
    [
        ("{not json", "not valid JSON"),
        ("[1]", "JSON object"),
        ({"data": {}}, "needs a name"),
        ({"name": "x", "opts": {"jobId": "123"}}, "plain integer"),
        ({"name": "x", "opts": {"jobId": "meta"}}, "reserved"),
        ({"name": "x", "opts": {"delay": "soon"}}, "whole number"),
        ({"name": "x", "opts": {"colour": 1}}, "Unknown option"),
        ({"name": "x", "opts": {"lifo": True, "priority": 3}}, "cannot be used together"),
    ],
)
def test_bad_json_and_impossible_options_are_refused_and_change_nothing(client, failed, r, body, message, q):
    token = token_for(user_with("operator"))
    before = keys(r, q)
    response = api(client, reverse("api_jobs", args=q), body, token)
    assert response.status_code == 400 and message in response.json()["message"]
    assert keys(r, q) == before
    assert not AuditEntry.objects.filter(action="queue.add").exists()


def test_the_add_form_posts_options_and_bad_data_gets_a_clear_message(client, failed, r, q):
    client.force_login(user_with("operator"))
    page = client.get(reverse("add_job", args=q))
    assert page.status_code == 200 and b'name="deduplication_ttl"' in page.content
    url = reverse("queue_action", args=[*q, "add"])
    bad = client.post(url, {"name": "x", "data": '{"a": }'}, HTTP_HX_REQUEST="true")
    assert b"not valid JSON" in bad.content and b"line 1" in bad.content
    ok = client.post(
        url,
        {
            "name": "form-job",
            "data": '{"a": 1}',
            "delay": "5000",
            "attempts": "3",
            "backoff_type": "fixed",
            "backoff_delay": "100",
            "backoff_jitter": "0.2",
            "jobId": "new",
            "removeOnComplete": "true",
            "removeOnFail": "10",
        },
        HTTP_HX_REQUEST="true",
    )
    assert b'class="action-result ok"' in ok.content
    assert json.loads(r.hget(f"{q[1]}:tb:new", "opts")) == {
        "attempts": 3,
        "delay": 5000,
        "backoff": {"type": "fixed", "delay": 100, "jitter": 0.2},
        "jobId": "new",
        "removeOnComplete": True,
        "removeOnFail": 10,
    }
    assert r.zscore(f"{q[1]}:tb:delayed", "new") is not None
    assert client.get(reverse("job", args=[*q, "new"])).status_code == 200  # a job called "new" has its page


def test_duplicate_copies_from_redis_not_from_the_page(client, failed, r, q):
    client.force_login(user_with("operator"))
    response = client.post(reverse("job_action", args=[*q, "duplicate", failed[0]]), HTTP_HX_REQUEST="true")
    assert b'class="action-result ok"' in response.content
    new_id = AuditEntry.objects.get(action="job.duplicate").selection["job_id"]
    assert r.hget(f"{q[1]}:tb:{new_id}", "data") == r.hget(f"{q[1]}:tb:{failed[0]}", "data")  # the password too
    assert b"hunter2" in r.hget(f"{q[1]}:tb:{new_id}", "data")


def test_edit_and_retry_previews_a_diff_then_retries_and_the_audit_shows_both_versions(
    client, failed, r, prefixed_queues, q
):
    client.force_login(user_with("operator"))
    job = failed[0]
    page = client.get(reverse("edit_retry", args=[*q, job]))
    assert page.status_code == 200 and b"hunter2" not in page.content and b"[redacted]" in page.content
    preview = client.post(
        reverse("edit_retry_preview", args=[*q, job]),
        {"patch": '{"email": "ok@example.com", "fail": 0}'},
        HTTP_HX_REQUEST="true",
    )
    html = preview.content.decode()
    assert "+  &quot;email&quot;: &quot;ok@example.com&quot;" in html and "-  &quot;fail&quot;: 1" in html
    assert "hunter2" not in html and r.zscore(f"{q[1]}:tb:failed", job) is not None  # a preview changes nothing
    expected = html.split('name="expected" value="')[1].split('"')[0]
    confirm = {"patch": '{"email": "ok@example.com", "fail": 0}', "expected": expected, "reason": "typo in email"}
    stale = client.post(
        reverse("job_action", args=[*q, "edit-retry", job]), {**confirm, "expected": "0" * 16}, HTTP_HX_REQUEST="true"
    )
    assert b"changed since the preview" in stale.content and r.zscore(f"{q[1]}:tb:failed", job) is not None
    done = client.post(reverse("job_action", args=[*q, "edit-retry", job]), confirm, HTTP_HX_REQUEST="true")
    assert b'class="action-result ok"' in done.content, done.content
    assert json.loads(r.hget(f"{q[1]}:tb:{job}", "data")) == {
        "fail": 0,
        "email": "ok@example.com",
        "password": "hunter2",
    }
    entry = AuditEntry.objects.get(action="job.edit-retry", outcome=AuditEntry.OK)
    assert json.loads(entry.selection["change"]["before"])["email"] == "bad@"
    assert json.loads(entry.selection["change"]["after"])["email"] == "ok@example.com"
    assert "hunter2" not in json.dumps(entry.selection)
    audit_page = client.get(reverse("audit")).content.decode()
    assert "data changed" in audit_page and "diff-add" in audit_page
    ran = run_node("toolbox.mjs", "run", prefixed_queues.url, "tb", "1", "0", prefix=prefixed_queues.prefix)
    assert ran["jobs"][job]["state"] == "completed" and ran["jobs"][job]["data"]["email"] == "ok@example.com"


def test_edit_and_retry_through_the_api_with_bad_patches(client, failed, r, q):
    token = token_for(user_with("operator"))
    url = reverse("api_job_action", args=[*q, "edit-retry", failed[1]])
    assert api(client, url, {"patch": []}, token).status_code == 400
    assert api(client, url, {"patch": {}}, token).status_code == 400
    assert json.loads(r.hget(f"{q[1]}:tb:{failed[1]}", "data")) == {"v": 1}
    ok = api(client, url, {"patch": {"v": 2}}, token)
    assert ok.status_code == 200 and ok.json()["outcome"] == "done"
    again = api(client, url, {"patch": {"v": 3}}, token)
    assert again.status_code == 409 and "not failed" in again.json()["message"]


def test_queue_settings_are_admin_only_and_obliterate_needs_pause_and_the_name(client, failed, r, q):
    admin_token = token_for(user_with("admin"))
    operator = user_with("operator")
    op_token = token_for(operator)
    url = lambda action: reverse("api_queue_action", args=[*q, action])  # noqa: E731
    assert api(client, url("set-concurrency"), {"concurrency": 3}, op_token).status_code == 403
    assert api(client, url("set-concurrency"), {"concurrency": 0}, admin_token).status_code == 400
    assert api(client, url("set-concurrency"), {"concurrency": 3}, admin_token).status_code == 200
    assert api(client, url("set-rate-limit"), {"max": 10, "duration": 1000}, admin_token).status_code == 200
    assert r.hmget(f"{q[1]}:tb:meta", ["concurrency", "max", "duration"]) == [b"3", b"10", b"1000"]
    entry = AuditEntry.objects.filter(action="queue.set-concurrency").latest("pk")
    assert entry.selection["change"] == {"before": None, "after": 3}
    client.force_login(operator)
    page = client.get(reverse("queue_settings", args=q)).content.decode()
    assert "10 jobs per 1 s" in page and "queue-obliterate" not in page  # operators see, cannot change
    before = keys(r, q)
    wrong = api(client, url("obliterate"), {"confirm": "tb", "reason": "x"}, admin_token)
    assert wrong.status_code == 409 and "not paused" in wrong.json()["message"]
    assert api(client, url("pause"), {}, admin_token).status_code == 200
    client.force_login(User.objects.get(username="user-admin"))
    page = client.get(reverse("queue_settings", args=q)).content.decode()
    assert "2 jobs and 0 job schedulers" in page and "queue-obliterate" in page
    typo = api(client, url("obliterate"), {"confirm": "tbb", "reason": "x"}, admin_token)
    assert typo.status_code == 409 and keys(r, q) == before
    assert api(client, url("obliterate"), {"confirm": "tb"}, admin_token).status_code == 400  # reason required
    gone = api(client, url("obliterate"), {"confirm": "tb", "reason": "retired"}, admin_token)
    assert gone.status_code == 200 and gone.json()["affected"] == 2 and keys(r, q) == []


def test_drain_through_the_page_as_admin(client, failed, r, prefixed_queues, q):
    client.force_login(user_with("admin"))
    run_node(
        "toolbox.mjs",
        "add",
        prefixed_queues.url,
        "tb",
        json.dumps([{"name": "w", "data": {}}, {"name": "d", "data": {}, "opts": {"delay": 60000}}]),
        prefix=prefixed_queues.prefix,
    )
    page = client.get(reverse("queue_settings", args=q)).content.decode()
    assert "queue-drain" in page and "Only a paused queue" in page
    done = client.post(reverse("queue_action", args=[*q, "drain"]), {"reason": "flush"}, HTTP_HX_REQUEST="true")
    assert b"1 waiting and prioritized job(s) removed" in done.content
    assert r.llen(f"{q[1]}:tb:wait") == 0 and r.zcard(f"{q[1]}:tb:delayed") == 1 and r.zcard(f"{q[1]}:tb:failed") == 2


def test_viewers_and_read_only_mode_are_refused_everything(client, failed, r, settings, q):
    viewer = user_with("viewer")
    token = token_for(viewer)
    before = keys(r, q)
    posts = [
        ("api_jobs", q, {"name": "x"}),
        ("api_job_action", [*q, "duplicate", failed[0]], {}),
        ("api_job_action", [*q, "edit-retry", failed[0]], {"patch": {"a": 1}}),
        ("api_queue_action", [*q, "drain"], {"reason": "x"}),
        ("api_queue_action", [*q, "set-concurrency"], {"concurrency": 1}),
    ]
    for name, args, body in posts:
        assert api(client, reverse(name, args=args), body, token).status_code == 403, name
    client.force_login(viewer)
    assert client.get(reverse("add_job", args=q)).status_code == 403
    assert client.get(reverse("edit_retry", args=[*q, failed[0]])).status_code == 403
    assert client.post(reverse("edit_retry_preview", args=[*q, failed[0]]), {"patch": "{}"}).status_code == 403
    settings.QUEUEWATCH_READ_ONLY = True
    admin_token = token_for(user_with("admin"))
    for name, args, body in posts:
        assert api(client, reverse(name, args=args), body, admin_token).status_code == 403, name
    assert keys(r, q) == before and not AuditEntry.objects.exclude(queue="").exists()  # refusals are recorded as events


def test_a_duplicate_of_a_scheduler_iteration_runs_now_not_a_scheduling_interval_late(client, r, prefixed_queues, q):
    """BullMQ gives each iteration the delay to its scheduler's next slot; that delay belongs to
    the scheduler, not to the job, so a copy made from the page waits for no slot."""
    scheduled = run_node(
        "toolbox.mjs",
        "schedule",
        prefixed_queues.url,
        "tb",
        "yearly",
        json.dumps({"pattern": "0 0 1 1 *", "tz": "UTC"}),
        json.dumps({"name": "report", "data": {"year": 1}, "opts": {"attempts": 2}}),
        prefix=prefixed_queues.prefix,
    )
    iteration = scheduled["next"]["id"]
    assert scheduled["next"]["delay"] > 3_600_000  # the next 1 January is more than an hour away
    client.force_login(user_with("operator"))
    response = client.post(reverse("job_action", args=[*q, "duplicate", iteration]), HTTP_HX_REQUEST="true")
    assert b'class="action-result ok"' in response.content
    new_id = AuditEntry.objects.get(action="job.duplicate").selection["job_id"]
    assert r.zscore(f"{q[1]}:tb:delayed", new_id) is None
    assert new_id.encode() in r.lrange(f"{q[1]}:tb:wait", 0, -1)
    opts = json.loads(r.hget(f"{q[1]}:tb:{new_id}", "opts"))
    assert "delay" not in opts and opts["attempts"] == 2
    assert r.hget(f"{q[1]}:tb:{new_id}", "data") == b'{"year":1}'


def test_api_add_runs_bullmq_6_7_deduplication_reschedule_and_keep_last_if_active(client, r, q, prefixed_queues):
    """BullMQ 6.7's add scripts (vendored): a second add with `reschedule` moves the delayed owner
    to its own delay, and a Node worker runs the owner then; `keepLastIfActive` holds the key
    without expiry for the owner's whole life, whatever the ttl."""
    run_node("toolbox.mjs", "hashes", prefixed_queues.url, "tb", "[]", prefix=prefixed_queues.prefix)  # the queue
    token = token_for(user_with("operator"))
    url = reverse("api_jobs", args=q)
    dedup = {"id": "digest-7", "reschedule": True}
    owner = api(
        client, url, {"name": "digest", "data": {"v": 1}, "opts": {"delay": 3_600_000, "deduplication": dedup}}, token
    )
    assert owner.status_code == 201
    owner_id = owner.json()["id"]
    later = r.zscore(f"{q[1]}:tb:delayed", owner_id)
    hit = api(client, url, {"name": "digest", "data": {"v": 2}, "opts": {"delay": 200, "deduplication": dedup}}, token)
    assert hit.status_code == 200 and (hit.json()["id"], hit.json()["reason"]) == (owner_id, "deduplicated")
    assert r.zscore(f"{q[1]}:tb:delayed", owner_id) < later - 3_000_000 * 4096  # moved to its new delay
    assert r.hget(f"{q[1]}:tb:{owner_id}", "delay") == b"200"
    ran = run_node("toolbox.mjs", "run", prefixed_queues.url, "tb", "1", "0", prefix=prefixed_queues.prefix)["jobs"]
    assert ran[owner_id]["state"] == "completed" and ran[owner_id]["data"] == {"v": 1}  # the owner, at the new time

    kept = {"id": "k-2", "ttl": 60_000, "keepLastIfActive": True}
    added = api(client, url, {"name": "sync", "data": {}, "opts": {"delay": 60_000, "deduplication": kept}}, token)
    assert added.status_code == 201
    assert json.loads(r.hget(f"{q[1]}:tb:{added.json()['id']}", "opts"))["de"] == kept
    assert r.get(f"{q[1]}:tb:de:k-2") == added.json()["id"].encode() and r.pttl(f"{q[1]}:tb:de:k-2") == -1


def test_a_queue_recorded_by_a_newer_bullmq_refuses_script_changes_with_that_reason(client, failed, r, q):
    """Our scripts are BullMQ 6.7's: a queue whose meta records a newer release (here
    bullmq:99.0.0) may hold what they do not know. Every change through a script is refused and
    audited as such, nothing changes, and the settings page says which release wrote it."""
    meta = f"{q[1]}:tb:meta"
    assert r.hget(meta, "version").startswith(b"bullmq:6.7")  # the Node Queue records its release
    r.hset(meta, "version", "bullmq:99.0.0")
    token = token_for(user_with("operator"))
    before = keys(r, q)
    retry = api(client, reverse("api_job_action", args=[*q, "retry", failed[0]]), {}, token)
    assert retry.status_code == 409 and retry.json()["error"] == "unsupported_bullmq"
    assert "bullmq:99.0.0" in retry.json()["message"] and "6.7.0" in retry.json()["message"]
    added = api(client, reverse("api_jobs", args=q), {"name": "x", "data": {}}, token)
    assert added.status_code == 409 and keys(r, q) == before
    assert r.zscore(f"{q[1]}:tb:failed", failed[0]) is not None  # still failed
    entry = AuditEntry.objects.filter(action="job.retry").latest("pk")
    assert entry.outcome == AuditEntry.REFUSED and "bullmq:99.0.0" in entry.message
    client.force_login(user_with("admin"))
    form = client.post(
        reverse("job_action", args=[*q, "retry", failed[0]]), {"reason": "x"}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert "bullmq:99.0.0" in form  # the page's form says why, as a message htmx swaps in
    page = client.get(reverse("queue_settings", args=q)).content.decode()
    assert "bullmq:99.0.0" in page and "changes are refused" in page
    # The queue page says it too, above its figures, in the reader's language.
    queue_page = client.get(reverse("queue", args=q)).content.decode()
    assert 'class="banner error release-unsupported"' in queue_page and "bullmq:99.0.0" in queue_page
    client.cookies["django_language"] = "ar"
    arabic = client.get(reverse("queue", args=q)).content.decode()
    assert "release-unsupported" in arabic and "bullmq:99.0.0" in arabic and "newer than BullMQ" not in arabic
    client.cookies["django_language"] = "en"
    # A patch of the supported release is not newer: its scripts are ours.
    r.hset(meta, "version", "bullmq:6.7.9")
    assert "release-unsupported" not in client.get(reverse("queue", args=q)).content.decode()
    assert api(client, reverse("api_job_action", args=[*q, "retry", failed[0]]), {}, token).status_code == 200
