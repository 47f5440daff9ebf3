"""One PostgreSQL connection holding BullMQ's queues, and its failures as ``SourceUnavailable``.

The URL is libpq's (``postgres://`` or ``postgresql://user:pass@host:port/db?sslmode=…``) plus
one parameter of Queuewatch's own, ``schema``: the schema BullMQ was configured with (its
``connection.schema``, default ``bullmq``). libpq refuses parameters it does not know, so
``schema`` is taken out before connecting; it is the connection's default prefix.

Every read runs in a read-only session (``default_transaction_read_only``) with a
statement timeout, over one connection guarded by a lock: the reads are a handful of short
statements per page or tick, so a pool would only multiply what the database has to serve.
A failed connection is dropped and made again by the next read. The commands facet has a
connection of its own made with ``read_only=False``: each action is one ``transaction()``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from ..errors import SourceUnavailable
from ..sources.spec import hide_url_secrets

SCHEMES = ("postgres", "postgresql")
SCHEMA_PARAM = "schema"
DEFAULT_SCHEMA = "bullmq"  # BullMQ's own default (migrator.DEFAULT_SCHEMA)
CONNECT_TIMEOUT_S = 2  # libpq's smallest useful value: an unreachable server fails in 2 s


def split_url(url: str) -> tuple[str, str | None]:
    """(the URL libpq is given, the ``schema`` parameter or ``None``). Raises ``ValueError``
    for a URL libpq would refuse, or a ``schema`` given twice or empty."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in SCHEMES:
        raise ValueError(f"expected a postgres:// or postgresql:// URL, got scheme {parts.scheme!r}")
    params = parse_qsl(parts.query, keep_blank_values=True)
    schemas = [value for key, value in params if key == SCHEMA_PARAM]
    if len(schemas) > 1:
        raise ValueError("the schema parameter is given more than once")
    if schemas and not schemas[0].strip():
        raise ValueError("the schema parameter is empty")
    kept = urlencode([(key, value) for key, value in params if key != SCHEMA_PARAM])
    libpq_url = urlunsplit(parts._replace(query=kept))
    try:
        conninfo_to_dict(libpq_url)
    except psycopg.Error as exc:
        raise ValueError(str(exc)) from None
    return libpq_url, (schemas[0].strip() if schemas else None)


def check_schema_name(name: str) -> None:
    """A schema name BullMQ would accept: non-empty, at most PostgreSQL's 63 bytes, no NUL."""
    if not name or len(name.encode()) > 63 or "\x00" in name:
        raise ValueError(f"{name[:80]!r} is not a PostgreSQL schema name")


WRITE_REFUSED = (
    "PostgreSQL refused the action (the user needs SELECT, INSERT, UPDATE and DELETE on the "
    "BullMQ schema's tables and USAGE on its sequences; nothing was changed)"
)


def describe(exc: BaseException, *, writing: bool = False) -> str:
    if isinstance(exc, psycopg.errors.QueryCanceled):
        return "timed out waiting for PostgreSQL to answer"
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return WRITE_REFUSED if writing else "PostgreSQL refused a read (grant the user SELECT on the BullMQ schema)"
    text = (str(exc) or exc.__class__.__name__).strip()
    return text if len(text) < 300 else text[:300] + "…"


@contextmanager
def postgres_errors(connection: str, url: str = "", *, writing: bool = False) -> Iterator[None]:
    """Turn psycopg's failures into ``SourceUnavailable`` with a message that names the
    connection but never its URL or password."""
    try:
        yield
    except psycopg.Error as exc:
        raise SourceUnavailable(connection, hide_url_secrets(describe(exc, writing=writing), url)) from None


class PostgresConnection:
    """A lazily made, lock-guarded, read-only connection; ``rows(query, params)`` runs one
    statement and returns its rows as tuples."""

    def __init__(
        self,
        url: str,
        *,
        statement_timeout_s: float = 5.0,
        application_name: str = "queuewatch",
        read_only: bool = True,
    ):
        self.url = url
        self._read_only = read_only
        self._libpq_url, _ = split_url(url)
        self._timeout_ms = max(1, int(statement_timeout_s * 1000))
        self._application_name = application_name
        self._lock = threading.Lock()
        self._conn: psycopg.Connection | None = None

    def _connect(self) -> psycopg.Connection:
        options = f"-c statement_timeout={self._timeout_ms}"
        if self._read_only:
            options = "-c default_transaction_read_only=on " + options
        return psycopg.connect(
            self._libpq_url,
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT_S,
            application_name=self._application_name,
            options=options,
        )

    def rows(
        self, query: sql.Composed | sql.SQL | str, params: Sequence[Any] | Mapping[str, Any] | None = None
    ) -> list[tuple]:
        with self._lock:
            if self._conn is None or self._conn.closed:
                self._conn = self._connect()
            try:
                return self._conn.execute(query, params).fetchall()
            except (psycopg.OperationalError, psycopg.InterfaceError):
                self._drop()  # a broken socket, a server restart: the next read reconnects
                raise

    @contextmanager
    def transaction(self, schema: str) -> Iterator[psycopg.Connection]:
        """One transaction with ``schema`` first on the search path (BullMQ's command files
        name no schema, like its Lua scripts name no prefix): committed when the block ends,
        rolled back if it raises."""
        with self._lock:
            if self._conn is None or self._conn.closed:
                self._conn = self._connect()
            try:
                with self._conn.transaction():
                    self._conn.execute(
                        sql.SQL("SELECT set_config('search_path', {}, true)").format(
                            sql.Literal(sql.Identifier(schema).as_string(None))
                        )
                    )
                    yield self._conn
            except (psycopg.OperationalError, psycopg.InterfaceError):
                self._drop()
                raise

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except psycopg.Error:
                pass

    def close(self) -> None:
        with self._lock:
            self._drop()
