"""A single Redis node (``redis://``, ``rediss://``, ``unix://``): the source kind every
connection has been so far. Reads and writes use the framework-free readers in ``queues/``
unchanged; this module only decides which client each of them gets.
"""

from __future__ import annotations

from typing import ClassVar

import redis

from ..keys import QueueRef
from ..redis.bulk_facet import RedisBulk
from ..redis.client_name import name_connections_when_allowed
from ..redis.commands_facet import RedisCommands
from ..redis.discovery import discover_queue_names
from ..redis.discovery_pass import DiscoveryPass
from ..redis.errors import redis_errors
from ..redis.events import EventsFollower
from ..redis.figures_facet import RedisFigures
from ..redis.job_tools_facet import RedisDedup, RedisJobTools
from ..redis.jobs_facet import RedisJobs
from ..redis.probes_facet import RedisProbes
from ..redis.schedulers_facet import RedisSchedulers
from ..redis.server_facet import RedisServer
from ..redis.snapshot import read_snapshots
from ..redis.workers import read_workers
from ..snapshot import QueueSnapshot
from ..workers import Worker
from .spec import ConnectionSpec

# Extra seconds a follower's socket waits beyond its XREAD BLOCK, so redis-py never mistakes an
# idle block for a dead server.
FOLLOWER_SOCKET_MARGIN_S = 5


def redis_client(url: str, *, socket_timeout: float = 5.0, connect_timeout: float = 2.0) -> redis.Redis:
    """A pooled client returning bytes (job hashes may hold anything), with timeouts so a slow
    or unreachable Redis gives a clear error instead of a hung page; named ``queuewatch`` where
    Redis allows ``CLIENT SETNAME``."""
    client = redis.Redis.from_url(
        url,
        decode_responses=False,
        socket_timeout=socket_timeout,
        socket_connect_timeout=connect_timeout,
        health_check_interval=30,
    )
    return name_connections_when_allowed(client)


def node_address(url: str) -> tuple[str | int, ...]:
    """Where a node URL points, as redis-py reads it: ``("unix", path, db)`` or
    ``("tcp", host, port, db)`` with the defaults filled in (``queues.shared_redis`` compares them)."""
    parts = redis.connection.parse_url(url)
    db = int(parts.get("db") or 0)
    if "path" in parts:
        return ("unix", parts["path"], db)
    return ("tcp", (parts.get("host") or "localhost").lower(), int(parts.get("port") or 6379), db)


class RedisNodeSource:
    kind: ClassVar[str] = "redis"
    label: ClassVar[str] = "Redis"
    schemes: ClassVar[tuple[str, ...]] = ("redis", "rediss", "unix")

    def __init__(self, spec: ConnectionSpec, *, socket_timeout: float = 5.0):
        self.spec = spec
        self._client = self._connect(socket_timeout=socket_timeout)  # connects on first use
        facet = dict(connection=spec.name)
        self.jobs = RedisJobs(self._client, **facet)
        self.probes = RedisProbes(self._client, **facet)
        self.commands = RedisCommands(self._client, **facet)
        self.schedulers = RedisSchedulers(self._client, cron_tz=spec.cron_tz, **facet)
        self.bulk = RedisBulk(self._client, **facet)
        self.server = RedisServer(self._client, **facet)
        self.job_tools = RedisJobTools(self._client, **facet)
        self.dedup = RedisDedup(self._client, **facet)
        self.figures = RedisFigures(self._client, **facet)

    def _connect(self, *, socket_timeout: float) -> redis.Redis:
        """A new pooled client of the server this connection's commands go to. The one thing a
        kind of the same data model served another way (Sentinel's current primary) changes:
        every facet, reader and the events follower are built on what this returns."""
        return redis_client(self.spec.url, socket_timeout=socket_timeout)

    @classmethod
    def check_url(cls, url: str) -> None:
        redis.connection.parse_url(url)  # raises ValueError with redis-py's reason

    def workers(self, queues: list[QueueRef]) -> dict[QueueRef, list[Worker]]:
        return read_workers(self._client, queues)  # one CLIENT LIST

    def discover(self) -> list[QueueRef]:
        return [
            QueueRef(self.spec.name, prefix, name)
            for prefix in self.spec.prefixes
            for name in discover_queue_names(self._client, prefix)
        ]

    def discovery_pass(self, *, keys_per_step: int, min_pass_s: float, known=()) -> DiscoveryPass:
        """The monitor's resumable, budgeted discovery (``queues.redis.discovery_pass``)."""
        return DiscoveryPass(
            self._client,
            connection=self.spec.name,
            prefixes=self.spec.prefixes,
            keys_per_step=keys_per_step,
            min_pass_s=min_pass_s,
            known=known,
        )

    def queue_exists(self, queue: QueueRef) -> bool:
        # The keys discovery looks for: a queue has one or both (queues/redis/discovery.py).
        return bool(self._client.exists(queue.key("meta"), queue.key("events")))

    def snapshots(self, queues: list[QueueRef]) -> list[QueueSnapshot]:
        return read_snapshots(self._client, queues)

    def events_follower(self, *, block_ms: int) -> EventsFollower:
        # A dedicated client: XREAD BLOCK holds its connection for up to block_ms.
        client = self._connect(socket_timeout=block_ms / 1000 + FOLLOWER_SOCKET_MARGIN_S)
        client.ping()
        return EventsFollower(client, block_ms=block_ms)

    def errors(self):
        return redis_errors(self.spec.name)

    def close(self) -> None:
        self._client.close()
