"""The monitored connections and their discovered queues, shared by views (and later the
monitor). One pooled Redis client per connection; discovery results are cached for
``QUEUEWATCH_DISCOVERY_TTL`` seconds so page loads do not SCAN on every request.

Every Redis error raised through here is turned into ``RedisUnavailable`` with a message that
names the connection but never its URL or password.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass

import redis
from django.conf import settings

from queues.connections import ConnectionSpec, client_for
from queues.discovery import discover_queue_names
from queues.errors import QueueNotFound, RedisUnavailable
from queues.keys import QueueRef
from queues.redact import Redactor


@dataclass
class Monitored:
    spec: ConnectionSpec
    client: redis.Redis
    queues: list[QueueRef]
    discovered_at: float | None = None  # time.monotonic() of the last scan; None = never


class Registry:
    def __init__(self, specs: list[ConnectionSpec], *, discovery_ttl: float, timeout: float):
        self.discovery_ttl = discovery_ttl
        self._lock = threading.Lock()
        self._conns = {
            s.name: Monitored(spec=s, client=client_for(s, socket_timeout=timeout), queues=[]) for s in specs
        }

    @property
    def names(self) -> list[str]:
        return list(self._conns)

    def connection(self, name: str) -> Monitored:
        try:
            return self._conns[name]
        except KeyError:
            raise QueueNotFound(name, "", "") from None

    def client(self, name: str) -> redis.Redis:
        return self.connection(name).client

    def queues(self, name: str, *, refresh: bool = False) -> list[QueueRef]:
        conn = self.connection(name)
        with self._lock:
            fresh = conn.discovered_at is not None and time.monotonic() - conn.discovered_at < self.discovery_ttl
            if fresh and not refresh:
                return conn.queues
        found = None if refresh else self._published(name)
        if found is None:
            with redis_errors(name):
                found = self.scan(name)
        with self._lock:
            conn.queues, conn.discovered_at = found, time.monotonic()
        return found

    def scan(self, name: str) -> list[QueueRef]:
        conn = self.connection(name)
        return [QueueRef(name, prefix, q) for prefix in conn.spec.prefixes for q in discover_queue_names(conn.client, prefix)]

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


@contextmanager
def redis_errors(connection: str):
    try:
        yield
    except (redis.AuthenticationError, redis.exceptions.AuthorizationError):
        # Checked before ConnectionError, which these subclass in redis-py.
        raise RedisUnavailable(connection, "authentication failed (check the user and password)") from None
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        raise RedisUnavailable(connection, _describe(exc)) from None
    except redis.ResponseError as exc:
        raise RedisUnavailable(connection, f"Redis refused a command: {exc}") from None


def _describe(exc: Exception) -> str:
    if isinstance(exc, redis.TimeoutError):
        return "timed out waiting for Redis to answer"
    text = str(exc) or exc.__class__.__name__
    return text if len(text) < 300 else text[:300] + "…"


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
