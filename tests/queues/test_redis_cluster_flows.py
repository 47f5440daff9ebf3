"""Flows on a Redis Cluster: a flow real Node BullMQ 6.7 built across three queues under one
hash-tagged prefix (tests/node/flow_tree.mjs through ioredis' Cluster) read as a tree through the
Cluster kind's jobs facet, equal to what ``getFlow()`` gave, and a child taken off its parent's
dependencies through its commands facet, the parent then run by a Node worker."""

from __future__ import annotations

import pytest

from queues.connections import ConnectionSpec
from queues.flows import FlowLimits
from queues.keys import QueueRef
from queues.redact import Redactor
from queues.sources.factory import source_for
from tests.support.servers import run_node

pytestmark = [pytest.mark.cluster, pytest.mark.node, pytest.mark.xdist_group("redis-cluster")]

PREFIX = "{flows}"


def test_a_flow_across_queues_reads_and_changes_on_a_cluster(redis_cluster):
    built = run_node("flow_tree.mjs", redis_cluster.url, "build", prefix=PREFIX)
    source = source_for(ConnectionSpec("cluster", redis_cluster.url, (PREFIX,)))
    try:
        later = QueueRef("cluster", PREFIX, "flow-later")
        tree = source.jobs.flow(later, "g-later", limits=FlowLimits(), from_root=True, redactor=Redactor())
        assert {n.key: n.state for n in tree.nodes()} == {n["key"]: n["state"] for n in built["flow"]}

        result = source.commands.remove_child_dependency(later, job_id="k2-later")
        assert result.ok, result.message
        ran = run_node("flow_tree.mjs", redis_cluster.url, "work-top", "order-2", prefix=PREFIX)
        assert ran == {"state": "completed", "returnvalue": {"shipped": "order-2"}}
    finally:
        source.close()
