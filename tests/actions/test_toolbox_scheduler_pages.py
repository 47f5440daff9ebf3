"""Scheduler edit, removal and legacy migration through the pages and the JSON API: a viewer
and read-only mode are refused, bad input gets a message and changes nothing, the migration is
shown before it is done, and the audit keeps the scheduler before and after."""

from __future__ import annotations

import json
import time

import pytest
from django.test import override_settings
from django.urls import reverse

from dashboard.audit.models import AuditEntry
from tests.support.accounts import token_for, user_with
from tests.support.servers import run_node

pytestmark = [pytest.mark.django_db, pytest.mark.node]


def api(client, url: str, body, token: str):
    return client.post(url, json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


@pytest.fixture
def q(prefixed_queues) -> list[str]:
    """The queue 'sch' under this test's own key prefix (the app pointed at it): URL arguments."""
    return prefixed_queues.args("sch")


@pytest.fixture
def scheduled(prefixed_queues):
    run_node(
        "toolbox.mjs",
        "schedule",
        prefixed_queues.url,
        "sch",
        "nightly",
        json.dumps({"pattern": "0 3 * * *"}),
        json.dumps({"name": "report", "data": {"to": "ops"}}),
        prefix=prefixed_queues.prefix,
    )
    return prefixed_queues.client


def test_edit_through_the_page_and_the_api_is_audited_with_before_and_after(client, scheduled, q):
    r = scheduled
    client.force_login(user_with("operator"))
    page = client.get(reverse("queue_schedulers", args=q)).content.decode()
    assert reverse("scheduler_edit", args=[*q, "nightly"]) in page
    form = client.get(reverse("scheduler_edit", args=[*q, "nightly"])).content.decode()
    assert 'value="0 3 * * *"' in form and "queue-remove-scheduler" in form
    done = client.post(
        reverse("queue_action", args=[*q, "edit-scheduler"]),
        {
            "id": "nightly",
            "name": "report",
            "pattern": "30 2 * * *",
            "tz": "Europe/Paris",
            "data": '{"to": "oncall"}',
            "opts": '{"attempts": 2}',
        },
        HTTP_HX_REQUEST="true",
    )
    assert b'class="action-result ok"' in done.content, done.content
    assert r.hget(f"{q[1]}:sch:repeat:nightly", "tz") == b"Europe/Paris"
    entry = AuditEntry.objects.get(action="queue.edit-scheduler")
    assert json.loads(entry.selection["change"]["before"])["pattern"] == "0 3 * * *"
    assert json.loads(entry.selection["change"]["after"])["data"] == {"to": "oncall"}
    token = token_for(user_with("admin"))
    url = reverse("api_queue_action", args=[*q, "edit-scheduler"])
    ok = api(client, url, {"id": "nightly", "name": "report", "every": 60000, "data": {"x": 1}}, token)
    assert ok.status_code == 200 and ok.json()["outcome"] == "done"
    assert r.hget(f"{q[1]}:sch:repeat:nightly", "every") == b"60000" and not r.hexists(
        f"{q[1]}:sch:repeat:nightly", "pattern"
    )


@pytest.mark.parametrize(
    "body, message",
    [
        ({"id": "nightly", "name": "report", "pattern": "0 3 * * *", "every": 5}, "one or the other"),
        ({"id": "nightly", "name": "report", "pattern": "61 * * * *"}, "pattern"),
        ({"id": "nightly", "name": "report", "pattern": "0 3 * * *", "tz": "Mars/Base"}, "time zone"),
        ({"id": "nightly", "name": "report", "every": 1000, "opts": {"jobId": "x"}}, "template option"),
        ({"id": "nightly", "name": "report", "every": 1000, "endDate": 5}, "end date"),
    ],
)
def test_bad_scheduler_input_is_refused_and_changes_nothing(client, scheduled, body, message, q):
    r = scheduled
    before = r.hgetall(f"{q[1]}:sch:repeat:nightly")
    response = api(
        client, reverse("api_queue_action", args=[*q, "edit-scheduler"]), body, token_for(user_with("operator"))
    )
    assert response.status_code == 400 and message in response.json()["message"]
    assert r.hgetall(f"{q[1]}:sch:repeat:nightly") == before


def test_viewers_and_read_only_mode_are_refused(client, scheduled, settings, q):
    r = scheduled
    viewer = token_for(user_with("viewer"))
    for action, body in (
        ("edit-scheduler", {"id": "nightly", "name": "x", "every": 1000}),
        ("remove-scheduler", {"id": "nightly", "reason": "x"}),
        ("migrate-repeat", {"member": "x"}),
    ):
        assert api(client, reverse("api_queue_action", args=[*q, action]), body, viewer).status_code == 403
    operator = token_for(user_with("operator"))
    with override_settings(QUEUEWATCH_READ_ONLY=True):
        refused = api(
            client,
            reverse("api_queue_action", args=[*q, "remove-scheduler"]),
            {"id": "nightly", "reason": "x"},
            operator,
        )
    assert refused.status_code == 403 and r.exists(f"{q[1]}:sch:repeat:nightly")
    no_reason = api(client, reverse("api_queue_action", args=[*q, "remove-scheduler"]), {"id": "nightly"}, operator)
    assert no_reason.status_code == 400
    gone = api(
        client,
        reverse("api_queue_action", args=[*q, "remove-scheduler"]),
        {"id": "nightly", "reason": "retired"},
        operator,
    )
    assert (
        gone.status_code == 200 and not r.exists(f"{q[1]}:sch:repeat:nightly") and r.zcard(f"{q[1]}:sch:delayed") == 0
    )


def test_migration_is_shown_first_then_done_once(client, prefixed_queues, q):
    r = prefixed_queues.client
    member = "d9c48061d9d20cd7b1bf692d7ceb46ff"
    due = (int(time.time() * 1000) // 3_600_000 + 1) * 3_600_000
    r.hset(f"{q[1]}:sch:meta", "opts.maxLenEvents", 10000)
    r.zadd(f"{q[1]}:sch:repeat", {member: due})
    r.hset(f"{q[1]}:sch:repeat:{member}", mapping={"name": "hourly", "every": "3600000"})
    pending = f"repeat:{member}:{due}"
    r.hset(
        f"{q[1]}:sch:{pending}",
        mapping={
            "name": "hourly",
            "data": "{}",
            "rjk": member,
            "opts": "{}",
            "timestamp": "1",
            "delay": "0",
            "priority": "0",
        },
    )
    r.zadd(f"{q[1]}:sch:delayed", {pending: due * 0x1000})
    client.force_login(user_with("operator"))
    listing = client.get(reverse("queue_schedulers", args=q)).content.decode()
    assert "scheduler-migrate" in listing
    preview = client.get(reverse("migrate_repeat", args=q), {"member": member}).content.decode()
    assert pending in preview and "queue-migrate-repeat" in preview and "hourly" in preview
    assert r.zscore(f"{q[1]}:sch:repeat", member) is not None  # the preview changes nothing
    done = client.post(
        reverse("queue_action", args=[*q, "migrate-repeat"]), {"member": member, "id": "hourly"}, HTTP_HX_REQUEST="true"
    )
    assert b'class="action-result ok"' in done.content, done.content
    assert r.zrange(f"{q[1]}:sch:delayed", 0, -1) == [f"repeat:hourly:{due}".encode()]
    again = client.post(
        reverse("queue_action", args=[*q, "migrate-repeat"]), {"member": member, "id": "hourly"}, HTTP_HX_REQUEST="true"
    )
    assert b"not a legacy" in again.content
    entry = AuditEntry.objects.get(action="queue.migrate-repeat", outcome=AuditEntry.OK)
    assert json.loads(entry.selection["change"]["before"])["pending_job"] == pending
