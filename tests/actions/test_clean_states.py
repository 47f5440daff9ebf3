"""Clean by age takes the same states on the page, in the API and in the domain
(``queues.states.CLEANABLE_STATES``): waiting and delayed jobs real Node BullMQ made are
cleaned through the API and the page form; a state outside the set (active, or a name that is
no state) is refused with a message naming the states it can take, and nothing is removed."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from dashboard.audit.models import AuditEntry
from queues.keys import QueueRef
from queues.states import CLEANABLE_STATES
from tests.support.accounts import token_for, user_with
from tests.support.servers import run_node

pytestmark = [pytest.mark.django_db, pytest.mark.node]

Q = ("default", "bull", "tidy")
QUEUE = QueueRef(*Q)
CHOICES = ", ".join(CLEANABLE_STATES)


@pytest.fixture
def jobs(actions_redis):
    """Three delayed jobs (due in an hour) and two waiting ones, with no worker to take them."""
    delayed = run_node("delayed.mjs", actions_redis, "tidy", "3", "3600000")["ids"]
    waiting = run_node("produce.mjs", "add", actions_redis, "tidy", "2")["ids"]
    return {"delayed": delayed, "waiting": waiting}


def api_clean(client, token: str, **body):
    return client.post(
        reverse("api_queue_action", args=[*Q, "clean"]),
        json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def test_the_api_cleans_delayed_jobs_and_the_page_form_waiting_ones(client, jobs, redis_client):
    token = token_for(user_with("operator", username="api-op"))
    answer = api_clean(client, token, state="delayed", older_than_minutes=0, reason="stale reminders")
    assert answer.status_code == 200, answer.content
    assert answer.json()["affected"] == 3
    assert redis_client.zcard(QUEUE.state_key("delayed")) == 0
    assert not any(redis_client.exists(QUEUE.job_key(i)) for i in jobs["delayed"])
    assert redis_client.llen(QUEUE.state_key("waiting")) == 2  # another state is left alone

    client.force_login(user_with("operator", username="page-op"))
    page = client.post(
        reverse("queue_action", args=[*Q, "clean"]),
        {"state": "waiting", "older_than_minutes": "0", "reason": "drop the backlog"},
        HTTP_HX_REQUEST="true",
    )
    assert "Removed 2 waiting jobs" in page.content.decode()
    assert redis_client.llen(QUEUE.state_key("waiting")) == 0
    cleaned = AuditEntry.objects.filter(action="queue.clean").order_by("pk")
    assert [(e.selection["state"], e.affected) for e in cleaned] == [("delayed", 3), ("waiting", 2)]


def test_the_age_is_kept(client, jobs, redis_client):
    token = token_for(user_with("operator", username="api-op"))
    answer = api_clean(client, token, state="delayed", older_than_minutes=60, reason="only old ones")
    assert answer.status_code == 200 and answer.json()["affected"] == 0  # just added: none is an hour old
    assert redis_client.zcard(QUEUE.state_key("delayed")) == 3


@pytest.mark.parametrize("state", ["active", "waiting-children", "paused", "everything"])
def test_a_state_clean_does_not_take_is_refused_by_the_api_and_the_page(client, jobs, redis_client, state):
    token = token_for(user_with("operator", username="api-op"))
    answer = api_clean(client, token, state=state, older_than_minutes=0, reason="r")
    expected = f"Jobs in state '{state}' cannot be cleaned. Choose one of: {CHOICES}."
    assert answer.status_code == 400 and answer.json()["message"] == expected

    client.force_login(user_with("operator", username="page-op"))
    page = client.post(
        reverse("queue_action", args=[*Q, "clean"]), {"state": state, "older_than_minutes": "0", "reason": "r"}
    )
    assert page.status_code == 400 and expected.replace("'", "&#x27;") in page.content.decode()
    assert redis_client.zcard(QUEUE.state_key("delayed")) == 3 and redis_client.llen(QUEUE.state_key("waiting")) == 2
    assert not AuditEntry.objects.filter(action="queue.clean").exists()
