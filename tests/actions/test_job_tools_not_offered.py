"""A source kind that has not built the job tools or the deduplication keys (the in-memory kind
of the recipe in docs/sources.md, which offers no facet) shows them as "not offered": the page
says so, the API and a post answer 501, never a 500, and no tool is offered on a job page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from dashboard.actions import registry
from dashboard.connections.registry import reset_registry
from queues.connections import ConnectionSpec
from queues.keys import QueueRef
from tests.support.accounts import user_with
from tests.support.memory_source import register_memory_kind
from tests.support.redis_db import point_at

pytestmark = pytest.mark.django_db


@pytest.fixture
def memory(settings, monkeypatch):
    register_memory_kind(monkeypatch)
    settings.QUEUEWATCH_DASHBOARD_REDIS_URL = None
    point_at(settings, ConnectionSpec("default", "memory://shop", ("bull",)))
    yield
    reset_registry()


class Delayed:
    state = "delayed"


def test_a_kind_without_the_facets_shows_them_as_not_offered(memory, client):
    client.force_login(user_with("operator"))
    args = ["default", "bull", "orders"]
    page = client.get(reverse("queue_dedup", args=args))
    assert page.status_code == 200 and "does not offer the deduplication keys page" in page.content.decode()
    assert client.get(reverse("api_queue_dedup", args=args)).status_code == 501
    posted = client.post(reverse("job_action", args=[*args, "change-delay", "7"]), {"delay": "5"})
    assert posted.status_code == 501
    where = registry.Offer(queue=QueueRef(*args), is_dlq=False, job=Delayed())
    offered = {a.name for a in registry.offered(registry.JOB, where, user=None, role="admin")}
    assert not offered & {"change-priority", "change-delay", "move-to-failed"} and "promote" in offered
