"""What the action pages say: a bulk retry that resets the counters is named so in the dialog
that confirms it, and the menus say how the two retries differ."""

from __future__ import annotations

import pytest
import redis
from django.contrib.auth.models import Group, User
from django.urls import reverse

from queues.keys import QueueRef
from tests.support.seeding import seed_failed

pytestmark = pytest.mark.django_db

Q = ("default", "bull", "wording")
QUEUE = QueueRef(*Q)


@pytest.fixture
def operator_client(client):
    user = User.objects.create_user("op", password="pw")
    user.groups.add(Group.objects.get_or_create(name="operator")[0])
    client.force_login(user)
    return client


@pytest.fixture
def failed(actions_redis):
    r = redis.Redis.from_url(actions_redis)
    r.hset(QUEUE.key("meta"), "opts.maxLenEvents", 10000)  # the queue exists
    return seed_failed(r, QUEUE, 18, reason=lambda i: f"timeout after {i} ms")


def test_a_retry_with_counters_reset_is_named_so_where_it_is_confirmed(operator_client, failed):
    html = operator_client.post(
        reverse("bulk_preview", args=Q),
        {"action": "redrive", "state": "failed", "scope": "matching"},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    assert "<h2>Retry 18 jobs, counters reset?</h2>" in html
    assert "Confirm: retry 18 jobs, counters reset</button>" in html
    assert "Redrive" not in html and "redrive 18" not in html
    plain = operator_client.post(
        reverse("bulk_preview", args=Q), {"action": "retry", "state": "failed", "scope": "matching"}
    ).content.decode()
    assert "<h2>Retry 18 jobs?</h2>" in plain and "Confirm: retry 18 jobs</button>" in plain


def test_the_menus_say_how_the_two_retries_differ(operator_client, failed):
    for url in (reverse("queue", args=Q) + "?state=failed", reverse("queue_errors", args=Q)):
        html = operator_client.get(url).content.decode()
        assert "retry, counters reset</option>" in html
        assert 'class="muted retry-choices-hint"' in html and "always resets them" in html, url
