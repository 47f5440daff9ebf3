"""The overview sorts by the figures only the monitor derives (throughput, dead letters per
minute, workers), in the order of its last state document: the page and the API list alike, the
header marked as sorted; queues it has not published come last, by name."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from dashboard.core import dash_redis, state_store
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
    state_store.publish_state(dash, {"taken_at": 1, "monitor": "m", "connections": {}, "queues": entries})
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


def test_sorting_needs_only_the_order_document_not_the_whole_state(published, logged_in):
    """At 10,000 queues the state document is megabytes (timings, totals) and parsing it made
    every sorted request slow: sorting reads the small order document the monitor writes beside it."""
    from dashboard.core.dash_redis import dashboard_redis
    from dashboard.core.state_store import ORDER_KEY, STATE_KEY

    dash = dashboard_redis()
    state_size = sum(len(f) + len(v) for f, v in dash.hgetall(STATE_KEY).items())  # a hash: a field per queue
    assert dash.exists(ORDER_KEY) and len(dash.get(ORDER_KEY)) < state_size
    dash.delete(STATE_KEY)
    html = logged_in.get(reverse("overview"), {"sort": "throughput", "dir": "desc"}).content.decode()
    assert shown_names(html) == ["bravo", "charlie", "alpha", "delta"]


def test_the_monitor_writes_the_order_document_as_the_projection_of_its_state_document(published):
    from dashboard.core import dash_redis, order_document
    from dashboard.live.rates import build_signals
    from dashboard.monitor.queue_state import QueueState
    from dashboard.monitor.state_document import StateDocument
    from queues.rates import QueueSeries
    from queues.snapshot import QueueSnapshot

    dash = dash_redis.dashboard_redis()
    states = {}
    for entry in state_store.read_state(dash)["queues"]:
        q = QueueRef(entry["connection"], entry["prefix"], entry["name"])
        snap = QueueSnapshot(queue=q, counts=entry["counts"], paused=entry["paused"], schedulers=0, taken_at=5)
        states[q] = QueueState(signals=build_signals(snap, QueueSeries(), now_ms=5, workers=entry["workers"]))
    StateDocument().publish(dash, states=states, connection_names=["default"], down={}, monitor_name="m")
    state, order = state_store.read_state(dash), state_store.read_order(dash)
    assert order["taken_at"] == state["taken_at"] and order["monitor"] == "m"
    # Columnar: the queues once, then one list per sortable figure, in the queues' order.
    assert order["queues"] == [[e["connection"], e["prefix"], e["name"]] for e in state["queues"]]
    assert len(order["queues"]) == 3
    expected = {
        "counts.failed": [e["counts"]["failed"] for e in state["queues"]],
        "paused": [e["paused"] for e in state["queues"]],
        "oldest_waiting_age_ms": [e["oldest_waiting_age_ms"] for e in state["queues"]],
        "workers": [e["workers"] for e in state["queues"]],
        "rates_per_min.completed.5": [e["rates_per_min"]["completed"]["5"] for e in state["queues"]],
    }
    assert {path: order["columns"][path] for path in expected} == expected
    assert "timings" in state["queues"][0] and not any(path.startswith("timings") for path in order["columns"])
    published = order_document.PublishedOrder(order)
    queues = [QueueRef(e["connection"], e["prefix"], e["name"]) for e in state["queues"]]
    assert published.keys(("counts.failed",), lambda n: n).of(queues, None) == [
        e["counts"]["failed"] for e in state["queues"]
    ]
