"""Keeping tests' Redis data apart on the session's one redis-server (a pytest-xdist worker
is a session of its own: it starts its own server, so workers never share one).

Two kinds of isolation, in order of preference:

- **A key prefix on database 0** (``PrefixedRedis``): every BullMQ key of the test lives under
  ``bull-<hash of the test id>:``, so tests cannot see each other's queues, and the scheme also
  works where only database 0 exists (Redis Cluster). Use it whenever everything the test writes
  goes through a queue prefix.
- **A whole database** (``RedisDb``), leased from the one ``DatabaseAllocator`` of the session,
  when something reads the whole keyspace: a monitor discovers every queue on its connection and
  keeps its own state, watches and channel layer under fixed (unprefixed) keys. No test module
  writes a database number by hand.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import redis

from queues.connections import ConnectionSpec
from queues.keys import QueueRef

SHARED_DB = 0  # prefix-isolated tests; never leased whole
DATABASES = 16  # redis-server's default `databases`


@dataclass(frozen=True)
class RedisDb:
    """A database of the session's redis-server, leased to one test (or one session fixture)."""

    port: int
    number: int

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/{self.number}"

    def client(self) -> redis.Redis:
        """A new client on this database; the caller closes it."""
        return redis.Redis(port=self.port, db=self.number)

    def flush(self) -> None:
        with contextlib.closing(self.client()) as client:
            client.flushdb()


class DatabaseAllocator:
    """Hands out the databases 1..15 of one redis-server, each to one holder at a time, emptied
    before and after. Running out is an error that names the cause, not a silent collision."""

    def __init__(self, port: int, *, databases: int = DATABASES):
        self._port = port
        self._free = [n for n in range(databases) if n != SHARED_DB]
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def lease(self) -> Iterator[RedisDb]:
        with self._lock:
            if not self._free:
                raise RuntimeError("every Redis database is leased: release one, or isolate the test by key prefix")
            db = RedisDb(self._port, self._free.pop(0))
        db.flush()
        try:
            yield db
        finally:
            db.flush()
            with self._lock:
                self._free.append(db.number)
                self._free.sort()


def prefix_for(test_id: str) -> str:
    """A BullMQ key prefix of a test's own, stable across runs (so leftovers of an interrupted
    run are found and removed)."""
    return "bull-" + hashlib.sha1(test_id.encode()).hexdigest()[:12]


def delete_prefixed(client: redis.Redis, prefix: str) -> None:
    """Delete every key under ``prefix:`` (SCAN, not KEYS: the database is shared)."""
    batch = []
    for key in client.scan_iter(match=f"{prefix}:*", count=1000):
        batch.append(key)
        if len(batch) >= 500:
            client.unlink(*batch)
            batch.clear()
    if batch:
        client.unlink(*batch)


@dataclass(frozen=True)
class PrefixedRedis:
    """A test's own key prefix on database 0: its URL, a client, and queue references under it."""

    prefix: str
    url: str
    client: redis.Redis

    def queue(self, name: str, *, connection: str = "default") -> QueueRef:
        return QueueRef(connection, self.prefix, name)

    def spec(self, connection: str = "default") -> ConnectionSpec:
        return ConnectionSpec(connection, self.url, (self.prefix,))

    def args(self, name: str, *, connection: str = "default") -> list[str]:
        """``[connection, prefix, name]``: a queue's URL arguments (``reverse("queue", args=...)``)."""
        return [connection, self.prefix, name]


def point_at(settings, *specs: ConnectionSpec) -> None:
    """Point the app's connections at ``specs`` (forgetting the clients made for the old ones)."""
    from dashboard.connections.registry import reset_registry

    settings.QUEUEWATCH_CONNECTIONS = list(specs)
    reset_registry()


@contextlib.contextmanager
def app_on(settings, url: str, *prefixes: str):
    """The app pointed at ``url`` with ``prefixes`` (default 'bull') for the duration."""
    from dashboard.connections.registry import reset_registry

    point_at(settings, ConnectionSpec("default", url, prefixes or ("bull",)))
    try:
        yield url
    finally:
        reset_registry()
