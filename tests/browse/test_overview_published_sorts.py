"""The overview sorts by the figures only the monitor derives (throughput, dead letters per
minute, workers), in the order of its last state document: the page and the API list alike, the
header marked as sorted; queues it has not published come last, by name."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from dashboard.core import dash_redis
from queues.keys import QueueRef
from queues.redis.snapshot import read_snapshots
from tests.support.servers import RedisServer

pytestmark = pytest.mark.django_db
PREFIX = "pub"
# name: (completed /min, failed /min, dead letters /min, workers), over the overview's 5 minutes
FIGURES = {
    "alpha": (1.0, 0.0, 0.0, 2),
    "bravo": (9.0, 3.0, 0.5, 0),
    "charlie": (4.0, 0.0, 2.0, 7),
    "delta": None,  # not published yet
}


@pytest.fixture
def published(settings):
    from channels.layers import channel_layers

    from dashboard.connections.registry import reset_registry
    from queues.connections import ConnectionSpec
    from tests.support.redis_db import point_at

    monitored, dashboard = RedisServer(), RedisServer()
    point_at(settings, ConnectionSpec("default", monitored.url(0), (PREFIX,)))
    settings.QUEUEWATCH_DASHBOARD_REDIS_URL = dashboard.url(0)
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    channel_layers.backends.clear()
    r = monitored.client(0)
    refs = [QueueRef("default", PREFIX, name) for name in FIGURES]
    for ref in refs:
        r.hset(f"{PREFIX}:{ref.name}:meta", mapping={"opts.maxLenEvents": 10000})
    entries = []
    for snap in read_snapshots(r, refs):
        figures = FIGURES[snap.queue.name]
        if figures is None:
            continue
        done, failed, dead, workers = figures
        entries.append(
            {
                **snap.as_dict(),
                "rates_per_min": {
                    "completed": {"1": 0, "5": done, "15": 0},
                    "failed": {"1": 0, "5": failed, "15": 0},
                    "dead_letter": {"1": 0, "5": dead, "15": 0},
                },
                "workers": workers,
            }
        )
    dash = dashboard.client(0)
    dash_redis.publish_queue_list(dash, "default", refs)
    dash_redis.publish_state(dash, {"taken_at": 1, "monitor": "m", "connections": {}, "queues": entries})
    yield
    reset_registry()
    channel_layers.backends.clear()
    monitored.stop()
    dashboard.stop()


def shown_names(html: str) -> list[str]:
    return re.findall(r'class="queue-name"><a href="[^"]*">([^<]+)</a>', html)


@pytest.mark.parametrize(
    "sort, expected",
    [
        ("throughput", ["bravo", "charlie", "alpha", "delta"]),  # completed + failed
        ("dead_letters", ["charlie", "bravo", "alpha", "delta"]),
        ("workers", ["charlie", "alpha", "bravo", "delta"]),
    ],
)
def test_the_overview_sorts_by_rates_and_workers_as_the_monitor_published_them(published, logged_in, sort, expected):
    html = logged_in.get(reverse("overview"), {"sort": sort, "dir": "desc"}).content.decode()
    assert shown_names(html) == expected
    header = re.search(r'<th[^>]*aria-sort="descending"[^>]*>(.*?)</th>', html, re.S)
    assert header and f"sort={sort}&amp;dir=asc" in header.group(1)  # marked, and a click reverses it
    ascending = logged_in.get(reverse("overview"), {"sort": sort, "dir": "asc"}).content.decode()
    assert shown_names(ascending) == ["delta", *reversed(expected[:3])]
    listed = logged_in.get(reverse("api_queues"), {"sort": sort, "dir": "desc"}).json()
    assert [q["name"] for q in listed["queues"]] == expected
