"""Connection settings in their final form: ``QUEUEWATCH_URL_<NAME>`` for every connection of
every kind, the ``QUEUEWATCH_REDIS_URL*`` aliases, the error when both name one connection, and
where Queuewatch keeps its own data (``QUEUEWATCH_DASHBOARD_REDIS_URL``)."""

from __future__ import annotations

import os
import runpy
from urllib.parse import urlsplit

import pytest
from django.core.exceptions import ImproperlyConfigured

from queues.connections import connection_specs_from_env, dashboard_redis_url_from_env, url_variables
from queues.errors import ConfigurationError
from queues.sources import factory
from tests.support.servers import ROOT

REDIS = "redis://app:hunter2@cache.example:6379/0"


class ElsewhereKind:
    """A kind that is not a Redis node (as PostgreSQL or Cluster will be): settings only ask
    it whether a URL is well-formed. Its reason quotes the URL, as some parsers do."""

    kind = "elsewhere"
    label = "elsewhere"
    schemes = ("elsewhere",)

    @classmethod
    def check_url(cls, url: str) -> None:
        if not urlsplit(url).path.strip("/"):
            raise ValueError(f"no database in {url}")


@pytest.fixture
def elsewhere_kind(monkeypatch):
    monkeypatch.setattr(factory, "SOURCE_KINDS", (*factory.SOURCE_KINDS, ElsewhereKind))


def specs_of(env, default_url=None):
    return {s.name: s for s in connection_specs_from_env(env, default_url=default_url)}


def test_each_connection_has_a_current_variable_and_an_old_alias():
    assert url_variables("default") == ("QUEUEWATCH_URL_DEFAULT", "QUEUEWATCH_REDIS_URL")
    assert url_variables("billing-eu") == ("QUEUEWATCH_URL_BILLING_EU", "QUEUEWATCH_REDIS_URL_BILLING_EU")


def test_current_names_and_their_file_forms(tmp_path):
    secret = tmp_path / "orders-url"
    secret.write_text("rediss://app:s3cret@orders.example:6380/1\n")
    specs = specs_of(
        {
            "QUEUEWATCH_URL_DEFAULT": REDIS,
            "QUEUEWATCH_CONNECTIONS": "orders,billing-eu",
            "QUEUEWATCH_URL_ORDERS_FILE": str(secret),
            "QUEUEWATCH_URL_BILLING_EU": "redis://billing.example/2",
            "QUEUEWATCH_PREFIXES_BILLING_EU": "{billing}",
        }
    )
    assert list(specs) == ["default", "orders", "billing-eu"]
    assert specs["default"].url == REDIS
    assert specs["orders"].url == "rediss://app:s3cret@orders.example:6380/1"
    assert specs["billing-eu"].prefixes == ("{billing}",)


def test_default_file_form(tmp_path):
    secret = tmp_path / "url"
    secret.write_text(REDIS)
    assert specs_of({"QUEUEWATCH_URL_DEFAULT_FILE": str(secret)})["default"].url == REDIS


def test_old_names_keep_working_beside_new_ones_for_other_connections(tmp_path):
    secret = tmp_path / "url"
    secret.write_text("redis://orders.example/1")
    specs = specs_of(
        {
            "QUEUEWATCH_REDIS_URL": REDIS,
            "QUEUEWATCH_CONNECTIONS": "orders,mail",
            "QUEUEWATCH_REDIS_URL_ORDERS_FILE": str(secret),
            "QUEUEWATCH_URL_MAIL": "redis://mail.example/3",
        }
    )
    assert {n: s.url for n, s in specs.items()} == {
        "default": REDIS,
        "orders": "redis://orders.example/1",
        "mail": "redis://mail.example/3",
    }


@pytest.mark.parametrize("current", ["QUEUEWATCH_URL_DEFAULT", "QUEUEWATCH_URL_DEFAULT_FILE"])
@pytest.mark.parametrize("alias", ["QUEUEWATCH_REDIS_URL", "QUEUEWATCH_REDIS_URL_FILE"])
def test_both_names_for_the_default_connection_stop_start_up_naming_both(tmp_path, current, alias):
    secret = tmp_path / "url"
    secret.write_text(REDIS)
    env = {name: (str(secret) if name.endswith("_FILE") else REDIS) for name in (current, alias)}
    with pytest.raises(ConfigurationError) as caught:
        connection_specs_from_env(env, default_url=None)
    assert str(caught.value) == (
        f"{current} and {alias} both set the URL of connection 'default': "
        f"keep {current} and remove {alias}, its old name."
    )


def test_both_names_for_a_named_connection_stop_start_up_without_showing_the_url():
    env = {
        "QUEUEWATCH_CONNECTIONS": "orders",
        "QUEUEWATCH_URL_ORDERS": REDIS,
        "QUEUEWATCH_REDIS_URL_ORDERS": "redis://other:pw2@x/1",
    }
    with pytest.raises(ConfigurationError) as caught:
        connection_specs_from_env(env, default_url=None)
    message = str(caught.value)
    assert message == (
        "QUEUEWATCH_URL_ORDERS and QUEUEWATCH_REDIS_URL_ORDERS both set the URL of connection "
        "'orders': keep QUEUEWATCH_URL_ORDERS and remove QUEUEWATCH_REDIS_URL_ORDERS, its old name."
    )
    assert "hunter2" not in message and "pw2" not in message


def test_an_empty_alias_is_unset_not_a_conflict():
    # Compose files often pass a variable through empty: that sets nothing.
    assert specs_of({"QUEUEWATCH_URL_DEFAULT": REDIS, "QUEUEWATCH_REDIS_URL": ""})["default"].url == REDIS


def test_the_url_of_a_variable_wins_over_its_file_form(tmp_path):
    secret = tmp_path / "url"
    secret.write_text("redis://from-file/0")
    assert (
        specs_of({"QUEUEWATCH_URL_DEFAULT": REDIS, "QUEUEWATCH_URL_DEFAULT_FILE": str(secret)})["default"].url == REDIS
    )


def test_default_url_applies_only_when_no_variable_sets_the_default():
    assert specs_of({}, default_url="redis://demo/0")["default"].url == "redis://demo/0"
    assert specs_of({"QUEUEWATCH_URL_DEFAULT": REDIS}, default_url="redis://demo/0")["default"].url == REDIS
    assert specs_of({}) == {}


@pytest.mark.parametrize(
    "env, message",
    [
        (
            {"QUEUEWATCH_URL_DEFAULT": "http://x"},
            "QUEUEWATCH_URL_DEFAULT must be a redis://, rediss://, unix://, redis+cluster://, "
            "rediss+cluster://, redis+sentinel://, rediss+sentinel://, "
            "postgres:// or postgresql:// URL (got scheme 'http').",
        ),
        (
            {"QUEUEWATCH_REDIS_URL": "http://x"},
            "QUEUEWATCH_REDIS_URL must be a redis://, rediss://, unix://, redis+cluster://, "
            "rediss+cluster://, redis+sentinel://, rediss+sentinel://, "
            "postgres:// or postgresql:// URL (got scheme 'http').",
        ),
        (
            {"QUEUEWATCH_CONNECTIONS": "orders", "QUEUEWATCH_URL_ORDERS": "redis://h:port/0"},
            "QUEUEWATCH_URL_ORDERS is not a valid Redis URL: Port could not be cast to integer value as 'port'",
        ),
        (
            {"QUEUEWATCH_CONNECTIONS": "orders", "QUEUEWATCH_REDIS_URL_ORDERS": "ftp://h"},
            "QUEUEWATCH_REDIS_URL_ORDERS must be a redis://, rediss://, unix://, redis+cluster://, "
            "rediss+cluster://, redis+sentinel://, rediss+sentinel://, "
            "postgres:// or postgresql:// URL (got scheme 'ftp').",
        ),
        (
            {"QUEUEWATCH_CONNECTIONS": "orders"},
            "Connection 'orders' is declared in QUEUEWATCH_CONNECTIONS but QUEUEWATCH_URL_ORDERS is not set.",
        ),
        (
            {"QUEUEWATCH_URL_ORDRES": REDIS, "QUEUEWATCH_CONNECTIONS": "orders", "QUEUEWATCH_URL_ORDERS": REDIS},
            "QUEUEWATCH_URL_ORDRES is set but no connection declared in QUEUEWATCH_CONNECTIONS reads it: "
            "add the connection's name there, or remove the variable.",
        ),
        (
            {"QUEUEWATCH_URL_MAIL_FILE": "/run/secrets/mail"},
            "QUEUEWATCH_URL_MAIL_FILE is set but no connection declared in QUEUEWATCH_CONNECTIONS reads it: "
            "add the connection's name there, or remove the variable.",
        ),
        (
            {"QUEUEWATCH_CONNECTIONS": "billing-eu,billing_eu"},
            "QUEUEWATCH_CONNECTIONS: connections 'billing-eu' and 'billing_eu' would both be configured by "
            "QUEUEWATCH_URL_BILLING_EU; rename one.",
        ),
        (
            {"QUEUEWATCH_CONNECTIONS": "orders,orders-file"},
            "QUEUEWATCH_CONNECTIONS: connections 'orders' and 'orders-file' would both be configured by "
            "QUEUEWATCH_URL_ORDERS_FILE; rename one.",
        ),
        (
            {"QUEUEWATCH_CONNECTIONS": "file"},
            "QUEUEWATCH_CONNECTIONS: connections 'default' and 'file' would both be configured by "
            "QUEUEWATCH_REDIS_URL_FILE; rename one.",
        ),
        ({"QUEUEWATCH_CONNECTIONS": "orders,Orders"}, "QUEUEWATCH_CONNECTIONS names a connection twice."),
        ({"QUEUEWATCH_CONNECTIONS": "default"}, "QUEUEWATCH_CONNECTIONS: 'default' is not a valid connection name"),
    ],
)
def test_settings_errors_name_the_variable_the_operator_used(env, message):
    with pytest.raises(ConfigurationError) as caught:
        connection_specs_from_env(env, default_url=None)
    assert str(caught.value).startswith(message)


def test_an_empty_stray_variable_is_ignored():
    assert specs_of({"QUEUEWATCH_URL_ORDERS": ""}) == {}


def test_the_default_connection_may_be_any_registered_kind(elsewhere_kind):
    specs = specs_of(
        {
            "QUEUEWATCH_URL_DEFAULT": "elsewhere://db.example/queues",
            "QUEUEWATCH_CONNECTIONS": "cache",
            "QUEUEWATCH_URL_CACHE": REDIS,
        }
    )
    assert [(s.name, s.scheme) for s in specs.values()] == [("default", "elsewhere"), ("cache", "redis")]


def test_a_kinds_reason_that_quotes_the_url_loses_the_password(elsewhere_kind):
    with pytest.raises(ConfigurationError) as caught:
        connection_specs_from_env({"QUEUEWATCH_URL_DEFAULT": "elsewhere://u:p%40ss-w0rd@db.example/"}, default_url=None)
    assert (
        str(caught.value)
        == "QUEUEWATCH_URL_DEFAULT is not a valid elsewhere URL: no database in elsewhere://u:***@db.example/"
    )


# --- Queuewatch's own Redis --------------------------------------------------------------------


def test_dashboard_redis_defaults_to_the_default_connection_when_it_is_a_redis_node():
    specs = connection_specs_from_env(
        {
            "QUEUEWATCH_URL_DEFAULT": REDIS,
            "QUEUEWATCH_CONNECTIONS": "orders",
            "QUEUEWATCH_URL_ORDERS": "redis://orders/1",
        },
        default_url=None,
    )
    assert dashboard_redis_url_from_env({}, specs) == REDIS


@pytest.mark.parametrize("url", ["unix:///run/redis.sock", "rediss://h:6380/0"])
def test_every_redis_node_scheme_can_hold_the_dashboards_data(url):
    assert dashboard_redis_url_from_env({}, connection_specs_from_env({"QUEUEWATCH_URL_DEFAULT": url}, None)) == url


def test_dashboard_redis_defaults_to_the_first_redis_node_when_the_default_is_another_kind(elsewhere_kind):
    specs = connection_specs_from_env(
        {
            "QUEUEWATCH_URL_DEFAULT": "elsewhere://db/q",
            "QUEUEWATCH_CONNECTIONS": "a,b,c",
            "QUEUEWATCH_URL_A": "elsewhere://db/a",
            "QUEUEWATCH_URL_B": "redis://b/1",
            "QUEUEWATCH_URL_C": "redis://c/1",
        },
        default_url=None,
    )
    assert dashboard_redis_url_from_env({}, specs) == "redis://b/1"


def test_dashboard_redis_is_required_when_no_connection_is_a_redis_node(elsewhere_kind):
    specs = connection_specs_from_env({"QUEUEWATCH_URL_DEFAULT": "elsewhere://u:hunter2@db/q"}, default_url=None)
    with pytest.raises(ConfigurationError) as caught:
        dashboard_redis_url_from_env({}, specs)
    assert str(caught.value) == (
        "QUEUEWATCH_DASHBOARD_REDIS_URL is not set, and no connection is a Redis node (redis://, rediss://, "
        "unix://) that Queuewatch could keep its own data in (live updates, the monitor's leader lock, "
        "caches): set QUEUEWATCH_DASHBOARD_REDIS_URL to a Redis for it."
    )
    assert dashboard_redis_url_from_env({"QUEUEWATCH_DASHBOARD_REDIS_URL": "redis://mine/2"}, specs) == "redis://mine/2"


def test_dashboard_redis_set_explicitly_wins_and_has_a_file_form(tmp_path):
    specs = connection_specs_from_env({"QUEUEWATCH_URL_DEFAULT": REDIS}, default_url=None)
    assert dashboard_redis_url_from_env({"QUEUEWATCH_DASHBOARD_REDIS_URL": "redis://mine/2"}, specs) == "redis://mine/2"
    secret = tmp_path / "url"
    secret.write_text("redis://:pw@mine/3\n")
    assert (
        dashboard_redis_url_from_env({"QUEUEWATCH_DASHBOARD_REDIS_URL_FILE": str(secret)}, specs)
        == "redis://:pw@mine/3"
    )


def test_dashboard_redis_must_be_a_redis_node(elsewhere_kind):
    with pytest.raises(ConfigurationError) as caught:
        dashboard_redis_url_from_env({"QUEUEWATCH_DASHBOARD_REDIS_URL": "elsewhere://u:hunter2@db/q"}, [])
    assert str(caught.value) == (
        "QUEUEWATCH_DASHBOARD_REDIS_URL must be a redis://, rediss://, unix://, redis+sentinel:// or "
        "rediss+sentinel:// URL (got scheme 'elsewhere')."
    )


def test_dashboard_redis_may_be_a_primary_behind_sentinel_but_never_a_cluster():
    sentinel = "redis+sentinel://:pw@10.0.0.1:26379,10.0.0.2:26379/dash/2?sentinel_password=sp"
    assert dashboard_redis_url_from_env({"QUEUEWATCH_DASHBOARD_REDIS_URL": sentinel}, []) == sentinel
    with pytest.raises(ConfigurationError) as caught:
        dashboard_redis_url_from_env({"QUEUEWATCH_DASHBOARD_REDIS_URL": "redis+cluster://u:hunter2@h1:7000"}, [])
    message = str(caught.value)
    assert message.startswith("QUEUEWATCH_DASHBOARD_REDIS_URL cannot be a Redis Cluster:")
    assert "redis+sentinel://" in message and "hunter2" not in message


def test_nothing_monitored_needs_no_dashboard_redis():
    assert dashboard_redis_url_from_env({}, []) is None


# --- The Django settings module applies these rules at start-up --------------------------------


def load_settings(monkeypatch, env: dict[str, str]) -> dict:
    """Run dashboard/settings.py afresh over ``env`` (the test settings already loaded stay
    as they are)."""
    for var in [v for v in os.environ if v.startswith("QUEUEWATCH_") and v != "QUEUEWATCH_INSECURE_DEV"]:
        monkeypatch.delenv(var)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    return runpy.run_path(str(ROOT / "dashboard" / "settings.py"))


def test_settings_start_with_the_current_names(monkeypatch):
    loaded = load_settings(monkeypatch, {"QUEUEWATCH_URL_DEFAULT": REDIS})
    assert [s.url for s in loaded["QUEUEWATCH_CONNECTIONS"]] == [REDIS]
    assert loaded["QUEUEWATCH_DASHBOARD_REDIS_URL"] == REDIS
    assert loaded["CHANNEL_LAYERS"]["default"]["CONFIG"]["hosts"][0]["address"] == REDIS


def test_settings_put_the_channel_layer_behind_sentinel_for_a_sentinel_dashboard_redis(monkeypatch):
    sentinel = "redis+sentinel://:pw@10.0.0.1:26380,10.0.0.2/dash/2?sentinel_password=sp"
    loaded = load_settings(monkeypatch, {"QUEUEWATCH_URL_DEFAULT": REDIS, "QUEUEWATCH_DASHBOARD_REDIS_URL": sentinel})
    [host] = loaded["CHANNEL_LAYERS"]["default"]["CONFIG"]["hosts"]
    assert host == {
        "sentinels": [("10.0.0.1", 26380), ("10.0.0.2", 26379)],
        "master_name": "dash",
        "sentinel_kwargs": {"password": "sp", "socket_timeout": 5.0, "socket_connect_timeout": 2.0},
        "db": 2,
        "password": "pw",
        "socket_timeout": None,
    }


def test_settings_refuse_to_start_with_both_names_set(monkeypatch):
    with pytest.raises(ImproperlyConfigured, match="keep QUEUEWATCH_URL_DEFAULT and remove QUEUEWATCH_REDIS_URL"):
        load_settings(monkeypatch, {"QUEUEWATCH_URL_DEFAULT": REDIS, "QUEUEWATCH_REDIS_URL": REDIS})


def test_settings_refuse_to_start_without_a_redis_for_the_dashboard(monkeypatch, elsewhere_kind):
    with pytest.raises(ImproperlyConfigured, match="^QUEUEWATCH_DASHBOARD_REDIS_URL is not set, and no connection"):
        load_settings(monkeypatch, {"QUEUEWATCH_URL_DEFAULT": "elsewhere://db/q"})
    loaded = load_settings(
        monkeypatch, {"QUEUEWATCH_URL_DEFAULT": "elsewhere://db/q", "QUEUEWATCH_DASHBOARD_REDIS_URL": "redis://mine/2"}
    )
    assert loaded["QUEUEWATCH_DASHBOARD_REDIS_URL"] == "redis://mine/2"


def test_settings_with_nothing_monitored_keep_live_updates_in_memory(monkeypatch):
    loaded = load_settings(monkeypatch, {})
    assert loaded["QUEUEWATCH_DASHBOARD_REDIS_URL"] is None
    assert loaded["CHANNEL_LAYERS"]["default"]["BACKEND"] == "channels.layers.InMemoryChannelLayer"
