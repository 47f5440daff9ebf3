"""Named monitored connections, configured from environment variables. Which URL schemes are
accepted, and what makes a URL well-formed, is decided by the source kinds in
``queues.sources.factory`` (today: a Redis node, ``redis://``, ``rediss://``, ``unix://``).

Every connection, of every kind, takes its URL from ``QUEUEWATCH_URL_<NAME>`` (or the file named
by ``QUEUEWATCH_URL_<NAME>_FILE``, for secrets); the connection named ``default`` from
``QUEUEWATCH_URL_DEFAULT``. More connections are declared with
``QUEUEWATCH_CONNECTIONS=orders,billing-eu``: the name is upper-cased and ``-`` becomes ``_``
(``QUEUEWATCH_URL_BILLING_EU``). Keeping one variable per URL avoids inventing a separator that
could also appear inside a URL. ``QUEUEWATCH_PREFIXES`` / ``QUEUEWATCH_PREFIXES_<NAME>`` list the
key prefixes to watch. ``QUEUEWATCH_CRON_TZ_<NAME>`` (else ``QUEUEWATCH_CRON_TZ``, for every
connection) names the zone the connection's Node workers run cron patterns without a ``tz`` in:
their process's local zone (``queues.scheduler_zone``).

The names from before other kinds existed, ``QUEUEWATCH_REDIS_URL`` (``default``) and
``QUEUEWATCH_REDIS_URL_<NAME>``, and their ``_FILE`` forms, still work; setting a connection's
URL under both names is an error, as either choice could be the wrong one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .cron import CronError
from .errors import ConfigurationError
from .scheduler_zone import check_configured
from .sources import ConnectionSpec, check_url, redact_url
from .sources.factory import default_prefixes, is_redis_node
from .sources.redis_cluster import RedisClusterSource
from .sources.redis_node import RedisNodeSource
from .sources.redis_sentinel import RedisSentinelSource, channel_layer_host, is_sentinel_url
from .sources.spec import url_scheme

__all__ = [
    "ConnectionSpec",
    "connection_specs_from_env",
    "dashboard_redis_url_from_env",
    "redact_url",
    "url_variables",
    "validate_url",
]

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
DEFAULT = "default"
URL_VAR = "QUEUEWATCH_URL_"
DASHBOARD_URL_VAR = "QUEUEWATCH_DASHBOARD_REDIS_URL"


def _suffix(name: str) -> str:
    return name.upper().replace("-", "_")


def url_variables(name: str) -> tuple[str, str]:
    """The variables naming connection ``name``'s URL: the current one, and its old alias."""
    return URL_VAR + _suffix(
        name
    ), "QUEUEWATCH_REDIS_URL" if name == DEFAULT else f"QUEUEWATCH_REDIS_URL_{_suffix(name)}"


def _set_form(env: Mapping[str, str], var: str) -> str | None:
    """``var`` or ``var_FILE``, whichever is set (``var`` is read first), else None."""
    return next((form for form in (var, var + "_FILE") if env.get(form)), None)


def _read(env: Mapping[str, str], var: str) -> str | None:
    if env.get(var):
        return env[var].strip()
    file_var = var + "_FILE"
    if env.get(file_var):
        try:
            with open(env[file_var], encoding="utf-8") as fh:
                return fh.read().strip()
        except OSError as exc:
            raise ConfigurationError(f"{file_var}: cannot read {env[file_var]!r}: {exc.strerror}") from exc
    return None


def _read_url(env: Mapping[str, str], name: str) -> tuple[str | None, str]:
    """Connection ``name``'s URL and the variable it came from (the current name when unset)."""
    current, alias = url_variables(name)
    set_current, set_alias = _set_form(env, current), _set_form(env, alias)
    if set_current and set_alias:
        raise ConfigurationError(
            f"{set_current} and {set_alias} both set the URL of connection '{name}': "
            f"keep {set_current} and remove {set_alias}, its old name."
        )
    var = alias if set_alias else current
    return _read(env, var), var


def parse_prefixes(raw: str | None, var: str, *, default: tuple[str, ...] = ("bull",)) -> tuple[str, ...]:
    if raw is None:
        return default
    prefixes = tuple(p.strip() for p in raw.split(",") if p.strip())
    if not prefixes:
        raise ConfigurationError(f"{var} is set but names no prefix (expected e.g. 'bull,{{app}}').")
    return prefixes


def cron_tz_from_env(env: Mapping[str, str], name: str) -> str:
    """The configured workers' zone of connection ``name`` ("" when neither variable is set)."""
    for var in (f"QUEUEWATCH_CRON_TZ_{_suffix(name)}", "QUEUEWATCH_CRON_TZ"):
        value = (env.get(var) or "").strip()
        if value:
            try:
                return check_configured(value)
            except CronError:
                raise ConfigurationError(
                    f"{var}: unknown time zone {value!r}; use the IANA name of the zone the Node "
                    "workers run in (their TZ), such as America/New_York or UTC."
                ) from None
    return ""


def validate_url(url: str, var: str) -> str:
    """The URL if some source kind serves its scheme and finds it well-formed (see
    ``queues.sources.factory``); a ``ConfigurationError`` naming ``var`` otherwise."""
    return check_url(url, var)


def _declared_names(env: Mapping[str, str]) -> list[str]:
    """``default`` and the names in ``QUEUEWATCH_CONNECTIONS``, checked to be valid, distinct,
    and each configured by variables of its own."""
    names = [DEFAULT]
    for raw_name in (env.get("QUEUEWATCH_CONNECTIONS") or "").split(","):
        name = raw_name.strip().lower()
        if not name:
            continue
        if not NAME_RE.match(name) or name == DEFAULT:
            raise ConfigurationError(
                f"QUEUEWATCH_CONNECTIONS: {raw_name!r} is not a valid connection name "
                "(lowercase letters, digits, '-' and '_'; 'default' is reserved)."
            )
        if name in names:
            raise ConfigurationError("QUEUEWATCH_CONNECTIONS names a connection twice.")
        names.append(name)
    # 'billing-eu' and 'billing_eu' would read the same variable; 'orders-file' would read
    # the _FILE form of 'orders'.
    owner: dict[str, str] = {}
    for name in names:
        for var in url_variables(name):
            for form in (var, var + "_FILE"):
                if owner.setdefault(form, name) != name:
                    raise ConfigurationError(
                        f"QUEUEWATCH_CONNECTIONS: connections '{owner[form]}' and '{name}' would both "
                        f"be configured by {form}; rename one."
                    )
    return names


def _refuse_undeclared(env: Mapping[str, str], names: list[str]) -> None:
    """A ``QUEUEWATCH_URL_<NAME>`` for no declared connection is a typo or a forgotten
    declaration: either way the operator expects a connection that would silently not exist."""
    known = {form for name in names for form in (url_variables(name)[0], url_variables(name)[0] + "_FILE")}
    stray = sorted(var for var in env if var.startswith(URL_VAR) and env[var] and var not in known)
    if stray:
        raise ConfigurationError(
            f"{stray[0]} is set but no connection declared in QUEUEWATCH_CONNECTIONS reads it: "
            "add the connection's name there, or remove the variable."
        )


def connection_specs_from_env(env: Mapping[str, str], default_url: str | None) -> list[ConnectionSpec]:
    """Build the list of monitored connections. ``default_url`` is used when the default
    connection's URL is unset (the embedded demo sets it to its private server)."""
    names = _declared_names(env)
    _refuse_undeclared(env, names)
    specs = []
    for name in names:
        url, url_var = _read_url(env, name)
        if name == DEFAULT:
            url = url or default_url
            if not url:
                continue  # no default connection: the others, if any, are all there is
        elif not url:
            raise ConfigurationError(
                f"Connection '{name}' is declared in QUEUEWATCH_CONNECTIONS but {url_var} is not set."
            )
        prefix_var = "QUEUEWATCH_PREFIXES" if name == DEFAULT else f"QUEUEWATCH_PREFIXES_{_suffix(name)}"
        url = validate_url(url, url_var)
        specs.append(
            ConnectionSpec(
                name=name,
                url=url,
                prefixes=parse_prefixes(env.get(prefix_var), prefix_var, default=default_prefixes(url)),
                cron_tz=cron_tz_from_env(env, name),
            )
        )
    return specs


def dashboard_redis_url_from_env(env: Mapping[str, str], specs: list[ConnectionSpec]) -> str | None:
    """Queuewatch's own Redis (channel layer, leader lock, caches): ``QUEUEWATCH_DASHBOARD_REDIS_URL``,
    else the first monitored connection that is a Redis node (``default`` first), else None when
    nothing is monitored (the dashboard then keeps live updates in memory). Monitored
    connections none of which is a Redis node leave nothing to default to: the variable is then
    required."""
    explicit = _read(env, DASHBOARD_URL_VAR)
    if explicit:
        if url_scheme(explicit) in RedisClusterSource.schemes:
            raise ConfigurationError(
                f"{DASHBOARD_URL_VAR} cannot be a Redis Cluster: Queuewatch's own data (live updates, "
                "the monitor's leader lock, caches) needs one Redis, a single node or a primary behind "
                "Sentinel (redis+sentinel://). A Cluster can still be a monitored connection."
            )
        return check_url(explicit, DASHBOARD_URL_VAR, kinds=[RedisNodeSource, RedisSentinelSource])
    nodes = [spec for spec in specs if is_redis_node(spec)]
    if nodes:
        return nodes[0].url
    if specs:
        schemes = ", ".join(f"{scheme}://" for scheme in RedisNodeSource.schemes)
        raise ConfigurationError(
            f"{DASHBOARD_URL_VAR} is not set, and no connection is a Redis node ({schemes}) that "
            "Queuewatch could keep its own data in (live updates, the monitor's leader lock, "
            f"caches): set {DASHBOARD_URL_VAR} to a Redis for it."
        )
    return None


def channel_layer_hosts(dashboard_url: str) -> list[dict]:
    """channels_redis' ``hosts`` for Queuewatch's own Redis: its URL, or the Sentinel form for a
    ``redis+sentinel://`` URL. No socket timeout: the blocking receive of an idle websocket must
    be allowed to wait indefinitely (redis-py 8's default of 5 s would drop it)."""
    host = channel_layer_host(dashboard_url) if is_sentinel_url(dashboard_url) else {"address": dashboard_url}
    return [{**host, "socket_timeout": None}]
