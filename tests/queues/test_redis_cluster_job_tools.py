"""The job tools and the deduplication keys on a Redis Cluster, on a hash-tagged queue real
Node BullMQ 6.7 fills and works through the cluster: a worker runs the jobs in the changed
priority order, a job failed by hand reads failed, and a released deduplication id (listed by
a SCAN of the one primary owning the queue's slot) lets the next add through."""

from __future__ import annotations

import pytest

from queues.connections import ConnectionSpec
from queues.keys import QueueRef
from queues.redact import Redactor
from queues.sources.factory import source_for
from tests.support.job_tools_node import NodeJobTools

pytestmark = [pytest.mark.cluster, pytest.mark.node, pytest.mark.xdist_group("redis-cluster")]
PREFIX = "{jt}"


@pytest.fixture
def source(redis_cluster):
    made = source_for(ConnectionSpec("cluster", redis_cluster.url, (PREFIX,)))
    yield made
    made.close()


@pytest.fixture
def node(redis_cluster):
    with NodeJobTools(redis_cluster.url, PREFIX) as proc:
        yield proc


def test_job_tools_and_deduplication_keys_on_a_cluster(source, node):
    queue = QueueRef("cluster", PREFIX, "tools")
    ids = node.send("add", queue="tools", jobs=[{"name": f"j{i}", "opts": {"priority": 10}} for i in range(3)])["ids"]
    assert source.job_tools.change_priority(queue, job_id=ids[2], priority=1).outcome == "done"
    assert [o["id"] for o in node.send("run", queue="tools", count=3)["order"]] == [ids[2], ids[0], ids[1]]

    opts = {"deduplication": {"id": "nightly"}}
    owner = node.send("add", queue="tools", jobs=[{"name": "n", "opts": opts}])["ids"][0]
    page = source.dedup.page(queue, cursor="0", redactor=Redactor())
    assert [(k.dedup_id, k.owner) for k in page.keys] == [("nightly", owner)]
    assert source.dedup.release(queue, dedup_id="nightly", owner=owner).outcome == "done"
    fresh = node.send("add", queue="tools", jobs=[{"name": "n", "opts": opts}])["ids"][0]
    assert fresh != owner

    assert source.job_tools.move_to_failed(queue, job_id=fresh, reason="by hand").outcome == "done"
    seen = node.send("job", queue="tools", id=fresh)
    assert (seen["state"], seen["failedReason"]) == ("failed", "by hand")
