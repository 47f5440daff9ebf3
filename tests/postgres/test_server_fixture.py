"""The private PostgreSQL the tests start: reachable on loopback, a database per test."""

from __future__ import annotations

import os

import psycopg
import pytest

pytestmark = pytest.mark.postgres


def test_a_test_gets_an_empty_database_of_its_own_on_loopback(postgres_server, postgres_db):
    assert postgres_db.url == postgres_server.url(postgres_db.name)
    assert "@127.0.0.1:" in postgres_db.url
    with psycopg.connect(postgres_db.url, autocommit=True) as conn:
        assert conn.execute("SELECT current_database()").fetchone() == (postgres_db.name,)
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone() == (0,)
        conn.execute("CREATE TABLE kept (x int)")
        assert conn.execute("SHOW server_version_num").fetchone()[0] >= "150000"


def test_the_server_runs_as_an_unprivileged_user_outside_pytests_tmp(postgres_server):
    assert not postgres_server.dir.startswith("/tmp/pytest-of-")
    owner = os.stat(postgres_server.data).st_uid
    assert owner != 0 or os.geteuid() != 0


def test_create_database_replaces_a_leftover_of_the_same_name(postgres_server):
    url = postgres_server.create_database("t_leftover")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE left_behind (x int)")
    url = postgres_server.create_database("t_leftover")
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass('left_behind')").fetchone() == (None,)
    postgres_server.drop_database("t_leftover")
    with postgres_server.connect() as conn:
        assert conn.execute("SELECT count(*) FROM pg_database WHERE datname = 't_leftover'").fetchone() == (0,)
