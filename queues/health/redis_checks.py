"""Connection-level checks: pure functions of one connection's ``ServerFacts``."""

from __future__ import annotations

from ..text import to_int
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
    return tuple(parts)


def check_reachable(connection: str, error: str | None) -> CheckResult:
    if error:
        return CheckResult("redis.reachable", FAIL, connection, f"Cannot reach Redis: {error}.")
    return CheckResult("redis.reachable", PASS, connection, "Redis answers.")


def check_eviction_policy(connection: str, server: ServerFacts) -> CheckResult:
    policy = server.config.get("maxmemory-policy") or server.info.get("maxmemory_policy")
    source = "CONFIG" if server.config.get("maxmemory-policy") else "INFO"
    if not policy:
        return CheckResult("redis.eviction_policy", UNKNOWN, connection,
                           "The server does not report its maxmemory-policy (CONFIG refused and INFO has no "
                           "maxmemory_policy); verify it is noeviction in your provider's settings.",
                           details={"policy": None})
    if policy == "noeviction":
        return CheckResult("redis.eviction_policy", PASS, connection, "maxmemory-policy is noeviction.",
                           details={"policy": policy, "source": source})
    return CheckResult("redis.eviction_policy", FAIL, connection,
                       f"maxmemory-policy is {policy}: Redis may evict queue keys, and jobs vanish without failing.",
                       details={"policy": policy, "source": source})


def check_persistence(connection: str, server: ServerFacts) -> CheckResult:
    aof = server.config.get("appendonly")
    if aof is None and "aof_enabled" in server.info:
        aof = "yes" if str(server.info.get("aof_enabled")) == "1" else "no"
    save = server.config.get("save") if "save" in server.config else None
    details = {"appendonly": aof, "save": save, "config_available": not server.config_error}
    if aof == "yes":
        return CheckResult("redis.persistence", PASS, connection, "AOF persistence is on.", details=details)
    if save is None:
        # Without CONFIG, INFO does not tell whether RDB save points are configured.
        return CheckResult("redis.persistence", UNKNOWN, connection,
                           f"AOF is {_onoff(aof)}; RDB save points cannot be read because CONFIG is "
                           f"refused ({server.config_error or 'not available'}). Check your provider's "
                           "persistence setting.", details=details)
    if save.strip():
        return CheckResult("redis.persistence", PASS, connection, f"AOF is off; RDB snapshots are taken (save {save}).",
                           details=details)
    return CheckResult("redis.persistence", FAIL, connection,
                       "AOF is off and no RDB save points are set: a restart loses every waiting job.", details=details)


def _onoff(value: str | None) -> str:
    return {"yes": "on", "no": "off"}.get(value or "", "unknown")


def check_version(connection: str, server: ServerFacts) -> CheckResult:
    text = server.info.get("redis_version")
    version = parse_version(text)
    details = {"redis_version": text, "server_name": server.info.get("server_name")}
    for other in ("valkey_version", "dragonfly_version"):
        if other in server.info:
            details[other] = server.info[other]
    if version is None:
        return CheckResult("redis.version", UNKNOWN, connection, "The server does not report a Redis version.", details=details)
    if version < (5, 0, 0):
        return CheckResult("redis.version", FAIL, connection,
                           f"Redis {text} is older than 5.0.0: BullMQ 6 refuses to connect.", severity="critical",
                           details=details)
    if version < (6, 2, 0):
        return CheckResult("redis.version", FAIL, connection,
                           f"Redis {text} is older than 6.2.0, the minimum BullMQ recommends.", details=details)
    return CheckResult("redis.version", PASS, connection, f"Redis {text}.", details=details)


def check_memory(connection: str, server: ServerFacts, th: Thresholds = DEFAULT_THRESHOLDS) -> CheckResult:
    used = to_int(server.info.get("used_memory"))
    limit = to_int(server.config.get("maxmemory")) if "maxmemory" in server.config else to_int(server.info.get("maxmemory"))
    details = {"used_memory": used, "maxmemory": limit}
    if used is None or limit is None:
        return CheckResult("redis.memory", UNKNOWN, connection, "The server does not report its memory use and limit.",
                           details=details)
    if limit == 0:
        return CheckResult("redis.memory", PASS, connection,
                           f"No maxmemory is set ({format_bytes(used)} used): Redis grows until the machine runs out of memory.",
                           details=details)
    ratio = used / limit
    details["ratio"] = round(ratio, 4)
    text = f"{format_bytes(used)} of {format_bytes(limit)} maxmemory used ({ratio:.0%})."
    if ratio >= th.memory_critical:
        return CheckResult("redis.memory", FAIL, connection, text, severity="critical", details=details)
    if ratio >= th.memory_warning:
        return CheckResult("redis.memory", FAIL, connection, text, details=details)
    return CheckResult("redis.memory", PASS, connection, text, details=details)
