"""A Redis Cluster as one connection (``redis+cluster://``, ``rediss+cluster://`` with TLS).

The URL lists seed nodes: ``redis+cluster://[user:password@]host:port[,host:port…][?query]``;
the client learns the rest of the cluster from them. BullMQ runs on a Cluster only when every
key of a queue shares a hash slot (a ``{hash tag}`` in the prefix or the queue name), so this
kind routes every read of a queue to the primary that owns that slot:

- ``discover()`` SCANs every primary (each holds only its own slots' keys) with the single-node
  reader, and keeps the queues whose keys share a slot (BullMQ's scripts refuse the others
  with ``CROSSSLOT``; such a queue can hold no jobs on a Cluster).
- ``snapshots()`` groups queues by the primary owning their slot and reads each group with
  ``read_snapshots_side_by_side`` (``per_slot=True``) on a plain client of that node: a tick
  costs at most three round trips per node, whatever the number of queues, each sent to every
  node before any reply is read.
- ``workers()`` reads ``CLIENT LIST`` on each primary and matches it to the queues that node
  owns (a worker's blocking connection is on its queue's node; its other cluster connections
  carry the same name and are left out, so a worker is not counted once per node).
- ``jobs``, ``probes``, ``commands`` (``ClusterCommands``) and ``schedulers`` are the
  single-node facets on the cluster client: each read, script or composition names keys of one
  queue, so redis-py routes it to the right node. A redrive between queues of different slots is
  refused with a way out (one hash tag for both) instead of failing inside Lua.

- ``events_follower()`` follows each queue's ``events`` stream on the primary owning it, one
  ``XREAD`` per hash-slot group (``queues.redis.cluster_events``), on one dedicated connection
  per primary.

- ``job_tools`` are the single-node tools on the cluster client; ``dedup`` (``ClusterDedup``)
  SCANs only the primary owning the queue's slot.

- ``server`` (``queues.redis.cluster_health``) says whether the cluster answers and lists the
  queues ``discover`` left out because their keys span slots, with the fix (a hash tag).

Not offered yet: bulk tasks, and the single-node server and queue health checks.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, ClassVar, TypeVar, cast
from urllib.parse import parse_qsl

import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot

from ..actions import ActionResult
from ..dedup import DedupPage
from ..errors import SourceUnavailable
from ..flow_actions import cross_slot_refusal as flow_cross_slot
from ..keys import QueueRef
from ..redact import Redactor
from ..redis.client_name import name_connections_when_allowed, name_when_allowed
from ..redis.cluster_events import ClusterEventsFollower
from ..redis.cluster_health import ClusterServer
from ..redis.commands_facet import RedisCommands
from ..redis.dedup import dedup_page
from ..redis.discovery import discover_queue_names
from ..redis.errors import describe, redis_errors
from ..redis.figures_facet import RedisFigures
from ..redis.flow_actions import parent_of
from ..redis.job_tools_facet import RedisDedup, RedisJobTools
from ..redis.jobs_facet import RedisJobs
from ..redis.probes_facet import RedisProbes
from ..redis.redrive import cross_slot_refusal
from ..redis.schedulers_facet import RedisSchedulers
from ..redis.snapshot import queue_slot, read_snapshots_side_by_side
from ..redis.stalls import without_lock
from ..snapshot import QueueSnapshot
from ..workers import Worker, workers_by_queue
from .multi_host_url import split_multi_host_url
from .redis_node import FOLLOWER_SOCKET_MARGIN_S
from .spec import ConnectionSpec

DEFAULT_PORT = 6379
T = TypeVar("T")
SPANNING_MAX_AGE_S = 60  # how old a discovery the health check reuses
TLS_QUERY = {"ssl_cert_reqs": ("none", "optional", "required"), "ssl_ca_certs": ()}


def parse_cluster_url(url: str) -> dict[str, Any]:
    """The seed nodes and client options of a ``redis+cluster://`` URL; ``ValueError`` saying
    what is wrong (never quoting the password)."""
    parts = split_multi_host_url(url, RedisClusterSource.schemes, default_port=DEFAULT_PORT)
    if parts.path not in ("", "0"):
        raise ValueError("a Redis Cluster has only database 0")
    options: dict[str, Any] = {"ssl": parts.scheme == "rediss+cluster"}
    if parts.username is not None or parts.password is not None:
        options["username"], options["password"] = parts.username, parts.password
    options["startup_nodes"] = [ClusterNode(host, port) for host, port in parts.hosts]
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key not in TLS_QUERY or not options["ssl"]:
            raise ValueError(f"unsupported parameter {key!r} (rediss+cluster:// accepts {', '.join(TLS_QUERY)})")
        if TLS_QUERY[key] and value not in TLS_QUERY[key]:
            raise ValueError(f"{key} must be one of {', '.join(TLS_QUERY[key])}")
        options[key] = value
    return options


class _LazyCluster:
    """The cluster client, made on first use: redis-py's ``RedisCluster`` reads the slot map
    when built, and a kind must build without connecting (an unreachable cluster is reported by
    the first read). Attribute reads go to the client, so the single-node readers take it as is."""

    def __init__(self, options: dict[str, Any], *, socket_timeout: float):
        self.options, self._socket_timeout = options, socket_timeout
        self._client: RedisCluster | None = None
        self._lock = threading.Lock()

    def get(self) -> RedisCluster:
        with self._lock:
            if self._client is None:
                try:
                    self._client = RedisCluster(
                        **self.options,
                        decode_responses=False,
                        socket_timeout=self._socket_timeout,
                        socket_connect_timeout=2.0,
                        # Named after each node connection's handshake, where allowed
                        # (queues.redis.client_name): RedisCluster calls this for every one.
                        redis_connect_func=name_when_allowed,
                    )
                except redis.cluster.RedisClusterException as exc:
                    # "cannot be connected" and the like: an outage, as redis-py's own errors.
                    raise redis.ConnectionError(str(exc)) from None
            return self._client

    def __getattr__(self, name: str) -> Any:
        return getattr(self.get(), name)

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None


class _FollowerNodes:
    """The slot map and dedicated primary connections a ``ClusterEventsFollower`` asks for."""

    def __init__(self, cluster: RedisCluster, options: dict[str, Any], *, socket_timeout: float):
        self._cluster, self._socket_timeout = cluster, socket_timeout
        self._options = {k: v for k, v in options.items() if k != "startup_nodes"}

    def owner(self, slot: int) -> str:
        return self._cluster.nodes_manager.get_node_from_slot(slot).name

    def connect(self, node: str) -> redis.Redis:
        host, _, port = node.rpartition(":")
        client = redis.Redis(
            host=host,
            port=int(port),
            **self._options,
            decode_responses=False,
            socket_timeout=self._socket_timeout,
            socket_connect_timeout=2.0,
        )
        return name_connections_when_allowed(client)

    def refresh(self) -> None:
        self._cluster.nodes_manager.initialize()


class ClusterCommands(RedisCommands):
    """The single-node commands on the cluster client: each of BullMQ's scripts (and each
    composition of them) names keys of one queue, one hash slot, so redis-py sends its
    ``EVALSHA`` to the node owning that slot (``SCRIPT LOAD`` goes to every primary). A redrive
    names keys of two queues: refused with a way out when their slots differ."""

    def redrive(
        self, dlq: QueueRef, *, job_id: str, source: QueueRef, payload_field: str | None = None
    ) -> ActionResult:
        slot = queue_slot(dlq)
        if slot is None or slot != queue_slot(source):
            return cross_slot_refusal(job_id, dlq=dlq, source=source)
        return super().redrive(dlq, job_id=job_id, source=source, payload_field=payload_field)

    def remove_child_dependency(self, queue: QueueRef, *, job_id: str) -> ActionResult:
        with redis_errors(self.connection):
            parent = parent_of(self.client, queue, job_id)
        if parent and key_slot(parent.encode()) != key_slot(queue.job_key(job_id).encode()):
            return flow_cross_slot(job_id, parent)
        return super().remove_child_dependency(queue, job_id=job_id)


class ClusterDedup(RedisDedup):
    """The deduplication keys on a Cluster: a queue's keys share its hash slot, so the listing
    SCANs only the primary owning it (a cluster client's SCAN would walk every node)."""

    def __init__(self, client: redis.Redis, *, connection: str, source: RedisClusterSource):
        super().__init__(client, connection=connection)
        self._source = source

    def page(self, queue: QueueRef, *, cursor: str, redactor: Redactor) -> DedupPage:
        with redis_errors(self.connection):
            [(_qs, found)] = self._source.per_node(
                [queue], lambda node, _queues: dedup_page(node, queue, cursor=cursor, redactor=redactor)
            )
            return found


class ClusterProbes(RedisProbes):
    """The single-node probes on the cluster client (its pipelines split per node), but for the
    lock check: redis-py refuses an ``MGET`` in a cluster pipeline, so it runs on each node."""

    def __init__(self, client: redis.Redis, *, connection: str, source: RedisClusterSource):
        super().__init__(client, connection=connection)
        self._source = source

    def without_lock(self, jobs: Mapping[QueueRef, list[str]]) -> dict[QueueRef, list[str]]:
        found: dict[QueueRef, list[str]] = {}
        with redis_errors(self.connection):
            for _qs, stalled in self._source.per_node(list(jobs), _locks_of(jobs)):
                found.update(stalled)
        return found


def _locks_of(jobs: Mapping[QueueRef, list[str]]) -> Callable[[redis.Redis, list[QueueRef]], dict[QueueRef, list[str]]]:
    return lambda client, queues: without_lock(client, {q: jobs[q] for q in queues})


class RedisClusterSource:
    kind: ClassVar[str] = "redis-cluster"
    label: ClassVar[str] = "Redis Cluster"
    schemes: ClassVar[tuple[str, ...]] = ("redis+cluster", "rediss+cluster")

    # Not offered yet: bulk tasks (their batch engine is not tried on a Cluster yet).
    bulk = None

    def __init__(self, spec: ConnectionSpec, *, socket_timeout: float = 5.0):
        self.spec = spec
        self._cluster = _LazyCluster(parse_cluster_url(spec.url), socket_timeout=socket_timeout)
        # Every read of RedisJobs names keys of one queue (one slot): the cluster client routes it.
        client = cast(redis.Redis, self._cluster)
        self.jobs = RedisJobs(client, connection=spec.name)
        # Probes pipeline keys of many queues (redis-py splits the pipeline per node, each
        # command names keys of one slot); commands and schedulers run one queue's scripts.
        self.probes = ClusterProbes(client, connection=spec.name, source=self)
        self.commands = ClusterCommands(client, connection=spec.name)
        self.schedulers = RedisSchedulers(client, connection=spec.name, cron_tz=spec.cron_tz)
        # The job tools' scripts name keys of one queue; the deduplication keys of a queue are all
        # in its slot, so one primary's SCAN finds them (ClusterDedup).
        self.job_tools = RedisJobTools(client, connection=spec.name)
        self.dedup = ClusterDedup(client, connection=spec.name, source=self)
        # Each read names keys of one queue (one slot), pipelined per queue.
        self.figures = RedisFigures(client, connection=spec.name)
        # Only reachability and the queues that cannot run here (no hash tag); not yet the node
        # checks of a single Redis (each primary has its own INFO and configuration).
        self.server = ClusterServer(self.spanning_slots, connection=spec.name, kind=self.kind)
        self._spanning: tuple[float, list[QueueRef]] | None = None  # (when, what) the last discovery found

    @classmethod
    def check_url(cls, url: str) -> None:
        parse_cluster_url(url)

    def _primaries(self) -> list[tuple[ClusterNode, redis.Redis]]:
        cluster = self._cluster.get()
        return [(node, cluster.get_redis_connection(node)) for node in cluster.get_primaries()]

    def _by_node(self, queues: list[QueueRef]) -> dict[str, tuple[redis.Redis, list[QueueRef]]]:
        """``queues`` grouped by the primary owning their slot, each with a client of that node."""
        cluster = self._cluster.get()
        groups: dict[str, tuple[redis.Redis, list[QueueRef]]] = {}
        for q in queues:
            slot = queue_slot(q)
            if slot is None:
                raise ValueError(f"queue {q.name!r} has keys in several hash slots: it cannot run on a Cluster")
            node = cluster.nodes_manager.get_node_from_slot(slot)
            group = groups.get(node.name)
            if group is None:  # a client per node, not per queue: 10,000 queues sit on a few nodes
                group = groups[node.name] = (cluster.get_redis_connection(node), [])
            group[1].append(q)
        return groups

    def discover(self) -> list[QueueRef]:
        nodes = self._primaries()
        found: list[QueueRef] = []
        spanning: list[QueueRef] = []
        for prefix in self.spec.prefixes:
            names = {name for _node, client in nodes for name in discover_queue_names(client, prefix)}
            for queue in (QueueRef(self.spec.name, prefix, name) for name in sorted(names)):
                (found if queue_slot(queue) is not None else spanning).append(queue)
        self._spanning = (time.monotonic(), spanning)
        return found

    def spanning_slots(self) -> list[QueueRef]:
        """The queues whose keys span hash slots (no hash tag: BullMQ cannot run them here, and
        ``discover`` leaves them out), from the last discovery if recent, else a new one."""
        if self._spanning is None or time.monotonic() - self._spanning[0] > SPANNING_MAX_AGE_S:
            with self.errors():
                self.discover()
        assert self._spanning is not None
        return self._spanning[1]

    def queue_exists(self, queue: QueueRef) -> bool:
        if queue_slot(queue) is None:
            return False
        # The keys discovery looks for, one at a time: a queue has one or both (queues/redis/discovery.py).
        client = self._cluster.get()
        return bool(client.exists(queue.key("meta")) or client.exists(queue.key("events")))

    def snapshots(self, queues: list[QueueRef]) -> list[QueueSnapshot]:
        by_queue: dict[QueueRef, QueueSnapshot] = {}
        # Every primary's round trips sent before any is read: the primaries work side by side.
        read_all = functools.partial(read_snapshots_side_by_side, per_slot=True)
        for node_queues, snapshots in self.all_nodes(queues, read_all):
            by_queue.update(zip(node_queues, snapshots))
        return [by_queue[q] for q in queues]

    def per_node(
        self, queues: list[QueueRef], read: Callable[[redis.Redis, list[QueueRef]], T]
    ) -> list[tuple[list[QueueRef], T]]:
        """``read(node_client, its_queues)`` for each primary owning some of ``queues`` (for
        what a cluster client cannot send as one: a ``MULTI``, or an ``MGET`` in a pipeline)."""
        return self.all_nodes(queues, lambda groups: [read(client, qs) for client, qs in groups])

    def all_nodes(
        self, queues: list[QueueRef], read_all: Callable[[list[tuple[redis.Redis, list[QueueRef]]]], list[T]]
    ) -> list[tuple[list[QueueRef], T]]:
        """``read_all`` of the primaries owning some of ``queues``, each as (a client of that node,
        its queues); a result per node, beside that node's queues."""

        def attempt() -> list[tuple[list[QueueRef], T]]:
            groups = list(self._by_node(queues).values())
            return list(zip([qs for _client, qs in groups], read_all(groups), strict=True))

        try:
            return attempt()
        except (redis.exceptions.MovedError, redis.exceptions.AskError):
            # A slot moved since the map was read (resharding, failover): read the map again.
            self._cluster.get().nodes_manager.initialize()
            return attempt()

    def workers(self, queues: list[QueueRef]) -> dict[QueueRef, list[Worker]]:
        out: dict[QueueRef, list[Worker]] = {}
        for client, node_queues in self._by_node(queues).values():
            out.update(workers_by_queue(client.client_list(), node_queues, db=0))
        return {q: out.get(q, []) for q in queues}

    def events_follower(self, *, block_ms: int) -> ClusterEventsFollower:
        # Connections of its own, one per primary: XREAD BLOCK holds one for up to block_ms.
        # A new follower (first, or after a lost connection) reads the slot map afresh.
        cluster = self._cluster.get()
        cluster.nodes_manager.initialize()
        timeout = block_ms / 1000 + FOLLOWER_SOCKET_MARGIN_S
        owners = _FollowerNodes(cluster, self._cluster.options, socket_timeout=timeout)
        follower = ClusterEventsFollower(owners, block_ms=block_ms)
        follower.connected([node.name for node in cluster.get_primaries()])
        return follower

    def errors(self):
        return cluster_errors(self.spec.name)

    def close(self) -> None:
        self._cluster.close()


@contextmanager
def cluster_errors(connection: str) -> Iterator[None]:
    """redis-py's cluster failures as ``SourceUnavailable`` (then its node errors, as on one node)."""
    with redis_errors(connection):
        try:
            yield
        except redis.exceptions.ClusterDownError as exc:  # a ResponseError: caught before it
            raise SourceUnavailable(connection, f"the Redis Cluster is down: {describe(exc)}") from None
        except redis.cluster.RedisClusterException as exc:  # not a RedisError at all
            raise SourceUnavailable(connection, f"the Redis Cluster cannot be read: {describe(exc)}") from None
