"""The test Redis Cluster is a real one: every node agrees the cluster is up, writes are routed
to the primary owning the slot, and its URL lists every node."""

from __future__ import annotations

import contextlib

import pytest

# One worker holds the session's cluster (6 processes): every cluster test runs there.
pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("redis-cluster")]


def test_the_cluster_is_up_with_three_primaries(redis_cluster):
    with contextlib.closing(redis_cluster.client()) as client:
        primaries = client.get_primaries()
        assert len(primaries) == 3
        for name in ("{q1}", "{q2}", "{q3}"):
            client.set(f"probe:{name}:x", b"1")
            assert client.get(f"probe:{name}:x") == b"1"
            client.delete(f"probe:{name}:x")
    roles = []
    for port in redis_cluster.ports:
        assert port != 6379
        with contextlib.closing(redis_cluster.node_client(port)) as node:
            assert b"cluster_state:ok" in node.execute_command("CLUSTER", "INFO")
            roles.append(node.info("replication")["role"])
    assert sorted(roles) == ["master"] * 3 + ["slave"] * 3
    assert redis_cluster.url == "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in redis_cluster.ports)
