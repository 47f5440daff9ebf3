"""The monitored connections, as sources, and their discovered queues; shared by the pages,
the API, the monitor and the alert engine. One source per connection (``queues.sources``),
built once.

Who discovers: the monitor (incrementally, within a budget: ``queues.discovery_pass``; it
publishes the queue list in the dashboard Redis). Requests read that list; they never make the
monitored Redis walk its keyspace:

* a queue named in a URL that is not on the list yet costs one ``EXISTS <prefix>:<name>:meta <prefix>:<name>:events``,
  coalesced (concurrent requests for the same name share one answer, kept a few seconds);
* when the monitor's list has lapsed (the monitor stopped, crashed, or someone else holds its
  lock and publishes nothing), the last list it published is used, shown as stale
  (``stale_since``): no web process scans because a monitor is gone;
* only when no monitor ever published a list here does a web process discover by itself — once
  per ``QUEUEWATCH_DISCOVERY_TTL``, one scan at a time, shared by its requests.

Features ask ``get_registry().source(name)`` for what a connection can do (discover, snapshot,
follow events), and ``jobs(name)``, ``commands(name)``… for its facets: a facet the connection's
kind does not offer raises ``NotOffered``, which pages and the API show as such.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from django.conf import settings

from dashboard.core.dash_redis import DashboardRedisError
from queues.connections import ConnectionSpec
from queues.errors import QueueNotFound
from queues.keys import QueueRef
from queues.redact import Redactor
from queues.sources import Source, facets, source_for
from queues.sources.facets import (
    BulkFacet,
    CommandsFacet,
    FiguresFacet,
    JobsFacet,
    ProbesFacet,
    SchedulersFacet,
    ServerFacet,
)

log = logging.getLogger(__name__)

__all__ = ["Monitored", "Registry", "get_redactor", "get_registry", "reset_registry"]


EXISTS_ANSWER_TTL_S = 5.0  # how long "that queue exists / does not" is reused
EXISTS_ANSWERS_MAX = 10_000


@dataclass
class Monitored:
    source: Source
    queues: list[QueueRef]
    discovered_at: float | None = None  # time.monotonic() of the last discovery; None = never
    scans: int = 0  # scans this process finished: requests that waited for one reuse its result
    discovery_lock: threading.Lock = field(default_factory=threading.Lock)
    exists_answers: dict[QueueRef, tuple[bool, float]] = field(default_factory=dict)  # ref -> (exists, until)
    exists_pending: dict[QueueRef, threading.Event] = field(default_factory=dict)
    stale_since: int | None = None  # ms: the list is the last one a (now stopped) monitor published then

    @property
    def spec(self) -> ConnectionSpec:
        return self.source.spec


class Registry:
    def __init__(self, specs: list[ConnectionSpec], *, discovery_ttl: float, timeout: float):
        self.discovery_ttl = discovery_ttl
        self.exists_wait_s = timeout  # a request sharing another's EXISTS waits at most this
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

    def offers(self, name: str, facet: str) -> bool:
        return getattr(self.source(name), facet, None) is not None

    def jobs(self, name: str) -> JobsFacet:
        return facets.jobs_of(self.source(name))

    def probes(self, name: str) -> ProbesFacet:
        return facets.probes_of(self.source(name))

    def commands(self, name: str) -> CommandsFacet:
        return facets.commands_of(self.source(name))

    def schedulers(self, name: str) -> SchedulersFacet:
        return facets.schedulers_of(self.source(name))

    def bulk(self, name: str) -> BulkFacet:
        return facets.bulk_of(self.source(name))

    def server(self, name: str) -> ServerFacet:
        return facets.server_of(self.source(name))

    def figures(self, name: str) -> FiguresFacet:
        return facets.figures_of(self.source(name))

    def close(self) -> None:
        for conn in self._conns.values():
            try:
                conn.source.close()
            except Exception:  # noqa: BLE001 - closing is best effort; one source must not stop the rest
                log.debug("could not close the source of %s", conn.spec.name, exc_info=True)

    def queues(self, name: str, *, refresh: bool = False) -> list[QueueRef]:
        """The connection's queues: the monitor's published list, cached for the discovery
        TTL; ``refresh`` skips the cache (not the published list)."""
        conn = self.connection(name)
        with self._lock:
            if not refresh and self._fresh(conn):
                return conn.queues
            generation = conn.scans
        found = self._published(name)
        stale_since = None
        if found is None and (last := self._last_published(name)) is not None:
            found, stale_since = last
        if found is None:
            # No monitor has published: discover here, one scan at a time per connection, and
            # let the requests that waited for it (or came while it ran) reuse its result.
            with conn.discovery_lock:
                with self._lock:
                    if conn.scans != generation or (not refresh and self._fresh(conn)):
                        return conn.queues
                with conn.source.errors():
                    found = conn.source.discover()
                with self._lock:
                    conn.queues, conn.discovered_at = found, time.monotonic()
                    conn.scans += 1
                return found
        with self._lock:
            conn.queues, conn.discovered_at, conn.stale_since = found, time.monotonic(), stale_since
        return found

    def stale_since(self, name: str) -> int | None:
        """When (ms) the queue list ``queues(name)`` last gave was published, if no monitor
        has refreshed it since; None while it is current."""
        return self.connection(name).stale_since

    def _fresh(self, conn: Monitored) -> bool:
        return conn.discovered_at is not None and time.monotonic() - conn.discovered_at < self.discovery_ttl

    def _published(self, name: str) -> list[QueueRef] | None:
        """The queue list the monitor published (it scans anyway), so page loads do not SCAN
        a large production keyspace themselves; None when no monitor has published lately."""
        try:
            from dashboard.core.dash_redis import dashboard_redis, read_queue_list

            return read_queue_list(dashboard_redis(), name)
        except DashboardRedisError:
            return None

    def _last_published(self, name: str) -> tuple[list[QueueRef], int] | None:
        try:
            from dashboard.core.dash_redis import dashboard_redis, read_last_queue_list

            return read_last_queue_list(dashboard_redis(), name)
        except DashboardRedisError:
            return None

    def queue(self, connection: str, prefix: str, name: str) -> QueueRef:
        """Resolve a queue from URL parts. One not on the list yet (created since the last
        discovery) is confirmed by ``source.queue_exists`` — O(1) on the server, never a scan."""
        conn = self.connection(connection)
        if prefix not in conn.spec.prefixes:
            raise QueueNotFound(connection, prefix, name)
        ref = QueueRef(connection, prefix, name)
        if ref in self.queues(connection) or self._exists(conn, ref):
            return ref
        raise QueueNotFound(connection, prefix, name)

    def _exists(self, conn: Monitored, ref: QueueRef) -> bool:
        with self._lock:
            known = conn.exists_answers.get(ref)
            if known is not None and time.monotonic() < known[1]:
                return known[0]
            pending = conn.exists_pending.get(ref)
            asking = pending is None
            if asking:
                pending = conn.exists_pending[ref] = threading.Event()
        if not asking:  # another request is asking the same question: share its answer
            pending.wait(self.exists_wait_s)
            with self._lock:
                known = conn.exists_answers.get(ref)
            return bool(known and known[0])
        try:
            with conn.source.errors():
                found = conn.source.queue_exists(ref)
            with self._lock:
                if len(conn.exists_answers) >= EXISTS_ANSWERS_MAX:
                    conn.exists_answers.clear()  # bounded: names come from URLs anyone can type
                conn.exists_answers[ref] = (found, time.monotonic() + EXISTS_ANSWER_TTL_S)
                if found and ref not in conn.queues:
                    conn.queues = [*conn.queues, ref]
            return found
        finally:
            with self._lock:
                conn.exists_pending.pop(ref, None)
            pending.set()

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
    """Forget clients and caches (tests change connections between sessions), closing the old
    sources' pooled connections: otherwise each reset left its sockets open until the garbage
    collector found them."""
    global _registry
    with _registry_lock:
        old, _registry = _registry, None
    if old is not None:
        old.close()


def get_redactor() -> Redactor:
    return Redactor(settings.QUEUEWATCH_SECRET_KEYS)
