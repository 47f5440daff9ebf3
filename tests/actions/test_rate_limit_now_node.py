"""Rate-limit now (Queue.rateLimit(ms)) from the settings page and the API, against real Node
BullMQ 6.7: admin only, a reason required, audited; Node's getRateLimitTtl sees the window and
its worker starts nothing until the rate-limit key is removed; the queue page's window says so."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from dashboard.audit.models import AuditEntry
from tests.support.accounts import token_for, user_with
from tests.support.servers import node_available, run_node

pytestmark = [
    pytest.mark.node,
    pytest.mark.django_db,
    pytest.mark.skipif(not node_available(), reason="needs Node.js and npm"),
]


def api(client, url: str, body, token: str):
    return client.post(url, json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def test_rate_limit_now_holds_node_workers_until_the_key_is_removed(client, prefixed_queues):
    q = prefixed_queues
    args = q.args("held")
    q.client.hset(q.queue("held").key("meta"), "opts.maxLenEvents", 10000)
    url = lambda action: reverse("api_queue_action", args=[*args, action])  # noqa: E731
    operator, admin = token_for(user_with("operator")), token_for(user_with("admin"))
    assert api(client, url("rate-limit-now"), {"ms": 60000, "reason": "x"}, operator).status_code == 403
    assert api(client, url("rate-limit-now"), {"ms": 60000}, admin).status_code == 400  # a reason is required
    assert api(client, url("rate-limit-now"), {"ms": 0, "reason": "x"}, admin).status_code == 400
    # BullMQ applies the limiter only where a rate limit is in force (getRateLimitTTL needs a max).
    assert api(client, url("set-rate-limit"), {"max": 100, "duration": 1000}, admin).status_code == 200
    done = api(client, url("rate-limit-now"), {"ms": 60000, "reason": "provider outage"}, admin)
    assert done.status_code == 200 and done.json()["outcome"] == "done"
    entry = AuditEntry.objects.filter(action="queue.rate-limit-now").latest("pk")
    assert entry.reason == "provider outage" and "60000" in json.dumps(entry.selection, default=str)

    held = run_node("figures.mjs", q.url, "held", "held", prefix=q.prefix)
    assert 50_000 < held["ttl"] <= 60_000 and held["completed"] == 0  # Node's worker waits it out
    client.force_login(user_with("viewer", username="looker"))
    page = " ".join(client.get(reverse("queue", args=args)).content.decode().split())
    assert "rate-limited by hand (rateLimit()) for" in page and "figure-limited" in page

    assert api(client, url("remove-rate-limit-key"), {}, admin).status_code == 200
    freed = run_node("figures.mjs", q.url, "held", "held", prefix=q.prefix)
    assert freed["ttl"] == 0 and freed["completed"] == 2


def test_the_settings_page_offers_it_to_admins_with_a_reason(client, prefixed_queues):
    q = prefixed_queues
    q.client.hset(q.queue("form").key("meta"), "opts.maxLenEvents", 10000)
    client.force_login(user_with("admin"))
    page = client.get(reverse("queue_settings", args=q.args("form"))).content.decode()
    assert "queue-rate-limit-now" in page and 'name="ms"' in page
    done = client.post(
        reverse("queue_action", args=[*q.args("form"), "rate-limit-now"]),
        {"ms": "5000", "reason": "calm down"},
        HTTP_HX_REQUEST="true",
    )
    assert b"Rate-limited for 5 s. The queue has no global rate limit: only workers started with" in done.content
    assert 0 < q.client.pttl(q.queue("form").key("limiter")) <= 5000
