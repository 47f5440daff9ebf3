"""Whether Queuewatch's own Redis (``QUEUEWATCH_DASHBOARD_REDIS_URL``, by default the first
monitored Redis node) is a server a monitored connection also names. Whoever can write to a
monitored Redis (every BullMQ producer and worker) can then write Queuewatch's keys: hold the
leader lock, delete cached fragments, fill the channel layer (docs/operations.md, "Trust
model"). The one home of that comparison; the settings compute it once, at start-up.

Servers are compared as their URLs name them, after parsing: host (case-insensitive, the
loopback names taken as one), port (6379 when absent) and database number; a unix socket by its
path and database. A Cluster connection is compared by its seed nodes (database 0); two Sentinel
URLs by their Sentinels, master name and database. A Sentinel URL and a node URL are not
compared: which node is the primary is known only by asking the Sentinels.
"""

from __future__ import annotations

from .sources.redis_cluster import RedisClusterSource, parse_cluster_url
from .sources.redis_node import RedisNodeSource, node_address
from .sources.redis_sentinel import RedisSentinelSource, parse_sentinel_url
from .sources.spec import ConnectionSpec, url_scheme

LOOPBACK = {"localhost", "127.0.0.1", "::1", "[::1]"}

Server = tuple[str | int, ...]


def _host(host: str | int) -> str:
    host = str(host).lower()
    return "localhost" if host in LOOPBACK else host


def servers_named(url: str) -> set[Server]:
    """The servers a URL names, each as a comparable tuple; empty for kinds that are not Redis
    (a PostgreSQL connection shares nothing with a Redis) or a URL that does not parse."""
    scheme = url_scheme(url)
    try:
        if scheme in RedisNodeSource.schemes:
            kind, where, *rest = node_address(url)
            return {(kind, _host(where) if kind == "tcp" else where, *rest)}
        if scheme in RedisClusterSource.schemes:
            nodes = parse_cluster_url(url)["startup_nodes"]
            return {("tcp", _host(node.host), int(node.port), 0) for node in nodes}
        if scheme in RedisSentinelSource.schemes:
            parsed = parse_sentinel_url(url)
            return {
                ("sentinel", _host(host), port, parsed["master_name"], parsed["db"])
                for host, port in parsed["sentinels"]
            }
    except ValueError:
        pass  # a URL the settings refuse anyway, with a message of their own
    return set()


def connections_sharing(dashboard_url: str | None, specs: list[ConnectionSpec]) -> list[str]:
    """The names of the monitored connections that name a server the dashboard Redis is on."""
    if not dashboard_url:
        return []
    mine = servers_named(dashboard_url)
    return [spec.name for spec in specs if mine & servers_named(spec.url)]
