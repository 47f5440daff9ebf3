"""The monitored connections, as sources, and their discovered queues; shared by the pages,
the API, the monitor and the alert engine. One source per connection (``queues.sources``),
built once; discovery results are cached for ``QUEUEWATCH_DISCOVERY_TTL`` seconds so page loads
do not SCAN on every request.

Features ask ``get_registry().source(name)`` for what a connection can do (discover, snapshot,
follow events, scripts). Two accessors remain for the reads and actions that still take a raw
Redis client: ``client(name)``, which is the source's ``raw_client()``, and ``redis_errors``,
which is what a Redis node source's ``errors()`` does (docs/sources.md lists those call sites).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import redis
from django.conf import settings

from queues.connections import ConnectionSpec
from queues.errors import QueueNotFound
from queues.keys import QueueRef
from queues.redact import Redactor
from queues.sources import Source, source_for
from queues.sources.redis_node import redis_errors

__all__ = ["Monitored", "Registry", "get_redactor", "get_registry", "redis_errors", "reset_registry"]


@dataclass
class Monitored:
    source: Source
    queues: list[QueueRef]
    discovered_at: float | None = None  # time.monotonic() of the last scan; None = never

    @property
    def spec(self) -> ConnectionSpec:
        return self.source.spec

    @property
    def client(self) -> redis.Redis:
        """The source's raw client (transitional: see ``Source.raw_client``)."""
        return self.source.raw_client()


class Registry:
    def __init__(self, specs: list[ConnectionSpec], *, discovery_ttl: float, timeout: float):
        self.discovery_ttl = discovery_ttl
        self._lock = threading.Lock()
        self._conns = {s.name: Monitored(source=source_for(s, socket_timeout=timeout), queues=[]) for s in specs}

    @property
    def names(self) -> list[str]:
        return list(self._conns)

    def connection(self, name: str) -> Monitored:
        try:
            return self._conns[name]
        except KeyError:
            raise QueueNotFound(name, "", "") from None

    def source(self, name: str) -> Source:
        return self.connection(name).source

    def client(self, name: str) -> redis.Redis:
        """The connection's raw Redis client, for features not yet moved to ``source(name)``."""
        return self.source(name).raw_client()

    def queues(self, name: str, *, refresh: bool = False) -> list[QueueRef]:
        conn = self.connection(name)
        with self._lock:
            fresh = conn.discovered_at is not None and time.monotonic() - conn.discovered_at < self.discovery_ttl
            if fresh and not refresh:
                return conn.queues
        found = None if refresh else self._published(name)
        if found is None:
            with conn.source.errors():
                found = conn.source.discover()
        with self._lock:
            conn.queues, conn.discovered_at = found, time.monotonic()
        return found

    def scan(self, name: str) -> list[QueueRef]:
        """Discover now, uncached; raises the backend's own errors (the monitor handles them)."""
        return self.source(name).discover()

    def _published(self, name: str) -> list[QueueRef] | None:
        """The queue list the monitor published (it scans anyway), so page loads do not SCAN
        a large production keyspace themselves; None when no monitor has published lately."""
        try:
            from dashboard.live.channels import dashboard_redis, read_queue_list

            return read_queue_list(dashboard_redis(), name)
        except redis.RedisError:
            return None

    def queue(self, connection: str, prefix: str, name: str) -> QueueRef:
        """Resolve a queue from URL parts; a queue created since the last scan is found by
        rescanning once before answering 404."""
        conn = self.connection(connection)
        if prefix not in conn.spec.prefixes:
            raise QueueNotFound(connection, prefix, name)
        ref = QueueRef(connection, prefix, name)
        if ref in self.queues(connection) or ref in self.queues(connection, refresh=True):
            return ref
        raise QueueNotFound(connection, prefix, name)

    def all_prefixes(self, connection: str) -> list[str]:
        return list(self.connection(connection).spec.prefixes)


_registry: Registry | None = None
_registry_lock = threading.Lock()


def get_registry() -> Registry:
    global _registry
    with _registry_lock:
        if _registry is None:
            _registry = Registry(
                settings.QUEUEWATCH_CONNECTIONS,
                discovery_ttl=settings.QUEUEWATCH_DISCOVERY_TTL,
                timeout=settings.QUEUEWATCH_REDIS_TIMEOUT,
            )
        return _registry


def reset_registry() -> None:
    """Forget clients and caches (tests change connections between sessions)."""
    global _registry
    with _registry_lock:
        _registry = None


def get_redactor() -> Redactor:
    return Redactor(settings.QUEUEWATCH_SECRET_KEYS)
