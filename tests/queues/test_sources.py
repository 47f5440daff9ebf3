"""The connection layer: the factory's configuration errors, and the Redis node source doing
each thing the ``Source`` interface promises against a real redis-server."""
# Literal `bull:` keys kept: a source over two prefixes, one a hash tag ('{app}'), discovered on a whole database.

from __future__ import annotations

import pytest

from queues.connections import ConnectionSpec, connection_specs_from_env
from queues.errors import ConfigurationError, SourceUnavailable
from queues.keys import QueueRef
from queues.sources import Source, source_for
from queues.sources.facets import FACETS
from queues.sources.factory import SOURCE_KINDS, known_schemes
from queues.sources.redis_node import RedisNodeSource
from tests.support.servers import refused_port


@pytest.mark.parametrize(
    "var, env",
    [
        ("QUEUEWATCH_REDIS_URL", {"QUEUEWATCH_REDIS_URL": "amqp://db.example/queues"}),
        (
            "QUEUEWATCH_REDIS_URL_ORDERS",
            {"QUEUEWATCH_CONNECTIONS": "orders", "QUEUEWATCH_REDIS_URL_ORDERS": "amqp://u:hunter2@db.example/q"},
        ),
    ],
)
def test_unknown_scheme_is_a_configuration_error_naming_the_variable_and_the_known_schemes(var, env):
    with pytest.raises(ConfigurationError) as caught:
        connection_specs_from_env(env, default_url=None)
    message = str(caught.value)
    schemes = (
        "redis://, rediss://, unix://, redis+cluster://, rediss+cluster://, redis+sentinel://, "
        "rediss+sentinel://, postgres:// or postgresql://"
    )
    assert message == f"{var} must be a {schemes} URL (got scheme 'amqp')."
    assert "hunter2" not in message


def test_a_spec_built_in_code_with_an_unknown_scheme_fails_in_the_factory():
    with pytest.raises(ConfigurationError, match=r"Connection 'ledger' must be a redis://.* \(got scheme 'amqp'\)"):
        source_for(ConnectionSpec("ledger", "amqp://mq.example/"))


def test_malformed_url_of_a_known_kind_is_reported_by_that_kind():
    with pytest.raises(ConfigurationError, match="QUEUEWATCH_REDIS_URL is not a valid Redis URL: Port"):
        connection_specs_from_env({"QUEUEWATCH_REDIS_URL": "redis://cache:notaport/0"}, default_url=None)


def test_each_scheme_belongs_to_one_kind():
    schemes = known_schemes()
    assert len(schemes) == len(set(schemes))
    assert {"redis", "rediss", "unix"} <= set(schemes) and RedisNodeSource in SOURCE_KINDS


@pytest.mark.parametrize("url", ["redis://127.0.0.1:1/0", "rediss://127.0.0.1:1/0", "unix:///tmp/redis.sock"])
def test_redis_schemes_build_a_redis_node_source_without_connecting(url):
    source = source_for(ConnectionSpec("default", url))  # nothing listens there: building must not connect
    assert isinstance(source, RedisNodeSource) and isinstance(source, Source)
    assert source.spec.name == "default"


@pytest.fixture
def node_source(redis_url, redis_client):
    """A Redis node source on the (emptied) scratch database, prefixes 'bull' and '{app}'."""
    source = source_for(ConnectionSpec("default", redis_url, ("bull", "{app}")))
    yield source
    source.close()


def add_waiting_job(client, prefix: str, queue: str, job_id: str, ts: int) -> None:
    client.hset(f"{prefix}:{queue}:meta", "opts.maxLenEvents", "10000")
    client.hset(f"{prefix}:{queue}:{job_id}", mapping={"name": "j", "data": "{}", "timestamp": ts})
    client.lpush(f"{prefix}:{queue}:wait", job_id)


def test_redis_node_source_discovers_every_prefix_in_order(node_source, redis_client):
    add_waiting_job(redis_client, "bull", "b-queue", "1", 1_000)
    add_waiting_job(redis_client, "bull", "a-queue", "1", 1_000)
    add_waiting_job(redis_client, "{app}", "mail", "1", 1_000)
    assert node_source.discover() == [
        QueueRef("default", "bull", "a-queue"),
        QueueRef("default", "bull", "b-queue"),
        QueueRef("default", "{app}", "mail"),
    ]


def test_redis_node_source_snapshot_counts_and_newest_event(node_source, redis_client):
    add_waiting_job(redis_client, "bull", "orders", "1", 1_000)
    add_waiting_job(redis_client, "bull", "orders", "2", 2_000)
    newest = redis_client.xadd("bull:orders:events", {"event": "waiting", "jobId": "2"}).decode()
    (snap,) = node_source.snapshots([QueueRef("default", "bull", "orders")])
    assert snap.counts["waiting"] == 2 and snap.oldest_waiting_ts == 1_000
    assert snap.last_event_id == newest


def test_redis_node_source_follower_reads_new_events_on_its_own_connection(node_source, redis_client):
    queue = QueueRef("default", "bull", "orders")
    follower = node_source.events_follower(block_ms=200)
    assert follower.client is not node_source._client  # XREAD BLOCK must not hold a pooled page connection
    assert follower.follow([queue]) == [queue]
    redis_client.xadd("bull:orders:events", {"event": "completed", "jobId": "7"})
    events, gaps = follower.read(block_ms=1000)
    assert [(e.queue, e.name, e.job_id) for e in events] == [(queue, "completed", "7")] and not gaps
    follower.client.close()


def test_redis_node_source_offers_every_facet_on_its_own_client(node_source):
    for facet in FACETS:
        assert getattr(node_source, facet).client is node_source._client, facet


def test_unreachable_redis_follower_raises_and_errors_name_the_connection_not_the_password():
    source = source_for(ConnectionSpec("billing", f"redis://:hunter2@127.0.0.1:{refused_port()}/0"), socket_timeout=1)
    with pytest.raises(SourceUnavailable) as caught, source.errors():
        source.discover()
    assert caught.value.connection == "billing" and "hunter2" not in str(caught.value)
    with pytest.raises(SourceUnavailable), source.errors():
        source.events_follower(block_ms=100)
