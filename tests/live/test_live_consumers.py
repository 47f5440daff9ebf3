"""Websocket consumers: login and origin required, snapshot on connect, group relay."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from dashboard.asgi import application
from dashboard.core import dash_redis
from dashboard.live import channels as live
from queues.keys import QueueRef
from tests.support.live import session_headers

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

QUEUE = QueueRef("default", "bull", "orders")


async def connect(path, headers):
    comm = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await comm.connect(timeout=5)
    return comm, connected, code


async def test_anonymous_connect_is_closed_with_4401_before_anything_is_sent(live_setup):
    publisher = await sync_to_async(live.Publisher)(dash_redis.dashboard_redis())
    await sync_to_async(publisher.publish)(live.OVERVIEW, "row-x", '<tr id="row-x"></tr>')
    comm, connected, _ = await connect("/ws/overview/", [(b"origin", b"http://localhost"), (b"host", b"localhost")])
    # Accepted only to be closed with the code the page understands (a refused handshake would
    # reach it as a bare 1006, which it retries): no fragment first.
    assert connected
    assert await comm.receive_output(timeout=5) == {"type": "websocket.close", "code": 4401}


async def test_cross_origin_connect_is_refused(live_setup, client, user):
    headers = await sync_to_async(session_headers)(client, user, origin=b"http://evil.example")
    comm, connected, _ = await connect("/ws/overview/", headers)
    assert not connected


async def test_snapshot_on_connect_then_group_messages_are_relayed(live_setup, client, user):
    publisher = await sync_to_async(live.Publisher)(dash_redis.dashboard_redis())
    await sync_to_async(publisher.publish)(live.queue_group(QUEUE), "live-x", '<section id="live-x">3 failed</section>')
    headers = await sync_to_async(session_headers)(client, user)
    comm, connected, _ = await connect("/ws/queue/default/bull/orders/?state=failed&list=1", headers)
    assert connected
    assert await comm.receive_from(timeout=5) == '<section id="live-x">3 failed</section>'
    # A later change to the same group reaches the connected client...
    await sync_to_async(publisher.publish)(live.queue_group(QUEUE), "live-x", '<section id="live-x">4 failed</section>')
    assert await comm.receive_from(timeout=5) == '<section id="live-x">4 failed</section>'
    # ...an identical fragment is not re-sent, and other queues' groups are not received.
    await sync_to_async(publisher.publish)(live.queue_group(QUEUE), "live-x", '<section id="live-x">4 failed</section>')
    await sync_to_async(publisher.publish)(
        live.queue_group(QueueRef("default", "bull", "other")), "live-y", "<p id='live-y'></p>"
    )
    assert await comm.receive_nothing(timeout=0.5)
    # The list watch was registered for the monitor.
    watched = await sync_to_async(dash_redis.watched)(dash_redis.dashboard_redis())
    assert dash_redis.Watch.job_list(QUEUE, "failed") in watched
    await comm.disconnect()


async def test_job_page_consumer_registers_a_watch(live_setup, client, user):
    headers = await sync_to_async(session_headers)(client, user)
    comm, connected, _ = await connect("/ws/queue/default/bull/orders/jobs/a:b/c", headers)
    assert connected
    watched = await sync_to_async(dash_redis.watched)(dash_redis.dashboard_redis())
    assert dash_redis.Watch.job(QUEUE, "a:b/c") in watched
    await comm.disconnect()
