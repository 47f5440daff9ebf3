"""A Redis primary found through Redis Sentinel (``redis+sentinel://``, ``rediss+sentinel://``).

``redis+sentinel://[user:password@]host:port[,host:port…]/<master-name>[/<db>][?query]``

- the hosts are the **Sentinels** (port 26379 when left out), not the Redis servers: the
  Sentinels are asked which server is the primary of ``<master-name>``;
- ``user:password`` are the **primary's** credentials (the ones BullMQ's workers use for their
  data); Sentinels that require a password of their own take it from the query:
  ``?sentinel_password=…`` (and ``&sentinel_username=…`` with ACLs); both are hidden wherever the
  URL is shown (``spec.redact_url``);
- ``rediss+sentinel://`` speaks TLS to the Sentinels and to the primary; it accepts
  ``ssl_cert_reqs`` (none, optional, required) and ``ssl_ca_certs`` (a file) in the query.

Everything else is the single-node kind: redis-py's ``Sentinel(...).master_for(name)`` is a
``redis.Redis`` whose pool asks the Sentinels for the primary's address on every new
connection, so this kind only overrides ``RedisNodeSource._connect`` and every facet, reader and
the events follower run on the current primary. After a failover the old primary's connections
fail (or answer ``READONLY``, which redis-py turns into a lost connection): the caller sees an
outage for the few seconds the Sentinels take to promote a replica, then the next connection goes
to the new primary. The events follower keeps its stream cursors across that reconnect
(``dashboard.monitor.intake.FollowerThread``), and the streams were replicated with the data, so
it resumes where it was.
"""

from __future__ import annotations

from typing import Any, ClassVar
from urllib.parse import parse_qsl, unquote

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.sentinel import Sentinel

from ..redis.client_name import name_connections_when_allowed
from .multi_host_url import split_multi_host_url
from .redis_node import RedisNodeSource
from .spec import ConnectionSpec, url_scheme

DEFAULT_SENTINEL_PORT = 26379
CONNECT_TIMEOUT_S = 2.0
TLS_QUERY: dict[str, tuple[str, ...]] = {"ssl_cert_reqs": ("none", "optional", "required"), "ssl_ca_certs": ()}
SENTINEL_QUERY = ("sentinel_username", "sentinel_password")


def parse_sentinel_url(url: str) -> dict[str, Any]:
    """What a ``redis+sentinel://`` URL names: ``sentinels`` [(host, port)], ``master_name``,
    ``db``, and the keyword arguments for the primary (``primary``) and for the Sentinels
    (``sentinel``). ``ValueError`` saying what is wrong, never quoting a password."""
    parts = split_multi_host_url(url, RedisSentinelSource.schemes, default_port=DEFAULT_SENTINEL_PORT)
    segments = parts.path.strip("/").split("/") if parts.path.strip("/") else []
    if not segments or not segments[0]:
        raise ValueError("the path must name the master the Sentinels monitor (…/mymaster)")
    if len(segments) > 2:
        raise ValueError("the path is /<master-name>[/<db>]")
    db = segments[1] if len(segments) == 2 else "0"
    if not db.isdigit():
        raise ValueError("the database after the master name must be a number")
    tls = parts.scheme == "rediss+sentinel"
    primary: dict[str, Any] = {"username": parts.username, "password": parts.password}
    sentinel: dict[str, Any] = {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key in SENTINEL_QUERY:
            sentinel[key.removeprefix("sentinel_")] = value or None
        elif key in TLS_QUERY and tls:
            if TLS_QUERY[key] and value not in TLS_QUERY[key]:
                raise ValueError(f"{key} must be one of {', '.join(TLS_QUERY[key])}")
            primary[key] = sentinel[key] = value
        else:
            accepted = [*SENTINEL_QUERY, *(TLS_QUERY if tls else ())]
            raise ValueError(f"unsupported parameter {key!r} ({parts.scheme}:// accepts {', '.join(accepted)})")
    if tls:
        primary["ssl"] = sentinel["ssl"] = True
    return {
        "sentinels": parts.hosts,
        "master_name": unquote(segments[0]),
        "db": int(db),
        "primary": {k: v for k, v in primary.items() if v is not None},
        "sentinel": sentinel,
    }


def sentinel_manager(options: dict[str, Any], *, socket_timeout: float) -> Sentinel:
    """redis-py's ``Sentinel`` for parsed ``options``: builds without connecting. The Sentinels
    get their own credentials (never the primary's), short timeouts and no retries: a Sentinel
    that does not answer is skipped for the next one at once (redis-py would otherwise retry it
    ten times with back-off, seconds per Sentinel down)."""
    return Sentinel(
        options["sentinels"],
        sentinel_kwargs={
            **options["sentinel"],
            "socket_timeout": min(socket_timeout, 5.0),
            "socket_connect_timeout": CONNECT_TIMEOUT_S,
            "retry": Retry(NoBackoff(), 0),
        },
    )


def primary_client(manager: Sentinel, options: dict[str, Any], *, socket_timeout: float) -> redis.Redis:
    """A pooled client of the current primary, as ``redis_node.redis_client`` makes for a node
    (bytes, timeouts, named ``queuewatch`` where the server allows it); each new connection asks
    the Sentinels where the primary is."""
    client = manager.master_for(
        options["master_name"],
        db=options["db"],
        decode_responses=False,
        socket_timeout=socket_timeout,
        socket_connect_timeout=CONNECT_TIMEOUT_S,
        health_check_interval=30,
        **options["primary"],
    )
    return name_connections_when_allowed(client)


class RedisSentinelSource(RedisNodeSource):
    kind: ClassVar[str] = "redis-sentinel"
    label: ClassVar[str] = "Redis Sentinel"
    schemes: ClassVar[tuple[str, ...]] = ("redis+sentinel", "rediss+sentinel")

    def __init__(self, spec: ConnectionSpec, *, socket_timeout: float = 5.0):
        self._options = parse_sentinel_url(spec.url)
        # One manager (its clients of the Sentinels) for the source's client and its followers.
        self._sentinel = sentinel_manager(self._options, socket_timeout=socket_timeout)
        super().__init__(spec, socket_timeout=socket_timeout)

    def _connect(self, *, socket_timeout: float) -> redis.Redis:
        return primary_client(self._sentinel, self._options, socket_timeout=socket_timeout)

    @classmethod
    def check_url(cls, url: str) -> None:
        parse_sentinel_url(url)

    def close(self) -> None:
        super().close()
        self._sentinel.close()


# --- Queuewatch's own Redis behind Sentinel (``QUEUEWATCH_DASHBOARD_REDIS_URL``) ---------------


def is_sentinel_url(url: str) -> bool:
    return url_scheme(url) in RedisSentinelSource.schemes


def sentinel_primary_client(url: str, *, socket_timeout: float) -> redis.Redis:
    """A pooled client of the current primary a ``redis+sentinel://`` URL names (its Sentinels
    asked on every new connection): the dashboard's own Redis client when it runs behind
    Sentinel."""
    options = parse_sentinel_url(url)
    manager = sentinel_manager(options, socket_timeout=socket_timeout)
    return primary_client(manager, options, socket_timeout=socket_timeout)


def channel_layer_host(url: str) -> dict[str, Any]:
    """channels_redis' ``hosts`` entry for a ``redis+sentinel://`` URL (its Sentinel form:
    ``sentinels``, ``master_name``, ``sentinel_kwargs`` and the primary's connection options)."""
    options = parse_sentinel_url(url)
    return {
        "sentinels": options["sentinels"],
        "master_name": options["master_name"],
        "sentinel_kwargs": {**options["sentinel"], "socket_timeout": 5.0, "socket_connect_timeout": CONNECT_TIMEOUT_S},
        "db": options["db"],
        **options["primary"],
    }
