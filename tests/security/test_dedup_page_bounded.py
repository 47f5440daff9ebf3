"""The deduplication page is the one page that SCANs: each request makes at most ``SCAN_CALLS``
SCAN calls of ``COUNT SCAN_COUNT`` and reads four commands per key it shows, whatever the size of
the keyspace (docs/operations.md, "Reading Redis"), and pages on with the cursor it gives."""
# Literal `bull:` keys kept: a redis-server of the test's own (commandstats count only its requests).

from __future__ import annotations

import pytest
from django.urls import reverse

from dashboard.core.dash_redis import publish_queue_list
from queues.dedup import SCAN_CALLS
from queues.keys import QueueRef
from tests.support.servers import RedisServer

pytestmark = pytest.mark.django_db
ARGS = ["default", "bull", "dd"]
NOISE = 60_000  # other keys: more than one page's SCAN calls can walk


@pytest.fixture
def monitored(settings):
    from channels.layers import channel_layers

    from queues.connections import ConnectionSpec
    from tests.support.redis_db import point_at

    monitored_server, dashboard_server = RedisServer(), RedisServer()
    point_at(settings, ConnectionSpec("default", monitored_server.url(0), ("bull",)))
    settings.QUEUEWATCH_DASHBOARD_REDIS_URL = dashboard_server.url(0)
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    channel_layers.backends.clear()
    r = monitored_server.client(0)
    pipe = r.pipeline(transaction=False)
    pipe.hset("bull:dd:meta", mapping={"opts.maxLenEvents": 10000})
    for n in range(NOISE):
        pipe.set(f"other:{n}", 1)
    for n in range(5):
        pipe.set(f"bull:dd:de:k{n}", f"job-{n}")
    pipe.execute()
    publish_queue_list(dashboard_server.client(0), "default", [QueueRef("default", "bull", "dd")])
    yield r
    r.close()
    from dashboard.connections.registry import reset_registry

    reset_registry()
    channel_layers.backends.clear()
    monitored_server.stop()
    dashboard_server.stop()


def test_the_deduplication_page_scans_a_bounded_part_per_request_and_pages_on(monitored, logged_in):
    seen, cursor, requests = set(), "0", 0
    while True:
        monitored.config_resetstat()
        response = logged_in.get(reverse("api_queue_dedup", args=ARGS) + f"?cursor={cursor}")
        stats = {k[len("cmdstat_") :]: v["calls"] for k, v in monitored.info("commandstats").items()}
        body = response.json()
        keys = len(body["keys"])
        assert stats.get("scan", 0) <= SCAN_CALLS and "keys" not in stats
        work = {k: v for k, v in stats.items() if k not in ("scan", "info", "config|resetstat", "hello", "ping")}
        assert sum(work.values()) <= 4 * keys + 2, work  # GET, PTTL, HMGET dn:, EXISTS owner per key
        seen |= {k["id"] for k in body["keys"]}
        requests += 1
        if not body["more"]:
            break
        cursor = body["cursor"]
    assert seen == {f"k{n}" for n in range(5)}
    assert requests >= 2  # 60,000 keys take more than one request's 20 SCAN calls of COUNT 1000
