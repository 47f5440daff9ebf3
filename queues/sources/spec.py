"""What one monitored connection is: a name, a URL and the key prefixes to look under.

The URL's scheme says which kind of source serves it (``queues.sources.factory``). The spec is
plain data; reading it from the environment is ``queues.connections``' job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit


@dataclass(frozen=True)
class ConnectionSpec:
    name: str
    url: str = field(repr=False)  # holds the password: never rendered, never logged
    prefixes: tuple[str, ...] = ("bull",)

    @property
    def display_url(self) -> str:
        return redact_url(self.url)

    @property
    def scheme(self) -> str:
        """The URL scheme, which picks the source kind (``redis``, ``rediss``, ``unix``, …)."""
        return urlsplit(self.url).scheme


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
