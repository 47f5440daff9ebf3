"""JSON an operator sends (an API body, job data typed into a form) is refused with a clear 400
when it is nested thousands deep or holds numbers no JSON reader agrees on (``NaN``,
``Infinity``, ``1e400``) — never a 500, never an ``inf`` written to Redis — and nothing changes."""

from __future__ import annotations

import pytest
from django.urls import reverse

from dashboard.audit.models import AuditEntry
from tests.support.accounts import token_for, user_with

pytestmark = pytest.mark.django_db

DEEP = "[" * 5000 + "]" * 5000


@pytest.fixture
def queue(prefixed_queues):
    prefixed_queues.client.hset(prefixed_queues.queue("jobs").key("meta"), "opts.maxLenEvents", 10000)
    return prefixed_queues


def keys(queue) -> list:
    return sorted(queue.client.keys(f"{queue.prefix}:*"))


def api(client, url: str, body: str):
    token = token_for(user_with("operator"))
    return client.post(url, body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ('{"reason": "x", "deep": ' + DEEP + "}", "nested more than 100 levels deep"),
        ('{"reason": "x", "n": NaN}', "NaN, which is not a JSON number"),
        ('{"reason": "x", "n": 1e400}', "1e400, which is not a JSON number"),
        ('{"reason": ', "not valid JSON"),
    ],
)
def test_an_api_body_nested_thousands_deep_or_not_finite_is_a_400_json(client, queue, body, says):
    before = keys(queue)
    url = reverse("api_queue_action", args=[*queue.args("jobs"), "pause"])
    response = api(client, url, body)
    assert response.status_code == 400 and response["Content-Type"].startswith("application/json")
    assert says in response.json()["message"]
    assert keys(queue) == before and not AuditEntry.objects.filter(action="queue.pause").exists()


@pytest.mark.parametrize(
    ("data", "says"),
    [(DEEP, b"nested more than 100 levels deep"), ('{"amount": Infinity}', b"Infinity, which is not a JSON number")],
)
def test_job_data_typed_into_the_add_form_is_refused_with_why(client, queue, data, says):
    client.force_login(user_with("operator"))
    before = keys(queue)
    url = reverse("queue_action", args=[*queue.args("jobs"), "add"])
    response = client.post(url, {"name": "x", "data": data}, HTTP_HX_REQUEST="true")
    assert says in response.content and b"action-result ok" not in response.content
    assert keys(queue) == before
