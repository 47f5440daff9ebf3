"""The overview's order from the monitor's order document is a plain sort of every row: each
figure column in both directions, with ties (by name in the sort's direction for a snapshot's
figure, by name for what only the monitor derives), the same name under two prefixes (in the
queue list's order), queues the monitor has not published yet, a value of the wrong type and a
name search; and, where every published figure is what a read shows, the same order as sorting
every queue read afresh (the path taken without an order document)."""

from __future__ import annotations

import random

import pytest

from dashboard.browse import columns, selectors
from dashboard.core import dash_redis, state_store
from dashboard.core.order_document import order_values
from queues.keys import QueueRef
from queues.redis.snapshot import read_snapshots
from tests.support.servers import RedisServer

pytestmark = pytest.mark.django_db
PREFIXES = ("pa", "pb")
PAGE = 7
NAMES = [f"q{i:02d}" for i in range(18)] + ["Beta", "alpha", "Alpha"]  # name order ignores case
# In the queue list, in this (shuffled) order: the order equal rows keep.
LISTING = random.Random(5).sample(
    [QueueRef("default", p, n) for p in PREFIXES for n in NAMES], k=len(PREFIXES) * len(NAMES)
)
UNPUBLISHED = set(LISTING[:4])  # not in the order document yet; empty, so the figures they show are those unknown
ODD = LISTING[4]  # its failed count published as text, and none in Redis
SORTS = ["failed", "waiting", "oldest", "paused", "throughput", "dead_letters", "workers"]


def figures(i: int) -> tuple[int, int, bool]:
    """(failed, waiting, paused) of the queue listed i-th: few values, many ties."""
    return (i * 7) % 3, (i * 5) % 4, i % 4 == 1


@pytest.fixture
def fleet(settings):
    """The queues in Redis, and what a monitor publishes of them: the queue list, and the state
    and order documents of all but ``UNPUBLISHED``; returns each published queue's order values."""
    from channels.layers import channel_layers

    from dashboard.connections.registry import reset_registry
    from queues.connections import ConnectionSpec
    from tests.support.redis_db import point_at

    monitored, dashboard = RedisServer(), RedisServer()
    point_at(settings, ConnectionSpec("default", monitored.url(0), PREFIXES))
    settings.QUEUEWATCH_DASHBOARD_REDIS_URL = dashboard.url(0)
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    channel_layers.backends.clear()
    r = monitored.client(0)
    for i, q in enumerate(LISTING):
        failed, waiting, paused = (0, 0, False) if q in UNPUBLISHED or q == ODD else figures(i)
        r.hset(q.key("meta"), mapping={"opts.maxLenEvents": 10000, **({"paused": 1} if paused else {})})
        if failed:
            r.zadd(q.key("failed"), {f"f{n}": n for n in range(failed)})
        if waiting:
            r.lpush(q.key("paused" if paused else "wait"), *[f"w{n}" for n in range(waiting)])
    entries = []
    for i, snap in enumerate(read_snapshots(r, [q for q in LISTING if q not in UNPUBLISHED])):
        entry = {
            **snap.as_dict(),
            "rates_per_min": {"completed": {"5": i % 3 * 1.5}, "failed": {"5": i % 2}, "dead_letter": {"5": i % 2}},
            "workers": [None, 0, 2][i % 3],
        }
        if snap.queue == ODD:
            entry["counts"]["failed"] = "many"
        entries.append(entry)
    dash = dashboard.client(0)
    dash_redis.publish_queue_list(dash, "default", LISTING)
    state_store.publish_state(dash, {"taken_at": 1, "monitor": "m", "connections": {}, "queues": entries})
    yield {QueueRef(e["connection"], e["prefix"], e["name"]): order_values(e) for e in entries}
    reset_registry()
    channel_layers.backends.clear()
    monitored.stop()
    dashboard.stop()


def ordered(user, sort: str, descending: bool, query: str = "") -> tuple[list[QueueRef], list, list[int]]:
    """Every row's queue in the order the overview gives, the page's snapshots, and the totals."""
    rows: list = []

    def pick(every):
        rows[:] = every
        return [part[:PAGE] for part in every]

    connections, totals = selectors.ordered_overview(user, sort=sort, descending=descending, query=query, pick=pick)
    assert len(rows) == 1 and len(connections) == 1
    # The rows are queues, or their snapshots where every queue was read to sort them.
    return [getattr(row, "queue", row) for row in rows[0]], connections[0].snapshots, totals


def plain_sort(values: dict, sort: str, descending: bool, query: str = "") -> list[QueueRef]:
    key = columns.published_key(sort)
    assert key is not None

    def figure(q: QueueRef):
        return key.key(*(values[q].get(path) if q in values else None for path in key.paths))

    listed = [q for q in LISTING if query in q.name.lower()]
    if columns.sort_key(sort) is not None:  # a snapshot's figure: ties by name in the sort's direction
        return sorted(listed, key=lambda q: (figure(q), q.name), reverse=descending)
    return sorted(sorted(listed, key=lambda q: (q.name.lower(), q.prefix)), key=figure, reverse=descending)


@pytest.mark.parametrize("sort", SORTS)
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("query", ["", "q1"])
def test_the_published_order_is_a_plain_sort_of_every_row(fleet, user, sort, descending, query):
    rows, page, totals = ordered(user, sort, descending, query)
    expected = plain_sort(fleet, sort, descending, query)
    assert rows == expected and totals == [len(expected)]
    assert [s.queue for s in page] == expected[:PAGE]  # the page's snapshots, read in that order


@pytest.mark.parametrize("sort", ["failed", "waiting", "paused"])
@pytest.mark.parametrize("descending", [False, True])
def test_the_published_order_is_the_order_of_every_queue_read(fleet, user, sort, descending):
    published, page, _ = ordered(user, sort, descending)
    dash_redis.dashboard_redis().delete(state_store.ORDER_KEY)  # now every queue is read to sort
    read, read_page, _ = ordered(user, sort, descending)
    assert read == published
    assert [s.queue for s in read_page] == [s.queue for s in page]
