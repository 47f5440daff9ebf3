"""Which source kind serves a connection, decided by its URL scheme, in one table.

Adding a kind is one module (a class following ``queues.sources.base.Source``) and one entry in
``SOURCE_KINDS``; nothing in the features changes.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import ConfigurationError
from .base import Source
from .postgres import PostgresSource
from .redis_cluster import RedisClusterSource
from .redis_node import RedisNodeSource
from .redis_sentinel import RedisSentinelSource
from .spec import ConnectionSpec, hide_url_secrets, url_scheme

SOURCE_KINDS: tuple[type[Source], ...] = (RedisNodeSource, RedisClusterSource, RedisSentinelSource, PostgresSource)
DEFAULT_PREFIXES = ("bull",)  # BullMQ's default key prefix


def kind_for_scheme(scheme: str) -> type[Source] | None:
    for kind in SOURCE_KINDS:
        if scheme in kind.schemes:
            return kind
    return None


def known_schemes() -> list[str]:
    return [scheme for kind in SOURCE_KINDS for scheme in kind.schemes]


def check_url(url: str, var: str, *, kinds: Iterable[type[Source]] | None = None) -> str:
    """``url`` if a source kind serves its scheme and finds it well-formed; otherwise a
    ``ConfigurationError`` naming the variable ``var`` (never the URL: it may hold a password).
    ``kinds`` narrows the kinds that may serve it (the dashboard's own Redis must be a node)."""
    allowed = tuple(SOURCE_KINDS if kinds is None else kinds)
    scheme = url_scheme(url)
    kind = kind_for_scheme(scheme)
    if kind not in allowed:
        schemes = [s for k in allowed for s in k.schemes]
        raise ConfigurationError(f"{var} must be {_one_of(schemes)} URL (got scheme {scheme!r}).")
    try:
        kind.check_url(url)
    except ValueError as exc:
        reason = hide_url_secrets(str(exc), url)
        raise ConfigurationError(f"{var} is not a valid {kind.label} URL: {reason}") from None
    return url


def default_prefixes(url: str) -> tuple[str, ...]:
    """The prefixes watched when the settings name none: the kind's own default where it has
    one (a ``default_prefixes(url)`` classmethod: PostgreSQL's schema), else BullMQ's ``bull``."""
    kind = kind_for_scheme(url_scheme(url))
    chooser = getattr(kind, "default_prefixes", None)
    return tuple(chooser(url)) if chooser is not None else DEFAULT_PREFIXES


def is_redis_node(spec: ConnectionSpec) -> bool:
    """Whether a single Redis node serves ``spec``: the kind Queuewatch's own data (channel
    layer, leader lock, caches) can also live in."""
    return kind_for_scheme(spec.scheme) is RedisNodeSource


def source_for(spec: ConnectionSpec, *, socket_timeout: float = 5.0) -> Source:
    """The source serving ``spec``. Specs from the environment were checked when settings
    loaded; one built in code with a scheme no kind serves fails here just as clearly."""
    kind = kind_for_scheme(spec.scheme)
    if kind is None:
        raise ConfigurationError(
            f"Connection '{spec.name}' must be {_one_of(known_schemes())} URL (got scheme {spec.scheme!r})."
        )
    return kind(spec, socket_timeout=socket_timeout)


def _one_of(schemes: list[str]) -> str:
    """'a redis://, rediss:// or unix://' — the wording the settings errors have always used."""
    urls = [f"{s}://" for s in schemes]
    return "a " + (", ".join(urls[:-1]) + " or " + urls[-1] if len(urls) > 1 else urls[0])
