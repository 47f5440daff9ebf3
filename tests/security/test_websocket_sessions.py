"""A live socket lives only as long as its login session. The attack: open a socket, then end the
session (log out through the real logout view, deactivate the user, change the password, let
the session expire or remove it) and keep listening: the socket used to stream fragments for as
long as it stayed open. Now it is closed with 4401, and nothing reaches it after.

Each socket goes through the real ASGI application with the test client's session cookie, on
the real (Redis) channel layer of ``live_setup``."""

from __future__ import annotations

import itertools

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.sessions.models import Session
from django.test import Client

from dashboard.asgi import application
from dashboard.live import channels as live
from tests.support.live import session_headers

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

SIGNED_OUT = 4401
CHECK_S = 0.3  # the periodic session check, in the tests that rely on it
_serial = itertools.count()


@pytest.fixture
def frequent_checks(settings):
    settings.QUEUEWATCH_SOCKET_SESSION_CHECK_S = CHECK_S


async def open_socket(client, user, path="/ws/all/") -> WebsocketCommunicator:
    """A logged-in page's socket, proven live: it relays a fragment sent to its group."""
    headers = await sync_to_async(session_headers)(client, user)
    comm = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await comm.connect(timeout=5)
    assert connected
    html = await broadcast()
    assert await comm.receive_from(timeout=5) == html
    return comm


async def broadcast() -> str:
    """A fragment to every page's socket, as the monitor sends them."""
    html = f'<p id="live-banner">update {next(_serial)}</p>'
    await get_channel_layer().group_send(live.ALL, live.fragment_message(html))
    return html


async def closed_with(comm: WebsocketCommunicator, within: float) -> int | None:
    """The close code the socket received within ``within`` seconds (None: still open)."""
    try:
        output = await comm.receive_output(timeout=within)
    except TimeoutError:
        return None
    assert output["type"] == "websocket.close", f"the socket was sent {output!r} instead of being closed"
    return output["code"]


async def hears_nothing_more(comm: WebsocketCommunicator) -> bool:
    for _ in range(3):
        await broadcast()
    return await comm.receive_nothing(timeout=CHECK_S * 3)


async def test_logging_out_closes_the_sessions_socket_at_once(live_setup, client, user):
    comm = await open_socket(client, user)
    response = await sync_to_async(client.post)("/logout/")
    assert response.status_code == 302
    # At once: the periodic check (30 s by default) plays no part.
    assert await closed_with(comm, within=2) == SIGNED_OUT
    assert await hears_nothing_more(comm)


async def test_logging_out_leaves_the_users_other_sessions_open(live_setup, client, user):
    other_browser = Client()
    other = await open_socket(other_browser, user)
    mine = await open_socket(client, user)
    assert await other.receive_from(timeout=5)  # the fragment that proved ``mine`` live
    await sync_to_async(client.post)("/logout/")
    assert await closed_with(mine, within=2) == SIGNED_OUT
    html = await broadcast()
    assert await other.receive_from(timeout=5) == html
    await other.disconnect()


async def test_deactivating_the_user_closes_their_sockets_at_once(live_setup, client, user):
    comm = await open_socket(client, user, "/ws/overview/")
    user.is_active = False
    await sync_to_async(user.save)()
    assert await closed_with(comm, within=2) == SIGNED_OUT
    assert await hears_nothing_more(comm)


async def test_changing_the_password_closes_the_users_sockets(live_setup, client, user):
    comm = await open_socket(client, user)
    user.set_password("a-new-password-42")
    await sync_to_async(user.save)()
    assert await closed_with(comm, within=2) == SIGNED_OUT
    assert await hears_nothing_more(comm)


async def test_a_user_deactivated_without_signals_is_closed_within_a_check(live_setup, client, user, frequent_checks):
    comm = await open_socket(client, user, "/ws/queue/default/bull/orders/")
    # A bulk update sends no signal: the periodic check finds it.
    await sync_to_async(type(user).objects.filter(pk=user.pk).update)(is_active=False)
    assert await closed_with(comm, within=CHECK_S + 2) == SIGNED_OUT
    assert await hears_nothing_more(comm)


async def test_a_session_removed_from_the_store_is_closed_within_a_check(live_setup, client, user, frequent_checks):
    comm = await open_socket(client, user)
    await sync_to_async(Session.objects.all().delete)()
    assert await closed_with(comm, within=CHECK_S + 2) == SIGNED_OUT
    assert await hears_nothing_more(comm)


async def test_an_expiring_session_closes_its_socket_at_expiry(live_setup, client, user):
    await sync_to_async(client.force_login)(user)

    def expire_in_two_seconds():
        session = client.session
        session.set_expiry(2)
        session.save()

    await sync_to_async(expire_in_two_seconds)()
    comm = await open_socket(client, user)
    # Capped to the session's expiry, with the periodic check still at its 30 s default.
    assert await closed_with(comm, within=4) == SIGNED_OUT
    assert await hears_nothing_more(comm)


async def test_a_socket_without_a_valid_session_is_told_so_rather_than_refused(live_setup, client, user):
    """The page learns why (4401, no reconnecting) instead of a bare failed handshake."""
    await sync_to_async(client.force_login)(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    await sync_to_async(Session.objects.all().delete)()
    headers = [(b"origin", b"http://localhost"), (b"host", b"localhost"), (b"cookie", cookie)]
    comm = WebsocketCommunicator(application, "/ws/all/", headers=headers)
    connected, _ = await comm.connect(timeout=5)
    assert connected
    assert await closed_with(comm, within=2) == SIGNED_OUT
    assert await hears_nothing_more(comm)


async def test_logging_out_works_while_the_channel_layer_is_away(client, user, settings, unused_tcp_port):
    """Telling the sockets is best effort (the periodic check remains): logout still answers."""
    from channels.layers import channel_layers

    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [f"redis://127.0.0.1:{unused_tcp_port}/0"]},  # nothing listens there
        }
    }
    channel_layers.backends.clear()
    try:
        await sync_to_async(client.force_login)(user)
        response = await sync_to_async(client.post)("/logout/")
        assert response.status_code == 302
        assert not await sync_to_async(Session.objects.exists)()
    finally:
        channel_layers.backends.clear()
