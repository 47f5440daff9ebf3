"""Connection-level checks: pure functions of one connection's ``ServerFacts``."""

from __future__ import annotations

from ..messages import _
from ..text import to_int
from . import redis_catalogue  # noqa: F401  (registers the redis.* kinds these checks report)
from .facts import ServerFacts
from .results import DEFAULT_THRESHOLDS, FAIL, PASS, UNKNOWN, CheckResult, Thresholds
from .wording import format_bytes


def parse_version(text: str | None) -> tuple[int, int, int] | None:
    if not text:
        return None
    parts = []
    for piece in str(text).split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            return None
        parts.append(int(digits))
    while len(parts) < 3:
        parts.append(0)
    major, minor, patch = parts[:3]
    return major, minor, patch


def check_reachable(connection: str, error: str | None) -> CheckResult:
    if error:
        return CheckResult("redis.reachable", FAIL, connection, _("Cannot reach Redis: {error}.", error=error))
    return CheckResult("redis.reachable", PASS, connection, _("Redis answers."))


def check_eviction_policy(connection: str, server: ServerFacts) -> CheckResult:
    policy = server.config.get("maxmemory-policy") or server.info.get("maxmemory_policy")
    source = "CONFIG" if server.config.get("maxmemory-policy") else "INFO"
    if not policy:
        return CheckResult(
            "redis.eviction_policy",
            UNKNOWN,
            connection,
            _(
                "The server does not report its maxmemory-policy (CONFIG refused and INFO has no "
                "maxmemory_policy); verify it is noeviction in your provider's settings."
            ),
            details={"policy": None},
        )
    if policy == "noeviction":
        return CheckResult(
            "redis.eviction_policy",
            PASS,
            connection,
            _("maxmemory-policy is noeviction."),
            details={"policy": policy, "source": source},
        )
    return CheckResult(
        "redis.eviction_policy",
        FAIL,
        connection,
        _("maxmemory-policy is {policy}: Redis may evict queue keys, and jobs vanish without failing.", policy=policy),
        details={"policy": policy, "source": source},
    )


def check_persistence(connection: str, server: ServerFacts) -> CheckResult:
    aof = server.config.get("appendonly")
    if aof is None and "aof_enabled" in server.info:
        aof = "yes" if str(server.info.get("aof_enabled")) == "1" else "no"
    save = server.config.get("save") if "save" in server.config else None
    details = {"appendonly": aof, "save": save, "config_available": not server.config_error}
    if aof == "yes":
        return CheckResult("redis.persistence", PASS, connection, _("AOF persistence is on."), details=details)
    if save is None:
        # Without CONFIG, INFO does not tell whether RDB save points are configured.
        return CheckResult(
            "redis.persistence",
            UNKNOWN,
            connection,
            _(
                "AOF is {state}; RDB save points cannot be read because CONFIG is refused ({error}). "
                "Check your provider's persistence setting.",
                state=_onoff(aof),
                error=server.config_error or _("not available"),
            ),
            details=details,
        )
    if save.strip():
        return CheckResult(
            "redis.persistence",
            PASS,
            connection,
            _("AOF is off; RDB snapshots are taken (save {save}).", save=save),
            details=details,
        )
    return CheckResult(
        "redis.persistence",
        FAIL,
        connection,
        _("AOF is off and no RDB save points are set: a restart loses every waiting job."),
        details=details,
    )


def _onoff(value: str | None) -> str:
    return {"yes": _("on"), "no": _("off")}.get(value or "", _("unknown"))


def check_version(connection: str, server: ServerFacts) -> CheckResult:
    text = server.info.get("redis_version")
    version = parse_version(text)
    details = {"redis_version": text, "server_name": server.info.get("server_name")}
    for other in ("valkey_version", "dragonfly_version"):
        if other in server.info:
            details[other] = server.info[other]
    if version is None:
        return CheckResult(
            "redis.version", UNKNOWN, connection, _("The server does not report a Redis version."), details=details
        )
    if version < (5, 0, 0):
        return CheckResult(
            "redis.version",
            FAIL,
            connection,
            _("Redis {version} is older than 5.0.0: BullMQ 6 refuses to connect.", version=text),
            severity="critical",
            details=details,
        )
    if version < (6, 2, 0):
        return CheckResult(
            "redis.version",
            FAIL,
            connection,
            _("Redis {version} is older than 6.2.0, the minimum BullMQ recommends.", version=text),
            details=details,
        )
    return CheckResult("redis.version", PASS, connection, _("Redis {version}.", version=text), details=details)


def check_memory(connection: str, server: ServerFacts, th: Thresholds = DEFAULT_THRESHOLDS) -> CheckResult:
    used = to_int(server.info.get("used_memory"))
    limit = (
        to_int(server.config.get("maxmemory")) if "maxmemory" in server.config else to_int(server.info.get("maxmemory"))
    )
    details: dict[str, int | float | None] = {"used_memory": used, "maxmemory": limit}
    if used is None or limit is None:
        return CheckResult(
            "redis.memory",
            UNKNOWN,
            connection,
            _("The server does not report its memory use and limit."),
            details=details,
        )
    if limit == 0:
        return CheckResult(
            "redis.memory",
            PASS,
            connection,
            _(
                "No maxmemory is set ({used} used): Redis grows until the machine runs out of memory.",
                used=format_bytes(used),
            ),
            details=details,
        )
    ratio = used / limit
    details["ratio"] = round(ratio, 4)
    text = _(
        "{used} of {limit} maxmemory used ({ratio}).",
        used=format_bytes(used),
        limit=format_bytes(limit),
        ratio=f"{ratio:.0%}",
    )
    if ratio >= th.memory_critical:
        return CheckResult("redis.memory", FAIL, connection, text, severity="critical", details=details)
    if ratio >= th.memory_warning:
        return CheckResult("redis.memory", FAIL, connection, text, details=details)
    return CheckResult("redis.memory", PASS, connection, text, details=details)
