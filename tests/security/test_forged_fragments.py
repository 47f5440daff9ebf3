"""Someone who can write to the dashboard Redis (by default: the monitored Redis, which every
BullMQ producer and worker writes) forges a live fragment carrying an ``hx-post`` to a pause URL,
the way they would with redis-cli: into the reconnect cache, or into the channel layer. htmx in a
logged-in browser would act on it. The websocket never sends it; genuine fragments still arrive."""

from __future__ import annotations

import logging

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from channels_redis.core import RedisChannelLayer

from dashboard.asgi import application
from dashboard.core import dash_redis, signing
from dashboard.live import channels as live
from queues.keys import QueueRef
from tests.support.live import session_headers

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

QUEUE = QueueRef("default", "bull", "orders")
PATH = "/ws/queue/default/bull/orders/"
FORGED = (
    '<section id="live-x" hx-swap-oob="true"><img src=x hx-post="/q/default/bull/orders/actions/pause" '
    'hx-trigger="load"></section>'
)


@pytest.fixture(autouse=True)
def every_drop_logged():
    signing._logged.clear()  # each test sees the first drop of its kind logged
    yield
    signing._logged.clear()


async def connect(client, user):
    headers = await sync_to_async(session_headers)(client, user)
    comm = WebsocketCommunicator(application, PATH, headers=headers)
    connected, _ = await comm.connect(timeout=5)
    assert connected
    return comm


async def test_a_fragment_forged_into_the_cache_is_never_sent(live_setup, client, user, caplog):
    publisher = await sync_to_async(live.Publisher)(dash_redis.dashboard_redis())
    await sync_to_async(publisher.publish)(live.queue_group(QUEUE), "live-x", '<section id="live-x">3</section>')
    await sync_to_async(publisher.drain)()
    # The attacker's HSET, beside the genuine fragment and over it in another element.
    live_setup.hset(dash_redis.CACHE_PREFIX + live.queue_group(QUEUE), "evil", FORGED)
    live_setup.hset(dash_redis.CACHE_PREFIX + live.queue_group(QUEUE), "live-y", "0" * 64 + FORGED)
    with caplog.at_level(logging.WARNING, logger="queuewatch.security"):
        comm = await connect(client, user)
        assert await comm.receive_from(timeout=5) == '<section id="live-x">3</section>'
        assert await comm.receive_nothing(timeout=0.5)
        await comm.disconnect()
        comm = await connect(client, user)  # a reconnect drops them again, without a new log line
        assert await comm.receive_from(timeout=5) == '<section id="live-x">3</section>'
        assert await comm.receive_nothing(timeout=0.5)
        await comm.disconnect()
    assert len([r for r in caplog.records if "signature does not verify" in r.getMessage()]) == 1


async def test_a_message_forged_into_the_channel_layer_is_never_sent(live_setup, client, user, redis_db):
    comm = await connect(client, user)
    # The attacker speaks channels_redis to the same Redis and prefix, without Queuewatch's key.
    attacker = RedisChannelLayer(hosts=[{"address": redis_db.url}], prefix="queuewatch:asgi")
    await attacker.group_send(live.queue_group(QUEUE), {"type": live.FRAGMENT_TYPE, "html": FORGED})
    await attacker.group_send(live.queue_group(QUEUE), {"type": "websocket.send", "text": FORGED})
    await attacker.close_pools()
    # The tab stays connected, and the monitor's next fragment arrives.
    publisher = await sync_to_async(live.Publisher)(dash_redis.dashboard_redis())
    await sync_to_async(publisher.publish)(live.queue_group(QUEUE), "live-x", '<section id="live-x">4</section>')
    assert await comm.receive_from(timeout=5) == '<section id="live-x">4</section>'
    assert await comm.receive_nothing(timeout=0.5)
    await comm.disconnect()


async def test_an_unsigned_fragment_message_is_never_sent(private_redis, client, user):
    """Whatever the layer: a fragment message the monitor did not sign is dropped."""
    comm = await connect(client, user)
    await get_channel_layer().group_send(live.queue_group(QUEUE), {"type": live.FRAGMENT_TYPE, "html": FORGED})
    await get_channel_layer().group_send(live.queue_group(QUEUE), live.fragment_message('<p id="live-x">5</p>'))
    assert await comm.receive_from(timeout=5) == '<p id="live-x">5</p>'
    assert await comm.receive_nothing(timeout=0.5)
    await comm.disconnect()
