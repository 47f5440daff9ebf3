"""Pausing a queue is a change to production: the queue page confirms it and requires a reason
(audited); the API's pause takes a reason too, optional, audited when given."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse

from dashboard.audit.models import AuditEntry

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(client):
    user = User.objects.create_user("op", password="pw")
    user.groups.add(Group.objects.get_or_create(name="operator")[0])
    client.force_login(user)
    return client


@pytest.fixture
def queue(prefixed_queues):
    q = prefixed_queues.queue("orders")
    prefixed_queues.client.hset(q.key("meta"), mapping={"opts.maxLenEvents": 10000})
    return q


def paused(prefixed_queues, q) -> bool:
    return prefixed_queues.client.hexists(q.key("meta"), "paused")


def test_the_queue_page_asks_to_confirm_a_pause_with_a_reason(operator, prefixed_queues, queue):
    html = operator.get(reverse("queue", args=prefixed_queues.args("orders"))).content.decode()
    confirm = html.split('<details class="qw-confirm" data-qw-shown-when="running"', 1)[1].split("</details>", 1)[0]
    assert 'class="button queue-pause-open"' in confirm
    assert '<input name="reason" required' in confirm and 'class="queue-pause"' in confirm


def test_a_pause_from_the_page_without_a_reason_is_refused(operator, prefixed_queues, queue):
    url = reverse("queue_action", args=[*prefixed_queues.args("orders"), "pause"])
    refused = operator.post(url, {}, HTTP_HX_REQUEST="true")
    assert "Say why" in refused.content.decode() and not paused(prefixed_queues, queue)
    assert not AuditEntry.objects.filter(action="queue.pause").exists()
    operator.post(url, {"reason": "payment provider outage"}, HTTP_HX_REQUEST="true")
    assert paused(prefixed_queues, queue)
    assert AuditEntry.objects.get(action="queue.pause").reason == "payment provider outage"
    # Resume stays one click (it undoes the change).
    operator.post(reverse("queue_action", args=[*prefixed_queues.args("orders"), "resume"]), HTTP_HX_REQUEST="true")
    assert not paused(prefixed_queues, queue)


def test_the_api_pause_takes_an_optional_reason_audited(operator, prefixed_queues, queue):
    url = reverse("api_queue_action", args=[*prefixed_queues.args("orders"), "pause"])
    headers: dict = {}  # the test client skips the CSRF check (tests/security covers it)
    response = operator.post(url, {"reason": "deploying v2"}, content_type="application/json", **headers)
    assert response.status_code == 200, response.content
    assert paused(prefixed_queues, queue)
    assert AuditEntry.objects.get(action="queue.pause").reason == "deploying v2"
    operator.post(
        reverse("api_queue_action", args=[*prefixed_queues.args("orders"), "resume"]),
        {},
        content_type="application/json",
        **headers,
    )
    response = operator.post(url, {}, content_type="application/json", **headers)
    assert response.status_code == 200 and paused(prefixed_queues, queue)
    assert AuditEntry.objects.filter(action="queue.pause", reason="").count() == 1
