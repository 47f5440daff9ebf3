"""The scheduler page, the create form and "run now" through the pages and the JSON API: roles,
read-only mode and CSRF are enforced, the preview shows the runs a form would schedule (in the
zone given), and a viewer reads the template with its secrets redacted."""

from __future__ import annotations

import json

import pytest
from django.test import Client, override_settings
from django.urls import reverse

from tests.support.accounts import token_for, user_with
from tests.support.servers import node_available, run_node

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="needs node and npm"),
]


def api(client, url: str, body, token: str):
    return client.post(url, json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


@pytest.fixture
def q(prefixed_queues) -> list[str]:
    run_node(
        "toolbox.mjs",
        "schedule",
        prefixed_queues.url,
        "sch",
        "nightly",
        json.dumps({"pattern": "0 3 * * *", "tz": "Europe/Paris"}),
        json.dumps({"name": "report", "data": {"to": "ops", "password": "hunter2"}, "opts": {"attempts": 2}}),
        prefix=prefixed_queues.prefix,
    )
    return prefixed_queues.args("sch")


def waiting(prefixed_queues) -> int:
    return prefixed_queues.client.llen(prefixed_queues.queue("sch").key("wait"))


def test_a_viewer_reads_the_scheduler_page_with_secrets_redacted_and_no_controls(client, q):
    client.force_login(user_with("viewer"))
    page = client.get(reverse("scheduler_detail", args=[*q, "nightly"])).content.decode()
    assert "report" in page and "Europe/Paris" in page and "repeat:nightly:" in page
    assert "hunter2" not in page and "&quot;to&quot;: &quot;ops&quot;" in page
    assert "queue-run-scheduler" not in page and "scheduler-edit" not in page
    listing = client.get(reverse("queue_schedulers", args=q)).content.decode()
    assert reverse("scheduler_detail", args=[*q, "nightly"]) in listing and "scheduler-create" not in listing
    assert client.get(reverse("scheduler_create", args=q)).status_code == 403
    assert client.get(reverse("scheduler_detail", args=[*q, "nope"])).status_code == 404


def test_viewers_read_only_mode_and_missing_csrf_are_refused(client, q, prefixed_queues):
    viewer = token_for(user_with("viewer"))
    create = {"id": "new", "name": "x", "every": 1000}
    for action, body in (("create-scheduler", create), ("run-scheduler", {"id": "nightly"})):
        assert api(client, reverse("api_queue_action", args=[*q, action]), body, viewer).status_code == 403
    operator = user_with("operator")
    with override_settings(QUEUEWATCH_READ_ONLY=True):
        refused = api(
            client, reverse("api_queue_action", args=[*q, "run-scheduler"]), {"id": "nightly"}, token_for(operator)
        )
        assert refused.status_code == 403
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(operator)
    for action, body in (("create-scheduler", create), ("run-scheduler", {"id": "nightly"})):
        assert csrf_client.post(reverse("queue_action", args=[*q, action]), body).status_code == 403
    assert waiting(prefixed_queues) == 0
    assert not prefixed_queues.client.exists(prefixed_queues.queue("sch").key("repeat:new"))


def test_run_now_and_create_through_the_api(client, q, prefixed_queues):
    token = token_for(user_with("operator"))
    ran = api(client, reverse("api_queue_action", args=[*q, "run-scheduler"]), {"id": "nightly"}, token)
    assert ran.status_code == 200 and ran.json()["outcome"] == "done" and waiting(prefixed_queues) == 1
    gone = api(client, reverse("api_queue_action", args=[*q, "run-scheduler"]), {"id": "nope"}, token)
    assert gone.json()["outcome"] == "not_editable" and waiting(prefixed_queues) == 1
    body = {"id": "every-5s", "name": "ping", "every": 5000, "offset": 1200, "data": {"x": 1}}
    made = api(client, reverse("api_queue_action", args=[*q, "create-scheduler"]), body, token)
    assert made.status_code == 200 and made.json()["outcome"] == "done", made.content
    stored = prefixed_queues.client.hgetall(prefixed_queues.queue("sch").key("repeat:every-5s"))
    assert stored[b"every"] == b"5000" and stored[b"offset"] == b"1200"
    assert int(prefixed_queues.client.zscore(prefixed_queues.queue("sch").key("repeat"), "every-5s")) % 5000 == 1200


def test_the_preview_lists_the_runs_in_the_zone_given(client, q):
    client.force_login(user_with("operator"))
    url = reverse("scheduler_preview", args=q)
    shown = client.get(
        url,
        {
            "pattern": "0 3 * * *",
            "tz": "America/New_York",
            "startDate_at": "2030-01-01T00:00",
            "dates_tz": "Asia/Tokyo",
            "limit": "3",
        },
    ).content.decode()
    # Midnight in Tokyo is 10:00 the day before in New York: the first 03:00 there is 1 January.
    assert shown.count("<li>") == 3 and "2030-01-01 03:00:00 America/New_York" in shown
    assert 'datetime="2030-01-01T08:00:00.000Z"' in shown
    bad = client.get(url, {"pattern": "0 3 * * *", "startDate_at": "soon", "dates_tz": "UTC"}).content.decode()
    assert "scheduler-preview-refused" in bad and "not a date" in bad
    ended = client.get(url, {"every": "1000", "endDate_at": "2000-01-01T00:00", "dates_tz": "UTC"}).content.decode()
    assert "scheduler-no-runs" in ended


def test_a_queue_a_newer_bullmq_wrote_refuses_create_and_run_now(client, q, prefixed_queues):
    prefixed_queues.client.hset(prefixed_queues.queue("sch").key("meta"), "version", "bullmq:99.0.0")
    token = token_for(user_with("operator"))
    for action, body in (
        ("create-scheduler", {"id": "new", "name": "x", "every": 1000}),
        ("run-scheduler", {"id": "nightly"}),
    ):
        refused = api(client, reverse("api_queue_action", args=[*q, action]), body, token)
        assert refused.status_code >= 400 and "99.0.0" in refused.json()["message"], refused.content
    assert waiting(prefixed_queues) == 0
    assert not prefixed_queues.client.exists(prefixed_queues.queue("sch").key("repeat:new"))


def test_the_api_reads_one_scheduler_with_its_template_redacted(client, q):
    token = token_for(user_with("viewer"))
    url = reverse("api_scheduler", args=[*q, "nightly"])
    body = client.get(url, HTTP_AUTHORIZATION=f"Bearer {token}").json()
    assert (body["id"], body["pattern"], body["tz"], body["finished"]) == (
        "nightly",
        "0 3 * * *",
        "Europe/Paris",
        False,
    )
    assert body["template"]["data"] == {"to": "ops", "password": "[redacted]"}
    assert body["template"]["opts"] == {"attempts": 2} and body["last_run"] is None
    assert body["pending"] == {
        "job_id": f"repeat:nightly:{body['next_run']}",
        "due": body["next_run"],
        "state": "delayed",
    }
    missing = client.get(reverse("api_scheduler", args=[*q, "nope"]), HTTP_AUTHORIZATION=f"Bearer {token}")
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"
    assert Client().get(url).status_code == 401


@pytest.mark.parametrize(
    "stored", ["not json {", "[" * 100_000 + "]" * 100_000, '{"n": NaN}'], ids=["not-json", "deep", "nan"]
)
def test_template_data_json_cannot_walk_does_not_break_the_page_or_the_api(client, q, prefixed_queues, stored):
    prefixed_queues.client.hset(prefixed_queues.queue("sch").key("repeat:nightly"), "data", stored)
    client.force_login(user_with("viewer"))
    page = client.get(reverse("scheduler_detail", args=[*q, "nightly"]))
    assert page.status_code == 200 and b"scheduler-template-data" in page.content
    answer = client.get(reverse("api_scheduler", args=[*q, "nightly"]))
    assert answer.status_code == 200 and "template" in answer.json()
