"""Queuewatch's own database in a test run: SQLite (the default), or PostgreSQL configured the
way docker-compose.yml configures it.

``QUEUEWATCH_TEST_DATABASE=postgres`` makes tests/settings.py start a private PostgreSQL
(tests/support/postgres.py) before Django reads its settings, provisioned as the compose file's
``postgres`` service provisions itself (its ``POSTGRES_USER`` with ``POSTGRES_PASSWORD``, a
superuser as in the official image, and ``POSTGRES_DB``), with password authentication for that
user. The app then gets the compose file's own ``DATABASE_URL``, interpolated the compose way,
only with the service's host and port swapped for the private server's: the settings module
parses it exactly as in production, and pytest-django creates its test databases on that server
(``test_<POSTGRES_DB>_gw<N>``: one per pytest-xdist worker).

One server serves the whole run: the process that first reads the settings (pytest itself, or
the pytest-xdist controller) starts it and hands its URL to the workers it spawns in
``QUEUEWATCH_TEST_DATABASE_URL``; it stops the server when it exits.
"""

from __future__ import annotations

import atexit
import os
import re
import secrets
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

CHOICE = "QUEUEWATCH_TEST_DATABASE"  # sqlite (default) | postgres
URL_FOR_WORKERS = "QUEUEWATCH_TEST_DATABASE_URL"
CHOICES = ("sqlite", "postgres")
COMPOSE_FILE = Path(__file__).resolve().parents[2] / "docker-compose.yml"
SERVICE = "postgres"  # the compose service DATABASE_URL names as its host

_VARIABLE = re.compile(r"\$\{(\w+)(?:(:?[-?])([^}]*))?\}|\$(\w+)")


def chosen() -> str:
    choice = os.environ.get(CHOICE, "sqlite") or "sqlite"
    if choice not in CHOICES:
        raise RuntimeError(f"{CHOICE} must be one of {', '.join(CHOICES)} (got {choice!r})")
    return choice


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's variable forms: ``$X``, ``${X}``, ``${X:-default}``, ``${X-default}``,
    ``${X:?error}``, ``${X?error}`` (an unset required variable is an error, as in compose)."""

    def one(found: re.Match) -> str:
        name = found.group(1) or found.group(4)
        operator, argument = found.group(2), found.group(3)
        value = env.get(name)
        empty_counts = operator is not None and operator.startswith(":")
        missing = value is None or (empty_counts and value == "")
        if operator and operator.endswith("-") and missing:
            return argument
        if operator and operator.endswith("?") and missing:
            raise ValueError(f"{name}: {argument}")
        return value or ""

    return _VARIABLE.sub(one, value.replace("$$", "\0")).replace("\0", "$")


def _setting(text: str, name: str) -> str:
    """The value of ``name:`` in the compose file (each of these is set once there)."""
    found = re.findall(rf"^\s*{name}:\s*(.+?)\s*$", text, re.MULTILINE)
    if len(found) != 1:
        raise ValueError(f"docker-compose.yml sets {name} {len(found)} times, expected once")
    return found[0].strip("'\"")


def compose_command() -> list[str] | None:
    """``docker compose`` (v2) or ``docker-compose`` (v1), whichever is installed."""
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


def compose_database(password: str, text: str | None = None) -> dict[str, str]:
    """What the compose file says about Queuewatch's database with ``POSTGRES_PASSWORD`` set to
    ``password``: the app's ``DATABASE_URL`` and the ``postgres`` service's user and database."""
    text = COMPOSE_FILE.read_text() if text is None else text
    env = {"POSTGRES_PASSWORD": password}
    return {
        "DATABASE_URL": interpolate(_setting(text, "DATABASE_URL"), env),
        "POSTGRES_USER": interpolate(_setting(text, "POSTGRES_USER"), env),
        "POSTGRES_DB": interpolate(_setting(text, "POSTGRES_DB"), env),
    }


def on_server(url: str, host: str, port: int) -> str:
    """The compose URL with the ``postgres`` service's address replaced by ``host:port``."""
    parts = urlsplit(url)
    if parts.hostname != SERVICE:
        raise ValueError(f"DATABASE_URL in docker-compose.yml names host {parts.hostname!r}, not the {SERVICE} service")
    credentials = parts.netloc.rpartition("@")[0]
    return urlunsplit(parts._replace(netloc=f"{credentials}@{host}:{port}"))


def provision(server, user: str, password: str, dbname: str) -> None:
    """What the official postgres image does with POSTGRES_USER/PASSWORD/DB, and its
    ``host all all all scram-sha-256``: that user logs in over TCP with its password only."""
    from psycopg import sql

    with server.connect() as conn:
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN SUPERUSER PASSWORD {}").format(sql.Identifier(user), sql.Literal(password))
        )
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(dbname), sql.Identifier(user)))
        hba = Path(server.data) / "pg_hba.conf"
        rules = hba.read_text()
        # First matching line wins: this one before initdb's trust lines (kept for the fixture's
        # own superuser connections).
        with hba.open("w") as f:  # rewritten in place: the file keeps its owner
            f.write(f"host all {user} 127.0.0.1/32 scram-sha-256\n{rules}")
        conn.execute("SELECT pg_reload_conf()")


def start_server() -> str:
    """Start and provision the run's private PostgreSQL; its app URL (stopped at exit)."""
    from tests.support.postgres import PostgresServer

    password = secrets.token_urlsafe(18)
    compose = compose_database(password)
    server = PostgresServer()
    atexit.register(server.stop)
    provision(server, compose["POSTGRES_USER"], password, compose["POSTGRES_DB"])
    return on_server(compose["DATABASE_URL"], "127.0.0.1", server.port)


def database_url() -> str | None:
    """The ``DATABASE_URL`` this test process gives the settings: None for the SQLite default."""
    if chosen() != "postgres":
        return None
    if not os.environ.get(URL_FOR_WORKERS):
        os.environ[URL_FOR_WORKERS] = start_server()
    return os.environ[URL_FOR_WORKERS]
