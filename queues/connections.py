"""Named monitored connections, configured from environment variables. Which URL schemes are
accepted, and what makes a URL well-formed, is decided by the source kinds in
``queues.sources.factory`` (today: a Redis node, ``redis://``, ``rediss://``, ``unix://``).

``QUEUEWATCH_REDIS_URL`` and ``QUEUEWATCH_PREFIXES`` configure the connection named ``default``.
More connections are declared with ``QUEUEWATCH_CONNECTIONS=orders,billing`` plus
``QUEUEWATCH_REDIS_URL_ORDERS`` / ``QUEUEWATCH_PREFIXES_ORDERS`` (and so on) per name. Keeping
one variable per URL avoids inventing a separator that could also appear inside a URL.
``QUEUEWATCH_REDIS_URL_FILE`` (or ``..._<NAME>_FILE``) reads the URL from a file, for secrets.
"""

from __future__ import annotations

import re
from typing import Mapping

import redis

from .errors import ConfigurationError
from .sources import ConnectionSpec, check_url, redact_url
from .sources.redis_node import redis_client

__all__ = ["ConnectionSpec", "client_for", "connection_specs_from_env", "redact_url", "validate_url"]

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")


def _read(env: Mapping[str, str], var: str) -> str | None:
    if env.get(var):
        return env[var].strip()
    file_var = var + "_FILE"
    if env.get(file_var):
        try:
            with open(env[file_var], encoding="utf-8") as fh:
                return fh.read().strip()
        except OSError as exc:
            raise ConfigurationError(f"{file_var}: cannot read {env[file_var]!r}: {exc.strerror}")
    return None


def parse_prefixes(raw: str | None, var: str) -> tuple[str, ...]:
    if raw is None:
        return ("bull",)
    prefixes = tuple(p.strip() for p in raw.split(",") if p.strip())
    if not prefixes:
        raise ConfigurationError(f"{var} is set but names no prefix (expected e.g. 'bull,{{app}}').")
    return prefixes


def validate_url(url: str, var: str) -> str:
    """The URL if some source kind serves its scheme and finds it well-formed (see
    ``queues.sources.factory``); a ``ConfigurationError`` naming ``var`` otherwise."""
    return check_url(url, var)


def connection_specs_from_env(env: Mapping[str, str], default_url: str | None) -> list[ConnectionSpec]:
    """Build the list of monitored connections. ``default_url`` is used when
    ``QUEUEWATCH_REDIS_URL`` is unset (the embedded demo sets it to its private server)."""
    specs = []
    url = _read(env, "QUEUEWATCH_REDIS_URL") or default_url
    if url:
        specs.append(
            ConnectionSpec(
                name="default",
                url=validate_url(url, "QUEUEWATCH_REDIS_URL"),
                prefixes=parse_prefixes(env.get("QUEUEWATCH_PREFIXES"), "QUEUEWATCH_PREFIXES"),
            )
        )
    for raw_name in (env.get("QUEUEWATCH_CONNECTIONS") or "").split(","):
        name = raw_name.strip().lower()
        if not name:
            continue
        if not NAME_RE.match(name) or name == "default":
            raise ConfigurationError(
                f"QUEUEWATCH_CONNECTIONS: {raw_name!r} is not a valid connection name "
                "(lowercase letters, digits, '-' and '_'; 'default' is reserved)."
            )
        suffix = name.upper().replace("-", "_")
        url_var = f"QUEUEWATCH_REDIS_URL_{suffix}"
        extra_url = _read(env, url_var)
        if not extra_url:
            raise ConfigurationError(f"Connection '{name}' is declared but {url_var} is not set.")
        prefix_var = f"QUEUEWATCH_PREFIXES_{suffix}"
        specs.append(
            ConnectionSpec(
                name=name,
                url=validate_url(extra_url, url_var),
                prefixes=parse_prefixes(env.get(prefix_var), prefix_var),
            )
        )
    if len({s.name for s in specs}) != len(specs):
        raise ConfigurationError("QUEUEWATCH_CONNECTIONS names a connection twice.")
    return specs


def client_for(spec: ConnectionSpec, *, socket_timeout: float = 5.0, connect_timeout: float = 2.0) -> redis.Redis:
    """A pooled Redis client for ``spec``. Kept for callers not yet moved to sources; new code
    asks ``source_for(spec)`` (``registry.source(name)``) instead, which also works for kinds
    that are not a Redis node."""
    return redis_client(spec.url, socket_timeout=socket_timeout, connect_timeout=connect_timeout)
