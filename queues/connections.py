"""Named monitored Redis connections, configured from environment variables.

``QUEUEWATCH_REDIS_URL`` and ``QUEUEWATCH_PREFIXES`` configure the connection named ``default``.
More connections are declared with ``QUEUEWATCH_CONNECTIONS=orders,billing`` plus
``QUEUEWATCH_REDIS_URL_ORDERS`` / ``QUEUEWATCH_PREFIXES_ORDERS`` (and so on) per name. Keeping
one variable per URL avoids inventing a separator that could also appear inside a URL.
``QUEUEWATCH_REDIS_URL_FILE`` (or ``..._<NAME>_FILE``) reads the URL from a file, for secrets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping
from urllib.parse import urlsplit, urlunsplit

import redis

from .errors import ConfigurationError

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")


@dataclass(frozen=True)
class ConnectionSpec:
    name: str
    url: str = field(repr=False)  # holds the password: never rendered, never logged
    prefixes: tuple[str, ...] = ("bull",)

    @property
    def display_url(self) -> str:
        return redact_url(self.url)


def redact_url(url: str) -> str:
    """The URL with any password replaced, safe for pages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = f"{user}:***@{host}" if user else f":***@{host}"
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


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
    scheme = urlsplit(url).scheme
    if scheme not in ("redis", "rediss", "unix"):
        raise ConfigurationError(
            f"{var} must be a redis://, rediss:// or unix:// URL (got scheme {scheme!r})."
        )
    try:
        redis.connection.parse_url(url)
    except ValueError as exc:
        raise ConfigurationError(f"{var} is not a valid Redis URL: {exc}") from None
    return url


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
    """A pooled client returning bytes (job hashes may hold anything), with timeouts so a slow
    or unreachable Redis gives a clear error instead of a hung page."""
    return redis.Redis.from_url(
        spec.url,
        decode_responses=False,
        socket_timeout=socket_timeout,
        socket_connect_timeout=connect_timeout,
        health_check_interval=30,
        client_name="queuewatch",
    )
