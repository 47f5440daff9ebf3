"""Refuse pathological ``Cookie`` headers before anything parses them.

Django (``django.http.cookie.parse_cookie``, also used by Channels for websockets) unquotes
each cookie value with ``http.cookies._unquote``, which on unpatched interpreters costs
quadratic time in the number of backslash escapes (CVE-2024-7592): one 16 KB cookie of
backslashes cost 0.4–0.9 s of CPU per request, with no login needed. A browser never sends such
a value: RFC 6265's cookie-octet excludes the backslash, and Queuewatch sets none. So a request
whose Cookie header holds more than ``MAX_BACKSLASHES`` of them is answered 400 (a websocket
handshake: refused) here, whatever the interpreter, at a cost linear in the header's length.
"""

from __future__ import annotations

import logging

from django.utils.translation import gettext as _

log = logging.getLogger("queuewatch.web")

MAX_BACKSLASHES = 16  # a few are harmless (linear); thousands are the attack


def pathological(headers) -> bool:
    return sum(value.count(b"\\") for name, value in headers if name.lower() == b"cookie") > MAX_BACKSLASHES


class CookieGuard:
    """ASGI middleware around the whole application (HTTP and websockets)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] in ("http", "websocket") and pathological(scope.get("headers", ())):
            log.info("refused a request with a pathological Cookie header from %s", (scope.get("client") or ("?",))[0])
            if scope["type"] == "websocket":
                # The handshake's connect message first (servers such as uvicorn wait for the app
                # to take it), then a close before accept: the handshake is refused (403).
                await receive()
                await send({"type": "websocket.close", "code": 1008})
                return
            body = _("Bad request: this Cookie header is malformed. Clear this site's cookies, then reload.").encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 400,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"cache-control", b"no-store")],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)
