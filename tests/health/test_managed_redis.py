"""A managed Redis that has removed CONFIG and CLIENT (``rename-command CONFIG ""``, as hosted
services do): every page, the health page and a monitor tick still work, and say what they
cannot know (workers unknown, the config-based checks read INFO or say "unknown")."""

from __future__ import annotations

import pytest
import redis
from django.urls import reverse

from dashboard.core import dash_redis
from queues.connections import ConnectionSpec
from tests.support.accounts import user_with
from tests.support.cluster_queues import published_counts
from tests.support.live import monitor_thread
from tests.support.redis_db import point_at
from tests.support.servers import RedisServer, node_available, run_node
from tests.support.waiting import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not node_available(), reason="needs node and npm (Node BullMQ builds the queue)"),
]

Q = {"connection": "default", "prefix": "bull", "name": "mail"}
COUNTS = {"waiting": 4, "active": 0, "delayed": 2, "prioritized": 2, "waiting-children": 0, "completed": 1, "failed": 1}


@pytest.fixture
def managed(settings, live_setup):
    """The monitored connection on a redis-server without CONFIG and CLIENT, holding a queue in
    every state built by Node BullMQ (toolbox.mjs fill); the dashboard's own Redis is the test's
    database on the session's server."""
    server = RedisServer('rename-command CONFIG ""', 'rename-command CLIENT ""')
    try:
        with server.client() as direct, pytest.raises(redis.ResponseError, match="unknown command"):
            direct.config_get("maxmemory-policy")
        server.ids = run_node("toolbox.mjs", "fill", server.url(0), "mail", "0")["ids"]
        point_at(settings, ConnectionSpec("default", server.url(0), ("bull",)))
        yield server
    finally:
        server.stop()


def health_status(html: str, kind: str) -> str:
    start = html.index(f'data-kind="{kind}"')
    return html[start:].split('data-status="', 1)[1].split('"', 1)[0]


def test_pages_health_and_a_monitor_tick_say_what_they_cannot_know(client, managed):
    client.force_login(user_with("admin"))
    failed = managed.ids["failed"][0]
    pages = [reverse("overview"), reverse("schedulers"), reverse("queue", kwargs=Q)]
    pages += [reverse(name, kwargs=Q) for name in ("queue_schedulers", "queue_errors", "queue_advice")]
    pages += [reverse("job", kwargs={**Q, "job_id": failed})]
    for page in pages:
        response = client.get(page)
        assert response.status_code == 200, page
        assert "Cannot reach" not in response.content.decode(), page
    assert "Workers unknown" in client.get(reverse("queue", kwargs=Q)).content.decode()

    health = client.get(reverse("health"))
    assert health.status_code == 200
    html = health.content.decode()
    assert health_status(html, "redis.reachable") == "pass"
    assert health_status(html, "redis.eviction_policy") == "pass"  # read from INFO instead
    assert health_status(html, "redis.persistence") == "unknown"
    assert "RDB save points cannot be read because CONFIG is refused" in html
    assert health_status(html, "queue.no_workers") == "unknown"
    assert "CLIENT LIST is not allowed" in html

    with monitor_thread(tick=0.3, name="managed-monitor", lock_ttl_ms=2000):
        wait_for(lambda: published_counts().get(("bull", "mail")) == COUNTS, timeout=20)
        wait_for(lambda: dash_redis.read_workers(dash_redis.dashboard_redis()) is not None, timeout=20)
        workers = dash_redis.read_workers(dash_redis.dashboard_redis())
        overview = client.get(reverse("overview"))
    assert workers["queues"] == {} and "unknown command 'CLIENT'" in workers["unknown"]["default"]
    assert overview.status_code == 200 and ">mail</a>" in overview.content.decode()
    assert "Workers unknown" in client.get(reverse("queue", kwargs=Q)).content.decode()
