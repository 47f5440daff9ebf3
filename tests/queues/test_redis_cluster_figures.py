"""The figures facet on a Redis Cluster: jobs per priority, maxed, the rate-limit window and
BullMQ's own metrics of hash-tagged queues real Node BullMQ 6.7 wrote through ioredis' Cluster
client, equal to what Node's Queue reports."""

from __future__ import annotations

import pytest

from queues.connections import ConnectionSpec
from queues.keys import QueueRef
from queues.sources.factory import source_for
from tests.support.servers import node_available, run_node

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.node,
    pytest.mark.xdist_group("redis-cluster"),
    pytest.mark.skipif(not node_available(), reason="needs Node.js and npm"),
]

PREFIX = "{figs}"


@pytest.fixture
def source(redis_cluster):
    source = source_for(ConnectionSpec("cluster", redis_cluster.url, (PREFIX,)))
    yield source
    source.close()


def test_figures_on_a_cluster_equal_node(redis_cluster, source):
    truth = run_node("figures.mjs", redis_cluster.url, "prio", "priorities", prefix=PREFIX)
    got = source.figures.figures(QueueRef("cluster", PREFIX, "prio"))
    assert {str(p): n for p, n in got.per_priority} == {p: n for p, n in truth["counts"].items() if n}
    assert got.active == truth["active"] == 2 and got.concurrency == truth["concurrency"] and got.maxed
    assert (got.rate_max, got.rate_duration_ms) == (5, 60_000)
    assert got.window_count == truth["limiter"] and 0 < got.window_left_ms <= 60_000


def test_bullmq_metrics_on_a_cluster_equal_get_metrics(redis_cluster, source):
    truth = run_node("figures.mjs", redis_cluster.url, "measured", "metrics", prefix=PREFIX, timeout=120)
    for kind in ("completed", "failed"):
        got = source.figures.metrics(QueueRef("cluster", PREFIX, "measured"), kind=kind, points=100)
        assert list(got.data) == truth[kind]["data"]
        assert (got.count, got.prev_ts, got.prev_count, got.points) == (
            truth[kind]["meta"]["count"],
            truth[kind]["meta"]["prevTS"],
            truth[kind]["meta"]["prevCount"],
            truth[kind]["count"],
        )
