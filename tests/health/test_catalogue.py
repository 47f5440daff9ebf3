"""The health catalogue's two parts: checks every source kind shares, and each kind's own
connection-level checks, registered by the kind's module (``register_checks``)."""

from __future__ import annotations

import pytest

from queues import health
from queues.health import CHECKS, FAIL, PASS, Check, CheckResult


def own_check(kind: str = "shelf.reachable", *, source: str = "shelf", title: str = "Shelf reachable") -> Check:
    return Check(kind, "connection", title, "critical", "The shelf did not answer.", "Put it back.", source=source)


@pytest.fixture
def shelf_kind():
    """A made-up source kind ("shelf") that declares its reachability and one setting check."""
    checks = health.register_checks(own_check(), own_check("shelf.dust", title="Dust"))
    yield checks
    for check in checks:
        CHECKS.pop(check.kind)


def test_every_kind_has_a_reachability_check():
    assert health.reachability_kind("redis") == "redis.reachable"
    # A kind that declared nothing is judged by the shared check, never under Redis's name.
    assert health.reachability_kind("tape") == health.CONNECTION_REACHABLE == "connection.reachable"
    assert health.connection_kinds("tape") == ("connection.reachable",)
    assert CHECKS["connection.reachable"].source == "" and CHECKS["redis.reachable"].source == "redis"


def test_a_kind_contributes_its_own_connection_checks(shelf_kind):
    assert health.reachability_kind("shelf") == "shelf.reachable"
    assert health.connection_kinds("shelf") == ("shelf.reachable", "shelf.dust")
    assert "shelf.dust" not in health.connection_kinds("redis")
    result = CheckResult("shelf.dust", FAIL, "store", "Dusty.")
    assert (result.title, result.scope, result.severity) == ("Dust", "connection", "critical")
    assert result.fix == "Put it back."
    assert health.register_checks(own_check()) == (own_check(),)  # the same definition again: no change


def test_the_catalogue_refuses_what_it_cannot_place():
    with pytest.raises(ValueError, match="unknown health check kind 'shelf.dust'"):
        CheckResult("shelf.dust", FAIL, "store", "Dusty.")
    with pytest.raises(ValueError, match="already registered"):
        health.register_checks(own_check("redis.reachable", source="redis"))
    with pytest.raises(ValueError, match="naming their source"):
        health.register_checks(own_check(source=""))
    assert CHECKS["redis.reachable"].title == "Redis reachable"


def test_reachability_in_words_that_name_no_backend(shelf_kind):
    down = health.check_connection_reachable("store", "timed out", source="shelf")
    assert (down.kind, down.status) == ("shelf.reachable", FAIL)
    assert down.summary == "Cannot reach this connection: timed out."
    up = health.check_connection_reachable("store", None, source="tape")
    assert (up.kind, up.status, up.summary, up.title) == (
        "connection.reachable",
        PASS,
        "The connection answers.",
        "Connection reachable",
    )
    assert "Redis" not in up.explanation + up.fix


def test_postgres_declares_its_own_checks():
    import queues.health.postgres_checks  # noqa: F401  (registers the postgres.* kinds)

    assert health.reachability_kind("postgres") == "postgres.reachable"
    assert health.connection_kinds("postgres") == (
        "postgres.reachable",
        "postgres.schema_version",
        "postgres.long_transactions",
        "postgres.connections",
        "postgres.dead_rows",
        "postgres.event_growth",
    )
    assert "postgres.schema_version" not in health.connection_kinds("redis")
