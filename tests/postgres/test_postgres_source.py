"""The ``postgres://`` connection kind itself: its URLs in the settings, the schema as its prefix,
passwords never shown, and an unreachable server reported quickly as unavailable."""

from __future__ import annotations

import time

import psycopg
import pytest

from queues.connections import connection_specs_from_env
from queues.errors import ConfigurationError, SourceUnavailable
from queues.keys import QueueRef
from queues.sources import ConnectionSpec, redact_url, source_for
from queues.sources.factory import kind_for_scheme
from queues.sources.postgres import PostgresSource
from tests.support.servers import refused_port

PG = "postgres://reader:s3cret-pw@db.example:5432/app"


def specs(**env):
    return connection_specs_from_env({"QUEUEWATCH_CONNECTIONS": "pg", **env}, "redis://127.0.0.1:1/0")


@pytest.mark.parametrize("scheme", ["postgres", "postgresql"])
def test_both_schemes_are_served_by_the_postgres_kind(scheme):
    assert kind_for_scheme(scheme) is PostgresSource
    (_, pg) = specs(QUEUEWATCH_URL_PG=f"{scheme}://u:p@h/db")
    assert isinstance(source_for(pg), PostgresSource)  # built without connecting


def test_the_schema_parameter_is_the_default_prefix_and_bullmq_without_it():
    assert specs(QUEUEWATCH_URL_PG=PG)[1].prefixes == ("bullmq",)
    assert specs(QUEUEWATCH_URL_PG=PG + "?schema=jobs_eu&sslmode=prefer")[1].prefixes == ("jobs_eu",)
    listed = specs(QUEUEWATCH_URL_PG=PG + "?schema=jobs_eu", QUEUEWATCH_PREFIXES_PG="bullmq, Tenant B")
    assert listed[1].prefixes == ("bullmq", "Tenant B")
    assert specs(QUEUEWATCH_URL_PG=PG)[0].prefixes == ("bull",)  # a Redis connection keeps BullMQ's key prefix


@pytest.mark.parametrize(
    "query, reason",
    [
        ("?schema=a&schema=b", "more than once"),
        ("?schema=", "empty"),
        ("?colour=blue", 'invalid URI query parameter: "colour"'),  # libpq's own reason
        ("?schema=" + "x" * 64, "not a PostgreSQL schema name"),
    ],
)
def test_a_malformed_url_fails_at_start_up_naming_the_variable_not_the_password(query, reason):
    with pytest.raises(ConfigurationError) as failed:
        specs(QUEUEWATCH_URL_PG=PG + query)
    message = str(failed.value)
    assert "QUEUEWATCH_URL_PG is not a valid PostgreSQL URL" in message and reason in message
    assert "s3cret-pw" not in message


@pytest.mark.parametrize(
    "url, shown",
    [
        (PG + "?schema=bullmq", "postgres://reader:***@db.example:5432/app?schema=bullmq"),
        ("postgresql://u:p%40ss@h1:1,h2:2/db", "postgresql://u:***@h1:1,h2:2/db"),
        ("postgres://h/db?user=u&password=pw&sslpassword=key", "postgres://h/db?user=u&password=***&sslpassword=***"),
    ],
)
def test_redact_url_hides_postgres_passwords(url, shown):
    assert redact_url(url) == shown
    assert ConnectionSpec("pg", url, ("bullmq",)).display_url == shown


def test_an_unreachable_server_is_unavailable_within_seconds_and_the_password_is_not_said():
    source = source_for(ConnectionSpec("pg", f"postgres://u:s3cret-pw@127.0.0.1:{refused_port()}/db", ("bullmq",)))
    started = time.monotonic()
    with pytest.raises(SourceUnavailable) as failed, source.errors():
        source.discover()
    assert time.monotonic() - started < 3
    assert failed.value.connection == "pg" and "s3cret-pw" not in str(failed.value)


@pytest.mark.postgres
def test_a_schema_bullmq_never_migrated_holds_no_queue(postgres_db):
    source = source_for(ConnectionSpec("pg", postgres_db.url, ("bullmq",)))
    try:
        assert source.discover() == []
        assert source.queue_exists(QueueRef("pg", "bullmq", "orders")) is False
        (snap,) = source.snapshots([QueueRef("pg", "bullmq", "orders")])
        assert snap.total == 0 and snap.paused is False
    finally:
        source.close()


@pytest.mark.postgres
def test_reads_run_in_a_read_only_session(postgres_db):
    with psycopg.connect(postgres_db.url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA bullmq; CREATE TABLE bullmq.job (queue text, id text)")
        conn.execute("CREATE TABLE bullmq.meta (queue text, field text, value text)")
        conn.execute("CREATE TABLE bullmq.scheduler (queue text, scheduler_id text)")
        conn.execute("INSERT INTO bullmq.meta VALUES ('orders', 'version', 'bullmq:6.7.0')")
    source = source_for(ConnectionSpec("pg", postgres_db.url, ("bullmq",)))
    try:
        assert source.discover() == [QueueRef("pg", "bullmq", "orders")]
        db = source._db  # the one connection the source reads through
        assert db.rows("SHOW default_transaction_read_only") == [("on",)]
        with pytest.raises(SourceUnavailable, match="read-only"), source.errors():
            db.rows("DELETE FROM bullmq.meta")
    finally:
        source.close()


@pytest.mark.postgres
def test_a_restarted_connection_is_made_again_by_the_next_read(postgres_server, postgres_db):
    source = source_for(ConnectionSpec("pg", postgres_db.url, ("bullmq",)))
    try:
        assert source.discover() == []
        with postgres_server.connect() as admin:  # the server drops every session of the database
            terminate = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s"
            admin.execute(terminate, [postgres_db.name])
        with pytest.raises(SourceUnavailable), source.errors():
            source.discover()
        assert source.discover() == []
    finally:
        source.close()
