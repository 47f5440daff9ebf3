"""The test run's own database is the one asked for (QUEUEWATCH_TEST_DATABASE), and on
PostgreSQL it is configured exactly as docker-compose.yml configures Queuewatch's database."""

from __future__ import annotations

import os
import re
import subprocess

import psycopg
import pytest
from django.db import connection

from tests.support.app_database import chosen, compose_command, compose_database, interpolate, on_server
from tests.support.servers import ROOT


def test_compose_variables_are_interpolated_as_compose_does():
    env = {"SET": "v", "EMPTY": ""}
    assert interpolate("a${SET}b$SET", env) == "avbv"
    assert interpolate("${UNSET:-d}|${EMPTY:-d}|${EMPTY-d}|${SET:-d}", env) == "d|d||v"
    assert interpolate("$${SET}", env) == "${SET}"
    with pytest.raises(ValueError, match="UNSET: say so"):
        interpolate("${UNSET:?say so}", env)
    with pytest.raises(ValueError):
        interpolate("${EMPTY:?}", env)


def test_the_database_settings_read_from_the_compose_file_are_what_docker_compose_resolves():
    cmd = compose_command()
    if cmd is None:
        pytest.skip("neither 'docker compose' nor 'docker-compose' is installed (.ci/run installs docker-compose)")
    password = "Pw-1_x"
    result = subprocess.run(
        [*cmd, "config"],
        cwd=ROOT,
        env={**os.environ, "QUEUEWATCH_SECRET_KEY": "x", "POSTGRES_PASSWORD": password},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    resolved = {
        name: set(re.findall(rf"^\s*{name}: (.+)$", result.stdout, re.MULTILINE))
        for name in ("DATABASE_URL", "POSTGRES_USER", "POSTGRES_DB")
    }
    read = compose_database(password)
    assert {name: {value} for name, value in read.items()} == resolved
    assert read["DATABASE_URL"] == f"postgres://{read['POSTGRES_USER']}:{password}@postgres:5432/{read['POSTGRES_DB']}"


def test_only_the_compose_services_address_is_replaced():
    url = on_server("postgres://u:p@postgres:5432/db?sslmode=disable", "127.0.0.1", 5999)
    assert url == "postgres://u:p@127.0.0.1:5999/db?sslmode=disable"
    with pytest.raises(ValueError, match="not the postgres service"):
        on_server("postgres://u:p@elsewhere:5432/db", "127.0.0.1", 5999)


@pytest.mark.django_db
def test_the_tests_run_on_the_database_asked_for():
    expected = {"sqlite": "sqlite", "postgres": "postgresql"}[chosen()]
    assert connection.vendor == expected
    if expected == "postgresql":
        compose = compose_database(connection.settings_dict["PASSWORD"])
        assert connection.settings_dict["USER"] == compose["POSTGRES_USER"]
        assert connection.settings_dict["NAME"].startswith(f"test_{compose['POSTGRES_DB']}")
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_user, current_database()")
            assert cursor.fetchone() == (compose["POSTGRES_USER"], connection.settings_dict["NAME"])


@pytest.mark.django_db
def test_on_postgresql_the_compose_user_needs_its_password():
    if connection.vendor != "postgresql":
        pytest.skip("QUEUEWATCH_TEST_DATABASE is not postgres")
    s = connection.settings_dict
    address = {"host": s["HOST"], "port": s["PORT"], "user": s["USER"], "dbname": s["NAME"], "connect_timeout": 10}
    with psycopg.connect(password=s["PASSWORD"], **address) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(password=s["PASSWORD"] + "x", **address)
