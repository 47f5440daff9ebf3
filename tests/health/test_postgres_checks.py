"""The PostgreSQL kind's connection checks as pure functions of their facts: the thresholds of
connection headroom and dead job rows, and a schema that requires a newer BullMQ major (the
database-backed cases are tests/postgres/test_health_checks.py)."""

from __future__ import annotations

from queues.health import DEFAULT_THRESHOLDS, FAIL, PASS
from queues.health.facts import PostgresFacts, SchemaFacts, TableFacts
from queues.health.postgres_checks import check_connections, check_dead_rows, check_schema_version

NOW = 1_800_000_000_000


def facts(**kw) -> PostgresFacts:
    base = dict(
        server_version="17.2",
        schemas=[SchemaFacts("bullmq", 11, 6)],
        connections=10,
        max_connections=100,
        reserved_connections=3,
        long_transactions=[],
        sees_all_sessions=True,
        hidden_sessions=0,
    )
    return PostgresFacts(**(base | kw))


def test_connection_headroom_warns_at_80_and_is_critical_at_95_percent_of_the_usable_connections():
    assert check_connections("pg", facts(connections=77), DEFAULT_THRESHOLDS).status == PASS  # 77 of 97
    warn = check_connections("pg", facts(connections=78), DEFAULT_THRESHOLDS)
    assert (warn.status, warn.severity) == (FAIL, "warning")
    assert warn.summary == "78 of 97 connections in use (80%; max_connections 100, 3 reserved)."
    crit = check_connections("pg", facts(connections=93), DEFAULT_THRESHOLDS)
    assert (crit.status, crit.severity) == (FAIL, "critical")


def test_dead_rows_fail_when_many_and_a_fifth_of_the_live_ones():
    behind = TableFacts("bullmq", live_rows=200_000, dead_rows=60_000, last_autovacuum_ms=NOW - 3 * 3600 * 1000)
    found = check_dead_rows("pg", facts(job_tables=[behind]), NOW, DEFAULT_THRESHOLDS)
    assert found.status == FAIL and "bullmq.job: 60000 dead rows beside 200000 live" in found.summary
    big_table = TableFacts("bullmq", live_rows=1_000_000, dead_rows=60_000, last_autovacuum_ms=None)
    assert check_dead_rows("pg", facts(job_tables=[big_table]), NOW, DEFAULT_THRESHOLDS).status == PASS
    small = TableFacts("bullmq", live_rows=10, dead_rows=40_000, last_autovacuum_ms=None)
    assert check_dead_rows("pg", facts(job_tables=[small]), NOW, DEFAULT_THRESHOLDS).status == PASS


def test_a_schema_requiring_a_newer_bullmq_major_warns():
    found = check_schema_version("pg", facts(schemas=[SchemaFacts("bullmq", 11, 7)]))
    assert (found.status, found.severity) == (FAIL, "warning")
    assert found.summary == "bullmq requires BullMQ 7 or newer: Queuewatch may read it wrongly."
    assert check_schema_version("pg", facts(schemas=[SchemaFacts("bullmq", 4, 6)])).status == PASS  # Python's
