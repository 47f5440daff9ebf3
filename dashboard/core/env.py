"""Reading settings from the environment with helpers that fail loudly on bad values.

A typo in a deployment variable should stop start-up with a message naming the variable, not
surface later as odd behaviour.
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured


def env_str(name: str, default: str | None = None) -> str | None:
    """A string from ``NAME`` or from the file named by ``NAME_FILE`` (for secrets)."""
    if os.environ.get(name):
        return os.environ[name]
    path = os.environ.get(name + "_FILE")
    if path:
        try:
            with open(path, encoding="utf-8") as fh:
                return fh.read().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE: cannot read {path!r}: {exc.strerror}") from exc
    return default


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be true or false (got {raw!r}).")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer (got {raw!r}).") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum} (got {value}).")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_networks(name: str) -> list:
    """Comma-separated CIDRs (``10.0.0.0/8,127.0.0.1,::1``) as ``ipaddress`` networks; a bare
    address is a /32 (or /128)."""
    import ipaddress

    networks = []
    for item in env_list(name, []):
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {item!r} is not an IP address or CIDR network.") from None
    return networks
