"""The ``redis+cluster://`` URL: seed nodes, TLS, the password never shown, and a malformed URL
refused while settings load. No cluster needed."""

from __future__ import annotations

import pytest

from queues.connections import ConnectionSpec, connection_specs_from_env
from queues.errors import ConfigurationError, SourceUnavailable
from queues.keys import QueueRef
from queues.redis.snapshot import plan_transactions, queue_slot, read_keys
from queues.sources.factory import source_for
from queues.sources.redis_cluster import RedisClusterSource, parse_cluster_url
from queues.sources.spec import redact_url
from tests.support.servers import refused_port


def test_seed_nodes_credentials_and_tls_are_parsed():
    options = parse_cluster_url(
        "rediss+cluster://ops:p%40ss:w@10.0.0.1:7000,10.0.0.2:7001,[::1]:7002,cache?ssl_cert_reqs=none"
    )
    assert [(n.host, n.port) for n in options["startup_nodes"]] == [
        ("10.0.0.1", 7000),
        ("10.0.0.2", 7001),
        ("::1", 7002),
        ("cache", 6379),
    ]
    assert (options["username"], options["password"], options["ssl"]) == ("ops", "p@ss:w", True)
    assert options["ssl_cert_reqs"] == "none"
    assert parse_cluster_url("redis+cluster://h:1/")["ssl"] is False


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("redis+cluster://h:1,,h:2", "an empty host"),
        ("redis+cluster://h:port", "a node port must be a number"),
        ("redis+cluster://h:1/3", "only database 0"),
        ("redis+cluster://h:1?timeout=3", "unsupported parameter 'timeout'"),
        ("redis+cluster://h:1?ssl_cert_reqs=none", "unsupported parameter 'ssl_cert_reqs'"),
        ("rediss+cluster://h:1?ssl_cert_reqs=maybe", "ssl_cert_reqs must be one of"),
    ],
)
def test_a_malformed_url_is_a_configuration_error_that_hides_the_password(url, reason):
    url = url.replace("://", "://u:s3cret@", 1)
    with pytest.raises(ConfigurationError) as raised:
        connection_specs_from_env({"QUEUEWATCH_REDIS_URL": url}, default_url=None)
    assert reason in str(raised.value) and "s3cret" not in str(raised.value)
    assert "not a valid Redis Cluster URL" in str(raised.value)


def test_the_settings_accept_a_cluster_url():
    specs = connection_specs_from_env(
        {"QUEUEWATCH_REDIS_URL": "redis+cluster://127.0.0.1:7000,127.0.0.1:7001"}, default_url=None
    )
    assert [s.scheme for s in specs] == ["redis+cluster"]


def test_the_password_of_a_multi_host_url_is_never_shown():
    url = "redis+cluster://admin:pa:ss@w0rd@h1:7000,h2:7001,h3:7002/?password=other"
    shown = redact_url(url)
    assert shown == "redis+cluster://admin:***@h1:7000,h2:7001,h3:7002/?password=***"
    assert ConnectionSpec("shop", url).display_url == shown


def test_built_without_connecting_and_an_unreachable_cluster_is_unavailable():
    spec = ConnectionSpec("shop", f"redis+cluster://u:s3cret@127.0.0.1:{refused_port()}")
    source = source_for(spec, socket_timeout=1)  # nothing listens: building must not fail
    assert isinstance(source, RedisClusterSource)
    with pytest.raises(SourceUnavailable) as raised, source.errors():
        source.discover()
    assert "shop" in str(raised.value) and "s3cret" not in str(raised.value)
    with pytest.raises(SourceUnavailable):  # the jobs facet translates its own failures
        source.jobs.exists(QueueRef("shop", "bull", "{q1}"), "1")


def test_the_per_node_snapshot_plans_no_transaction_spanning_slots():
    queues = [QueueRef("c", "bull", f"{{q{i}}}") for i in range(600)] + [
        QueueRef("c", "{app}", f"q{i}") for i in range(300)
    ]
    plan = plan_transactions(queues, per_slot=True)
    assert sum(len(t.queues) for t in plan) == len(queues)
    for transaction in plan:
        assert transaction.atomic
        assert len({queue_slot(q) for q in transaction.queues}) == 1
        assert len({slot for q in transaction.queues for slot in map(_slot, read_keys(q))}) == 1
    # The 300 queues under the one hash-tagged prefix share a slot: two transactions of 250 and 50.
    app = [t for t in plan if t.queues[0].prefix == "{app}"]
    assert [len(t.queues) for t in app] == [250, 50]


def _slot(key: bytes) -> int:
    from redis.crc import key_slot

    return key_slot(key)
