"""At 2,000 queues, each overview and API list request does work bounded by its page: the order
comes from the queue list (name sorts) or from the figures the monitor published (sorts by a
figure), and only the page's queues are read from the monitored Redis. Counted with the
monitored Redis's own command statistics (a redis-server of this module's own; the dashboard
Redis is another one)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from dashboard.core import dash_redis, state_store
from queues.keys import QueueRef
from queues.redis.snapshot import PER_QUEUE_COMMANDS, read_snapshots
from tests.support.servers import RedisServer

pytestmark = pytest.mark.django_db
QUEUES = 2000
PREFIX = "many"
# A page of 100 queues read exactly, with its ready-time reads and transactions, and what the
# request needs besides; far below one read of every queue (2,000 x 16 commands).
PAGE_BOUND = 100 * (PER_QUEUE_COMMANDS + 6) + 50


def failed_of(i: int) -> int:
    return (i * 7919) % 23  # an order unlike the names'


@pytest.fixture
def many(settings):
    from channels.layers import channel_layers

    from queues.connections import ConnectionSpec
    from tests.support.redis_db import point_at

    monitored_server, dashboard_server = RedisServer(), RedisServer()
    point_at(settings, ConnectionSpec("default", monitored_server.url(0), (PREFIX,)))
    settings.QUEUEWATCH_DASHBOARD_REDIS_URL = dashboard_server.url(0)
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    channel_layers.backends.clear()
    r = monitored_server.client(0)
    pipe = r.pipeline(transaction=False)
    refs = []
    for i in range(QUEUES):
        name = f"q{i:05d}"
        refs.append(QueueRef("default", PREFIX, name))
        pipe.hset(f"{PREFIX}:{name}:meta", mapping={"opts.maxLenEvents": 10000})
        if failed_of(i):
            pipe.zadd(f"{PREFIX}:{name}:failed", {f"f{n}": n for n in range(failed_of(i))})
    pipe.execute()
    # What a leading monitor publishes: the queue list and every queue's figures.
    dash = dashboard_server.client(0)
    dash_redis.publish_queue_list(dash, "default", refs)
    state_store.publish_state(
        dash,
        {"taken_at": 1, "monitor": "m", "connections": {}, "queues": [s.as_dict() for s in read_snapshots(r, refs)]},
    )
    yield r
    r.close()
    from dashboard.connections.registry import reset_registry

    reset_registry()
    channel_layers.backends.clear()
    monitored_server.stop()
    dashboard_server.stop()


def commands_for(r, call):
    r.config_resetstat()
    response = call()
    stats = r.info("commandstats")
    used = sum(v["calls"] for k, v in stats.items() if k not in ("cmdstat_info", "cmdstat_config|resetstat"))
    return response, used


def shown_names(html: str) -> list[str]:
    return re.findall(r'class="queue-name"><a href="[^"]*">([^<]+)</a>', html)


def expected_by_failed() -> list[str]:
    ranked = sorted(range(QUEUES), key=lambda i: (failed_of(i), f"q{i:05d}"), reverse=True)
    return [f"q{i:05d}" for i in ranked]


def test_the_overview_sorted_by_any_column_reads_only_its_page(many, logged_in):
    for sort in ("name", "failed", "waiting", "oldest", "paused", "connection"):
        for direction in ("", "desc"):
            response, used = commands_for(
                many, lambda s=sort, d=direction: logged_in.get(reverse("overview"), {"sort": s, "dir": d})
            )
            assert response.status_code == 200
            assert used <= PAGE_BOUND, (sort, direction, used)
    response = logged_in.get(reverse("overview"), {"sort": "failed", "dir": "desc", "page": 2})
    assert shown_names(response.content.decode()) == expected_by_failed()[100:200]


def test_a_name_search_reads_only_what_it_shows(many, logged_in):
    response, used = commands_for(many, lambda: logged_in.get(reverse("overview"), {"q": "q019", "sort": "failed"}))
    names = shown_names(response.content.decode())
    assert sorted(names) == [f"q{i:05d}" for i in range(1900, 2000)] and used <= PAGE_BOUND


def test_the_api_list_is_paged_in_any_order_and_reads_only_its_page(many, logged_in):
    url = reverse("api_queues")
    response, used = commands_for(many, lambda: logged_in.get(url, {"page": 3, "size": 50}))
    body = response.json()
    assert [q["name"] for q in body["queues"]] == [f"q{i:05d}" for i in range(100, 150)]
    assert (body["page"], body["size"], body["total"], body["has_next"]) == (3, 50, QUEUES, True)
    assert used <= PAGE_BOUND
    response, used = commands_for(many, lambda: logged_in.get(url, {"sort": "failed", "dir": "desc"}))
    body = response.json()
    assert [q["name"] for q in body["queues"]] == expected_by_failed()[:100]
    assert [q["counts"]["failed"] for q in body["queues"]] == sorted(
        (failed_of(i) for i in range(QUEUES)), reverse=True
    )[:100]
    assert used <= PAGE_BOUND
    last = logged_in.get(url, {"page": 40, "size": 50, "q": "q01"}).json()
    assert (last["total"], last["has_next"], last["queues"]) == (1000, False, [])
