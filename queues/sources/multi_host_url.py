"""The shape shared by the URLs that list several hosts (``redis+cluster://``,
``redis+sentinel://``): ``scheme://[user:password@]host:port[,host:port…][/path][?query]``.

``urllib.parse`` cannot read them (a port of ``7000,h2``), so the parts are split here, once:
each kind then says what its path and query may hold. Every ``ValueError`` says what is wrong
without quoting the password.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote


@dataclass(frozen=True)
class MultiHostUrl:
    scheme: str  # lower-cased
    username: str | None
    password: str | None
    hosts: list[tuple[str, int]]
    path: str  # without its leading "/"
    query: str


def split_multi_host_url(url: str, schemes: tuple[str, ...], *, default_port: int) -> MultiHostUrl:
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in schemes:
        raise ValueError("expected " + " or ".join(f"{s}://" for s in schemes))
    # The user information runs to the last "@" (a password may hold "@", "/", "?" or "#").
    at = rest.rfind("@")
    userinfo, hosts = (rest[:at], rest[at + 1 :]) if at != -1 else ("", rest)
    hosts = hosts.partition("#")[0]
    hosts, _, query = hosts.partition("?")
    hosts, _, path = hosts.partition("/")
    username = password = None
    if userinfo:
        user, colon, secret = userinfo.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if colon else None
    return MultiHostUrl(
        scheme=scheme,
        username=username,
        password=password,
        hosts=[host_port(part, default_port) for part in hosts.split(",")],
        path=path,
        query=query,
    )


def host_port(part: str, default_port: int) -> tuple[str, int]:
    """``host:port``, ``[IPv6]:port`` or ``host`` (then ``default_port``)."""
    part = part.strip()
    if not part:
        raise ValueError("an empty host in the list of nodes")
    if part.startswith("["):  # [IPv6]:port
        host, bracket, port = part[1:].partition("]")
        if not bracket or (port and not port.startswith(":")):
            raise ValueError("a malformed [IPv6] host")
        port = port[1:]
    else:
        host, _, port = part.rpartition(":") if ":" in part else (part, "", "")
    if not host:
        raise ValueError("a node without a host")
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise ValueError("a node port must be a number from 1 to 65535")
    return host, int(port) if port else default_port
