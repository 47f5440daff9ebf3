"""The health page on a BullMQ-on-PostgreSQL connection: the kind's own checks (reachability,
schema version, long transactions, connection headroom, dead job rows) and the queue checks
every kind shares, on schemas Node BullMQ 6.7 migrated; a schema made newer than Queuewatch
knows, a transaction left open and a server that cannot be reached each show their finding."""

from __future__ import annotations

import html
import re
import time

import psycopg
import pytest
from django.urls import reverse

from dashboard.connections.registry import reset_registry
from dashboard.health import checks as health_checks
from queues import health
from queues.sources import ConnectionSpec
from tests.support.redis_db import point_at
from tests.support.servers import refused_port, run_node

pytestmark = [pytest.mark.postgres, pytest.mark.node, pytest.mark.django_db]


def text_of(response) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode())))


def results_of(connection: str = "pg") -> dict[str, health.CheckResult]:
    """The connection's results by kind, queue checks keyed ``kind@queue``."""
    report = health_checks.run_all(connections=[connection])
    found = {}
    for r in report.connections[0].results:
        found[f"{r.kind}@{r.queue}" if r.queue else r.kind] = r
    return found


@pytest.fixture
def node_built(settings, pg_bullmq):
    """The app on the PostgreSQL queues Node built (schemas 'bullmq' and 'other')."""
    point_at(settings, pg_bullmq.spec("pg"))
    yield pg_bullmq
    reset_registry()


@pytest.fixture(scope="module")
def migrated_url(postgres_server) -> str:
    """A database of its own that Node BullMQ 6.7 migrated (schema 'bullmq'), with one queue."""
    url = postgres_server.create_database("pg_health")
    run_node("pg_actions.mjs", "counts", url, "health-q")
    return url


@pytest.fixture
def migrated(settings, migrated_url):
    point_at(settings, ConnectionSpec("pg", migrated_url, ("bullmq",)))
    yield migrated_url
    reset_registry()


def test_the_health_page_passes_the_postgres_checks_on_a_node_migrated_schema(node_built, logged_in):
    page = logged_in.get(reverse("health"))
    assert page.status_code == 200
    text = text_of(page)
    for title in ("PostgreSQL reachable", "BullMQ schema version", "Long transactions", "Connection headroom"):
        assert title in text, title
    assert "BullMQ schema version known: bullmq 11, other 11." in text
    found = results_of()
    for kind in (
        "postgres.reachable",
        "postgres.schema_version",
        "postgres.long_transactions",
        "postgres.connections",
        "postgres.dead_rows",
    ):
        assert found[kind].status == health.PASS, (kind, found[kind].summary)
    assert found["postgres.schema_version"].details["schemas"][0] == {
        "schema": "bullmq",
        "version": 11,
        "min_client_version": 6,
    }
    assert "connection.reachable" not in found and "redis.reachable" not in found
    # The shared queue checks run on PostgreSQL queues too; those whose facts this kind does
    # not have (Redis's legacy repeat metadata, the rate limiter) are left out, not passed.
    assert found["queue.paused@pg-paused"].status == health.FAIL
    assert found["queue.paused@pg-mixed"].status == health.PASS
    assert found["queue.finished_retention@pg-mixed"].status == health.PASS
    assert found["queue.repeated_stalls@pg-mixed"].status == health.UNKNOWN  # no monitor leading
    assert not any(k.startswith(("queue.legacy_repeat@", "queue.rate_limited@")) for k in found)
    # Node's worker left with the fixture: pg-mixed's waiting jobs have nobody to take them.
    assert found["queue.no_workers@pg-mixed"].status == health.FAIL
    assert found["queue.no_workers@pg-mixed"].details["source"] == "pg_stat_activity"


def test_the_postgres_checks_read_in_arabic(node_built, logged_in):
    arabic = text_of(logged_in.get(reverse("health"), HTTP_ACCEPT_LANGUAGE="ar"))
    assert "الوصول إلى PostgreSQL" in arabic and "إصدار مخطط BullMQ معروف: bullmq 11, other 11." in arabic
    assert "BullMQ schema version known" not in arabic


def test_a_schema_newer_than_queuewatch_knows_is_a_warning(migrated, logged_in, postgres_server):
    with postgres_server.connect("pg_health") as conn:
        conn.execute("INSERT INTO bullmq.migration (version, name, min_client_version) VALUES (12, 'future', 6)")
        try:
            found = results_of()["postgres.schema_version"]
            page = text_of(logged_in.get(reverse("health")))
        finally:
            conn.execute("DELETE FROM bullmq.migration WHERE version = 12")
    assert (found.status, found.severity) == (health.FAIL, "warning")
    assert found.summary == (
        "bullmq is at schema version 12, newer than the 11 Queuewatch knows: Queuewatch may read it wrongly."
    )
    assert found.summary in page
    assert results_of()["postgres.schema_version"].status == health.PASS


def test_a_missing_schema_fails_critically(settings, migrated_url):
    point_at(settings, ConnectionSpec("pg", migrated_url, ("bullmq", "never_migrated")))
    try:
        found = results_of()["postgres.schema_version"]
    finally:
        reset_registry()
    assert (found.status, found.severity) == (health.FAIL, "critical")
    assert "never_migrated" in found.summary and "bullmq" not in found.summary.split(":")[1]


def test_a_transaction_left_open_is_a_long_transaction_finding(migrated, logged_in, monkeypatch):
    monkeypatch.setattr(health.DEFAULT_THRESHOLDS, "long_transaction_ms", 300)
    assert results_of()["postgres.long_transactions"].status == health.PASS
    with psycopg.connect(migrated, application_name="stuck-report") as stuck:
        stuck.execute("SELECT count(*) FROM bullmq.job")  # opens a transaction holding a lock on the job table
        time.sleep(0.6)
        found = results_of()["postgres.long_transactions"]
        page = text_of(logged_in.get(reverse("health")))
        stuck.rollback()
    assert found.status == health.FAIL
    assert "1 transaction(s) open longer than" in found.summary and "stuck-report" in found.summary
    assert "1 hold locks on BullMQ tables" in found.summary
    [held] = found.details["transactions"]
    assert held["application"] == "stuck-report" and held["locks_bullmq_tables"] is True
    assert "stuck-report" in page


def test_other_roles_sessions_are_unknown_without_pg_monitor(settings, migrated_url, postgres_server):
    with postgres_server.connect("pg_health") as conn:
        conn.execute("DROP ROLE IF EXISTS qw_health_reader")
        conn.execute("CREATE ROLE qw_health_reader LOGIN")
        conn.execute("GRANT USAGE ON SCHEMA bullmq TO qw_health_reader")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA bullmq TO qw_health_reader")
    url = migrated_url.replace("postgres@", "qw_health_reader@", 1)
    point_at(settings, ConnectionSpec("pg", url, ("bullmq",)))
    try:
        with psycopg.connect(migrated_url):  # a session of another role (the superuser) in the database
            found = results_of()["postgres.long_transactions"]
        with postgres_server.connect("pg_health") as conn:
            conn.execute("GRANT pg_monitor TO qw_health_reader")
        reset_registry()
        with psycopg.connect(migrated_url):
            granted = results_of()["postgres.long_transactions"]
    finally:
        reset_registry()
    assert found.status == health.UNKNOWN and "pg_monitor" in found.summary
    assert found.details["hidden_sessions"] >= 1
    assert granted.status == health.PASS and granted.details["sees_all_sessions"] is True


def test_an_unreachable_server_fails_postgres_reachable(settings, logged_in):
    url = f"postgres://qw:s3cret-pw@127.0.0.1:{refused_port()}/gone"
    point_at(settings, ConnectionSpec("pg", url, ("bullmq",)))
    try:
        [result] = health_checks.run_all(connections=["pg"]).connections[0].results
        page = logged_in.get(reverse("health"))
    finally:
        reset_registry()
    assert (result.kind, result.status, result.severity) == ("postgres.reachable", health.FAIL, "critical")
    assert result.summary.startswith("Cannot reach")
    assert page.status_code == 200
    assert "PostgreSQL reachable" in text_of(page) and "s3cret-pw" not in page.content.decode()


@pytest.fixture(scope="module")
def grown_url(postgres_server) -> str:
    """Queues Node BullMQ 6.7 filled through addBulk: 'keep-all' made with events maxLen 0
    (BullMQ keeps every event), 'small' with maxLen 100 but only bulk adds (BullMQ's bulk insert
    writes its events without trimming), 'calm' with a few single adds."""
    url = postgres_server.create_database("pg_events")
    run_node("pg_probes.mjs", "events", url, "keep-all", "0", "7200")
    run_node("pg_probes.mjs", "events", url, "small", "100", "2200")
    run_node("pg_fixture.mjs", "add", url, "calm", "20")
    return url


def test_an_event_table_growing_without_trimming_is_a_warning(settings, grown_url, logged_in):
    point_at(settings, ConnectionSpec("pg", grown_url, ("bullmq",)))
    try:
        found = results_of()
        page = text_of(logged_in.get(reverse("health")))
    finally:
        reset_registry()
    growth = found["postgres.event_growth"]
    assert growth.status == health.FAIL and growth.severity == "warning"
    # 14,400 events against BullMQ's default length plus the trim's slack (14,096).
    assert "bullmq/keep-all: more than 14096 rows, every event kept (maxLenEvents 0)" in str(growth.summary)
    by_queue = {q["queue"]: q for q in growth.details["queues"]}
    assert by_queue["keep-all"]["rows"] == by_queue["keep-all"]["counted_to"] == 14097
    # 4,400 events past a length of 100 plus slack (4,196): BullMQ's bulk adds did not trim.
    assert "bullmq/small: more than 4196 rows, kept to 100" in str(growth.summary)
    assert "calm" not in by_queue  # a short span of ids: nothing to count
    assert "Event table growth" in page and "The event table grows without trimming" in page


def test_trimmed_event_tables_pass(node_built):
    growth = results_of()["postgres.event_growth"]
    assert growth.status == health.PASS, growth.summary
    assert "Every queue's events are trimmed to its length" in str(growth.summary)
