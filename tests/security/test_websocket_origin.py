"""A websocket is opened only by Queuewatch's own pages: the Origin must match scheme, host and
port (another program on the same machine, or the https twin of an http site, is another
origin), or be one of the CSRF trusted origins. The handshake goes through the real ASGI
application with a logged-in session cookie, as a browser on the other page would send it."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from dashboard.asgi import application
from tests.support.live import session_headers

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

SITE_HOST = b"127.0.0.1:8000"  # the dashboard, served over plain http on port 8000


async def opens(client, user, origin: bytes, *, host: bytes = SITE_HOST, extra=(), scheme: str | None = None) -> bool:
    headers = await sync_to_async(session_headers)(client, user, origin=origin)
    headers = [(name, host if name == b"host" else value) for name, value in headers] + list(extra)
    comm = WebsocketCommunicator(application, "/ws/all/", headers=headers)
    if scheme:
        comm.scope["scheme"] = scheme
    connected, _ = await comm.connect(timeout=5)
    if connected:
        await comm.disconnect()
    return connected


async def test_the_exact_origin_is_accepted(live_setup, client, user):
    assert await opens(client, user, b"http://127.0.0.1:8000")


async def test_the_same_host_on_another_port_is_refused(live_setup, client, user):
    assert not await opens(client, user, b"http://127.0.0.1:9999")
    assert not await opens(client, user, b"http://127.0.0.1")  # port 80


async def test_the_same_host_and_port_over_another_scheme_is_refused(live_setup, client, user):
    assert not await opens(client, user, b"https://127.0.0.1:8000")


async def test_a_missing_or_opaque_origin_is_refused(live_setup, client, user):
    assert not await opens(client, user, b"null")
    assert not await opens(client, user, b"")


async def test_a_host_outside_allowed_hosts_is_refused_even_with_a_matching_origin(live_setup, client, user):
    assert not await opens(client, user, b"http://evil.example:8000", host=b"evil.example:8000")


async def test_behind_a_trusted_tls_proxy_the_origin_must_be_https(live_setup, client, user, settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    proxied = [(b"x-forwarded-proto", b"https")]
    host = b"127.0.0.1"
    assert await opens(client, user, b"https://127.0.0.1", host=host, extra=proxied)
    assert not await opens(client, user, b"http://127.0.0.1", host=host, extra=proxied)
    assert not await opens(client, user, b"https://127.0.0.1:8443", host=host, extra=proxied)
    # The header counts only when the proxy is trusted to set it.
    settings.SECURE_PROXY_SSL_HEADER = None
    assert not await opens(client, user, b"https://127.0.0.1", host=host, extra=proxied)


async def test_a_handshake_over_tls_expects_an_https_origin(live_setup, client, user):
    assert await opens(client, user, b"https://127.0.0.1:8000", scheme="wss")
    assert not await opens(client, user, b"http://127.0.0.1:8000", scheme="wss")


async def test_csrf_trusted_origins_are_accepted_with_their_own_scheme_and_port(live_setup, client, user, settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://queues.example.com", "https://*.ops.example.com:8443"]
    assert await opens(client, user, b"https://queues.example.com")
    assert await opens(client, user, b"https://queues.example.com:443")
    assert not await opens(client, user, b"http://queues.example.com")
    assert not await opens(client, user, b"https://queues.example.com:8443")
    assert await opens(client, user, b"https://eu.ops.example.com:8443")
    assert not await opens(client, user, b"https://eu.ops.example.com")
    assert not await opens(client, user, b"https://evil-ops.example.com:8443")
