"""Queues real Node BullMQ 6.7 builds on the test Redis Cluster (tests/node/cluster_fixture.mjs),
and what the monitor published of them: shared by the cluster test modules."""

from __future__ import annotations

from dashboard.core import dash_redis, state_store
from queues.keys import QueueRef
from tests.support.servers import run_node

PREFIXES = ("bull", "{app}")
NAME = "cluster"


def seeds(cluster) -> str:
    return cluster.url.split("://", 1)[1]


def build_queues(cluster) -> dict[QueueRef, dict]:
    """Empty the cluster, build the fixture's queues; each with what ``getJobCounts()`` said."""
    cluster.flush()
    out = run_node("cluster_fixture.mjs", seeds(cluster))
    return {QueueRef(NAME, q["prefix"], q["name"]): q["counts"] for q in out["queues"]}


def node_does(cluster, verb: str, queue: QueueRef, n: int) -> dict:
    """``add`` n jobs to ``queue`` or ``work`` n of them through Node; its counts after."""
    return run_node("cluster_fixture.mjs", seeds(cluster), verb, queue.prefix, queue.name, str(n))["counts"]


def node_sees(cluster, queue: QueueRef) -> dict:
    """What Node says of ``queue`` now: ``{"counts": getJobCounts(), "paused": isPaused(),
    "schedulers": [{"id", "every"}]}``."""
    return run_node("cluster_fixture.mjs", seeds(cluster), "add", queue.prefix, queue.name, "0")


def node_schedules(cluster, queue: QueueRef, scheduler_id: str, every_ms: int) -> dict:
    """Node upserts a job scheduler on ``queue``; what it says then (as ``node_sees``)."""
    return run_node(
        "cluster_fixture.mjs", seeds(cluster), "schedule", queue.prefix, queue.name, scheduler_id, str(every_ms)
    )


def published_counts() -> dict[tuple[str, str], dict]:
    state = state_store.read_state(dash_redis.dashboard_redis()) or {"queues": []}
    return {(q["prefix"], q["name"]): q["counts"] for q in state["queues"]}
