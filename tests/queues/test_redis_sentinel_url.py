"""The ``redis+sentinel://`` URL: Sentinels, master name, database, whose credentials are whose,
TLS, the passwords never shown, and a malformed URL refused while settings load. No Sentinel
needed (tests/queues/test_redis_sentinel_bullmq.py runs the kind against real ones)."""

from __future__ import annotations

import pytest

from queues.connections import ConnectionSpec, connection_specs_from_env
from queues.errors import ConfigurationError, SourceUnavailable
from queues.keys import QueueRef
from queues.sources.factory import is_redis_node, source_for
from queues.sources.redis_sentinel import RedisSentinelSource, parse_sentinel_url
from queues.sources.spec import redact_url
from tests.support.servers import refused_port


def test_sentinels_master_database_and_whose_credentials():
    options = parse_sentinel_url(
        "redis+sentinel://app:p%40ss:w@10.0.0.1:26380,sentinel-b,[::1]:26381/orders-main/3"
        "?sentinel_password=s%26nt&sentinel_username=watch"
    )
    assert options["sentinels"] == [("10.0.0.1", 26380), ("sentinel-b", 26379), ("::1", 26381)]
    assert (options["master_name"], options["db"]) == ("orders-main", 3)
    # The URL's user information is the primary's; the Sentinels' own come from the query.
    assert options["primary"] == {"username": "app", "password": "p@ss:w"}
    assert options["sentinel"] == {"username": "watch", "password": "s&nt"}
    plain = parse_sentinel_url("redis+sentinel://h/mymaster")
    assert (plain["db"], plain["primary"], plain["sentinel"]) == (0, {}, {})


def test_tls_reaches_the_sentinels_and_the_primary():
    options = parse_sentinel_url("rediss+sentinel://h:1/m?ssl_cert_reqs=none&ssl_ca_certs=/etc/ca.pem")
    for side in (options["primary"], options["sentinel"]):
        assert side == {"ssl": True, "ssl_cert_reqs": "none", "ssl_ca_certs": "/etc/ca.pem"}


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("redis+sentinel://h:1", "must name the master"),
        ("redis+sentinel://h:1/", "must name the master"),
        ("redis+sentinel://h:1/m/x", "database after the master name must be a number"),
        ("redis+sentinel://h:1/m/0/1", "/<master-name>[/<db>]"),
        ("redis+sentinel://h:1,,h:2/m", "an empty host"),
        ("redis+sentinel://h:port/m", "a node port must be a number"),
        ("redis+sentinel://h:1/m?timeout=3", "unsupported parameter 'timeout'"),
        ("redis+sentinel://h:1/m?ssl_cert_reqs=none", "unsupported parameter 'ssl_cert_reqs'"),
        ("rediss+sentinel://h:1/m?ssl_cert_reqs=maybe", "ssl_cert_reqs must be one of"),
    ],
)
def test_a_malformed_url_is_a_configuration_error_that_hides_the_passwords(url, reason):
    url = url.replace("://", "://u:s3cret@", 1) + ("&" if "?" in url else "?") + "sentinel_password=t0psecret"
    with pytest.raises(ConfigurationError) as raised:
        connection_specs_from_env({"QUEUEWATCH_URL_DEFAULT": url}, default_url=None)
    message = str(raised.value)
    assert reason in message and "not a valid Redis Sentinel URL" in message
    assert "s3cret" not in message and "t0psecret" not in message


def test_the_settings_accept_a_sentinel_url_which_is_not_a_node_for_queuewatchs_own_data():
    specs = connection_specs_from_env(
        {"QUEUEWATCH_URL_DEFAULT": "redis+sentinel://127.0.0.1:26379,127.0.0.1:26380/mymaster"}, default_url=None
    )
    assert [s.scheme for s in specs] == ["redis+sentinel"]
    assert not is_redis_node(specs[0])


def test_both_passwords_are_never_shown():
    url = "rediss+sentinel://app:pa:ss@w0rd@h1:26379,h2:26380/mymaster/2?sentinel_password=s%40nt&ssl_cert_reqs=none"
    shown = redact_url(url)
    assert shown == "rediss+sentinel://app:***@h1:26379,h2:26380/mymaster/2?sentinel_password=***&ssl_cert_reqs=none"
    assert ConnectionSpec("shop", url).display_url == shown
    assert "w0rd" not in repr(ConnectionSpec("shop", url))


def test_built_without_connecting_and_unreachable_sentinels_are_unavailable():
    spec = ConnectionSpec("shop", f"redis+sentinel://u:s3cret@127.0.0.1:{refused_port()}/mymaster")
    source = source_for(spec, socket_timeout=1)  # nothing listens: building must not fail
    assert isinstance(source, RedisSentinelSource) and source.kind == "redis-sentinel"
    with pytest.raises(SourceUnavailable) as raised, source.errors():
        source.discover()
    assert "shop" in str(raised.value) and "s3cret" not in str(raised.value)
    assert "no Sentinel names a reachable primary" in str(raised.value)
    with pytest.raises(SourceUnavailable):  # the facets translate their own failures
        source.jobs.exists(QueueRef("shop", "bull", "q"), "1")
    with pytest.raises(SourceUnavailable), source.errors():
        source.events_follower(block_ms=100)
    source.close()
