"""The job tools and the deduplication page through the pages and the JSON API, on jobs Node
BullMQ made: offered to operators only and where the job's state allows, CSRF-checked, audited,
and refused with a message for bad input."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client
from django.urls import reverse

from dashboard.audit.models import AuditEntry
from tests.support.accounts import token_for, user_with
from tests.support.job_tools_node import NodeJobTools
from tests.support.servers import node_available

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="Node.js and npm are needed for interop tests"),
]


@pytest.fixture
def node(prefixed_queues):
    with NodeJobTools(prefixed_queues.url, prefixed_queues.prefix) as proc:
        yield proc


@pytest.fixture
def q(prefixed_queues) -> list[str]:
    return prefixed_queues.args("tools")


def add(node, *jobs) -> list[str]:
    return node.send("add", queue="tools", jobs=list(jobs))["ids"]


def api(client, url: str, body, token: str):
    return client.post(url, json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def test_the_job_page_offers_the_tools_the_state_allows_to_operators_only(client, node, q):
    delayed, done = add(node, {"name": "later", "opts": {"delay": 600_000}}, {"name": "now"})
    node.send("run", queue="tools", count=1)
    client.force_login(user_with("operator"))
    page = client.get(reverse("job", args=[*q, delayed])).content.decode()
    for name in ("change-priority", "change-delay", "move-to-failed"):
        assert reverse("job_action", args=[*q, name, delayed]) in page, name
    finished = client.get(reverse("job", args=[*q, done])).content.decode()
    assert "change-delay" not in finished and "move-to-failed" not in finished and "change-priority" not in finished
    client.force_login(user_with("viewer"))
    viewer = client.get(reverse("job", args=[*q, delayed])).content.decode()
    assert "change-delay" not in viewer


def test_tools_are_role_checked_csrf_checked_and_audited(node, q, prefixed_queues):
    r, queue = prefixed_queues.client, prefixed_queues.queue("tools")
    job_id = add(node, {"name": "p", "opts": {"priority": 9}})[0]
    url = reverse("job_action", args=[*q, "change-priority", job_id])
    viewer = Client()
    viewer.force_login(user_with("viewer"))
    assert viewer.post(url, {"priority": "1"}).status_code == 403
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user_with("operator"))
    assert strict.post(url, {"priority": "1"}).status_code == 403  # no CSRF token
    assert r.hget(queue.job_key(job_id), "priority") == b"9"
    operator = Client()
    operator.force_login(user_with("operator", username="op2"))
    bad = operator.post(url, {"priority": "3000000"})
    assert bad.status_code == 400 and "2097151" in bad.content.decode()
    done = operator.post(url, {"priority": "2"})
    assert done.status_code == 200 and r.hget(queue.job_key(job_id), "priority") == b"2"
    entry = AuditEntry.objects.get(action="job.change-priority", outcome=AuditEntry.OK)
    assert entry.selection["priority"] == 2 and entry.job_ids == [job_id] and entry.user.username == "op2"


def test_api_changes_a_delay_and_moves_a_job_to_failed_with_its_reason(client, node, q, prefixed_queues):
    r, queue = prefixed_queues.client, prefixed_queues.queue("tools")
    delayed, waiting = add(node, {"name": "later", "opts": {"delay": 600_000}}, {"name": "w"})
    token = token_for(user_with("operator"))
    moved = api(
        client, reverse("api_job_action", args=[*q, "change-delay", delayed]), {"delay": 90, "unit": "s"}, token
    )
    assert moved.status_code == 200 and moved.json()["outcome"] == "done"
    score = r.zscore(queue.key("delayed"), delayed) / 4096
    assert abs(score - (int(r.time()[0]) * 1000 + 90_000)) < 5_000
    not_delayed = api(client, reverse("api_job_action", args=[*q, "change-delay", waiting]), {"delay": 5}, token)
    assert not_delayed.status_code == 409 and not_delayed.json()["outcome"] == "wrong_state"
    fail_url = reverse("api_job_action", args=[*q, "move-to-failed", waiting])
    assert api(client, fail_url, {}, token).status_code == 400  # the reason is required
    failed = api(client, fail_url, {"reason": "customer cancelled"}, token)
    assert failed.status_code == 200
    seen = node.send("job", queue="tools", id=waiting)
    assert (seen["state"], seen["failedReason"]) == ("failed", "customer cancelled")
    entry = AuditEntry.objects.get(action="job.move-to-failed")
    assert entry.reason == "customer cancelled" and entry.via == "api"


def test_the_deduplication_page_lists_and_releases_a_key(client, node, q, prefixed_queues):
    r, queue = prefixed_queues.client, prefixed_queues.queue("tools")
    owner = add(node, {"name": "digest", "opts": {"deduplication": {"id": "user-42", "ttl": 600_000}}})[0]
    r.set(queue.key("de:orphan"), "no-such-job")
    client.force_login(user_with("operator"))
    queue_page = client.get(reverse("queue", args=q)).content.decode()
    assert reverse("queue_dedup", args=q) in queue_page
    page = client.get(reverse("queue_dedup", args=q))
    body = page.content.decode()
    assert page.status_code == 200 and "user-42" in body and "orphan" in body and "stuck" in body
    assert reverse("job", args=[*q, owner]) in body
    release = reverse("queue_action", args=[*q, "release-dedup-key"])
    assert client.post(release, {"dedup_id": "user-42", "owner": owner}).status_code == 400  # reason required
    done = client.post(release, {"dedup_id": "user-42", "owner": owner, "reason": "stuck after an outage"})
    assert done.status_code == 200 and not r.exists(queue.key("de:user-42"))
    entry = AuditEntry.objects.get(action="queue.release-dedup-key", outcome=AuditEntry.OK)
    assert entry.selection == {"dedup_id": "user-42", "job_id": owner}
    stale = client.post(release, {"dedup_id": "orphan", "owner": "someone", "reason": "x"})
    assert stale.status_code == 409 and r.exists(queue.key("de:orphan"))
    token = token_for(user_with("viewer", username="reader"))
    listed = client.get(reverse("api_queue_dedup", args=q), HTTP_AUTHORIZATION=f"Bearer {token}").json()
    assert [(k["id"], k["owner"], k["stuck"]) for k in listed["keys"]] == [("orphan", "no-such-job", True)]
    assert listed["more"] is False and listed["cursor"] == "0"
    bad = reverse("api_queue_dedup", args=q) + "?cursor=not-a-cursor"
    assert client.get(bad, HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 400


def test_the_hit_rate_comes_from_the_monitors_event_counts(client, prefixed_queues, q, settings, redis_db):
    from dashboard.core import dash_redis, state_store

    settings.QUEUEWATCH_DASHBOARD_REDIS_URL = redis_db.url  # a database of this test's own
    prefixed_queues.client.hset(prefixed_queues.queue("tools").key("meta"), "opts.maxLenEvents", 10000)
    dash = dash_redis.dashboard_redis()
    entry = {"connection": q[0], "prefix": q[1], "name": "tools", "events_total": {"added": 30, "deduplicated": 10}}
    client.force_login(user_with("viewer"))
    try:
        state_store.publish_state(dash, {"taken_at": 1, "monitor": "m", "connections": {}, "queues": [entry]})
        page = re.sub(r"<[^>]+>", "", client.get(reverse("queue_dedup", args=q)).content.decode())
        assert "25.0%" in page and "10 deduplicated, 30 added" in page
        api_body = client.get(reverse("api_queue_dedup", args=q)).json()
        assert api_body["rates"] == {"added": 30, "deduplicated": 10, "hit_rate": 0.25}
        other = {**entry, "name": "another"}
        state_store.publish_state(dash, {"taken_at": 1, "monitor": "m", "connections": {}, "queues": [other]})
        assert "has not counted this queue" in client.get(reverse("queue_dedup", args=q)).content.decode()
    finally:
        dash.delete(state_store.STATE_KEY)
    assert "No monitor is publishing" in client.get(reverse("queue_dedup", args=q)).content.decode()


def test_the_audit_log_shows_a_changed_delay_as_a_duration(client, node, q):
    delayed = add(node, {"name": "later", "opts": {"delay": 600_000}})[0]
    admin = user_with("admin")
    client.force_login(admin)
    assert (
        client.post(reverse("job_action", args=[*q, "change-delay", delayed]), {"delay": "90", "unit": "s"}).status_code
        == 200
    )
    log = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", client.get(reverse("audit")).content.decode()))
    assert "ready in" in log and "1970" not in log
