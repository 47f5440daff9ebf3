"""Which pages may open a websocket: the one rule, and the ASGI guard that applies it.

Browsers send cookies with a websocket handshake whatever page opens it, and a websocket is not
subject to CORS: the ``Origin`` header is the only thing that tells Queuewatch's own pages from
another site's. An origin is the scheme, the host *and* the port, so all three are compared:
``http://127.0.0.1:9999`` (another program on the same machine) and ``https://…`` for a plain
``http://`` site are other origins.

A socket is accepted when its ``Origin`` is

* the dashboard's own origin, as the handshake request names it: the ``Host`` header (which must
  be in ``ALLOWED_HOSTS``, as for every page) and the scheme the browser used: ``https`` when the
  handshake came over TLS, or, behind a TLS-terminating proxy trusted with
  ``QUEUEWATCH_TRUST_X_FORWARDED_PROTO`` (``SECURE_PROXY_SSL_HEADER``), when the proxy says so;
* or one of ``CSRF_TRUSTED_ORIGINS`` (``https://queues.example.com``, or
  ``https://*.example.com`` for its sub-domains): the origins whose forms Django accepts.
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import is_same_domain, split_domain_port, validate_host

DEFAULT_PORTS = {"http": 80, "https": 443}


class Origin(NamedTuple):
    scheme: str
    host: str
    port: int


def parse_origin(text: str) -> Origin | None:
    """``scheme://host[:port]`` with the scheme's default port filled in; None when it is not
    an http(s) origin (``null``, a file, garbage)."""
    try:
        parts = urlsplit(text.strip().lower())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return Origin(parts.scheme, parts.hostname, port or DEFAULT_PORTS[parts.scheme])


def own_origin(scope) -> Origin | None:
    """The dashboard's origin as this handshake names it; None when its ``Host`` is not allowed."""
    headers = _headers(scope)
    domain, port = split_domain_port(headers.get("host", ""))
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:  # as Django's request.get_host()
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    if not domain or not validate_host(domain, allowed):
        return None
    scheme = "https" if _is_secure(scope, headers) else "http"
    try:
        return Origin(scheme, domain.strip("[]"), int(port) if port else DEFAULT_PORTS[scheme])
    except ValueError:
        return None


def origin_allowed(scope) -> bool:
    """The rule (module docstring)."""
    own = own_origin(scope)
    origin = parse_origin(_headers(scope).get("origin", ""))
    if own is None or origin is None:
        return False
    return origin == own or any(_trusted(origin, entry) for entry in settings.CSRF_TRUSTED_ORIGINS)


def _trusted(origin: Origin, entry: str) -> bool:
    if "*" not in entry:
        return parse_origin(entry) == origin
    pattern = parse_origin(entry.replace("*", "wildcard", 1))  # a parsable stand-in for the star
    if pattern is None:
        return False
    suffix = pattern.host.replace("wildcard", "", 1)  # ".example.com": the domain and its sub-domains
    return (pattern.scheme, pattern.port) == (origin.scheme, origin.port) and is_same_domain(origin.host, suffix)


def _is_secure(scope, headers: dict[str, str]) -> bool:
    if scope.get("scheme") in ("wss", "https"):
        return True
    proxy_header = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if not proxy_header:
        return False
    meta_name, secure_value = proxy_header
    name = meta_name.removeprefix("HTTP_").replace("_", "-").lower()
    # As Django's HttpRequest.is_secure(): a proxy chain may list several values, the first is the client's.
    return headers.get(name, "").split(",")[0].strip() == secure_value


def _headers(scope) -> dict[str, str]:
    return {name.decode("latin1").lower(): value.decode("latin1") for name, value in scope.get("headers", [])}


class SameOriginWebsockets:
    """ASGI guard for the websocket router: a handshake from any other origin is refused (HTTP
    403) before a session is even read."""

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and not origin_allowed(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
