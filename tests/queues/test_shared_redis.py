"""The dashboard Redis shares a server with a monitored connection when their URLs, parsed, name
the same host, port and database (a unix socket: path and database), whatever the spelling; a
Cluster by its seed nodes, Sentinels by their hosts, master and database."""

from __future__ import annotations

import pytest

from queues.connections import connection_specs_from_env, dashboard_redis_url_from_env
from queues.shared_redis import connections_sharing
from queues.sources import ConnectionSpec


def specs(**urls: str) -> list[ConnectionSpec]:
    return [ConnectionSpec(name, url, ("bull",)) for name, url in urls.items()]


@pytest.mark.parametrize(
    ("dashboard", "monitored"),
    [
        ("redis://cache.internal:6379/0", "redis://cache.internal"),
        ("redis://:pw@CACHE.internal/2", "rediss://user:other@cache.internal:6379/2"),
        ("redis://localhost:7000", "redis://127.0.0.1:7000/0"),
        ("redis://h/3", "redis://h?db=3"),
        ("unix:///run/redis.sock", "unix:///run/redis.sock?db=0"),
        ("redis://n2:7001/0", "redis+cluster://:pw@n1:7000,n2:7001"),
        ("redis+sentinel://s1:26379,s2/dash/1", "redis+sentinel://s2:26379/dash/1"),
    ],
)
def test_the_same_server_spelled_differently_is_shared(dashboard, monitored):
    assert connections_sharing(dashboard, specs(default=monitored)) == ["default"]


@pytest.mark.parametrize(
    ("dashboard", "monitored"),
    [
        ("redis://cache.internal:6379/0", "redis://queues.internal:6379/0"),
        ("redis://h:6379/0", "redis://h:6380/0"),
        ("redis://h/1", "redis://h/0"),
        ("unix:///run/dash.sock", "unix:///run/redis.sock"),
        ("unix:///run/redis.sock", "redis://localhost"),
        ("redis://n1:7000/1", "redis+cluster://n1:7000"),
        ("redis+sentinel://s1/dash/0", "redis+sentinel://s1/orders/0"),
        ("redis://h/0", "postgresql://h/queues"),
    ],
)
def test_different_servers_or_databases_are_not(dashboard, monitored):
    assert connections_sharing(dashboard, specs(default=monitored)) == []


def test_the_default_fallback_shares_with_every_connection_on_that_server():
    env = {
        "QUEUEWATCH_URL_DEFAULT": "redis://queues.internal:6379/0",
        "QUEUEWATCH_CONNECTIONS": "orders,billing",
        "QUEUEWATCH_URL_ORDERS": "redis://QUEUES.internal/0",
        "QUEUEWATCH_URL_BILLING": "redis://billing.internal/0",
    }
    monitored = connection_specs_from_env(env, None)
    assert connections_sharing(dashboard_redis_url_from_env(env, monitored), monitored) == ["default", "orders"]
    own = {**env, "QUEUEWATCH_DASHBOARD_REDIS_URL": "redis://dash.internal/0"}
    assert connections_sharing(dashboard_redis_url_from_env(own, monitored), monitored) == []
    assert connections_sharing(None, []) == []
