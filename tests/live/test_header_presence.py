"""A queue page's header is rendered only while someone views it (re-rendering every
busy queue's header every 0.5 s for nobody was a large share of the monitor's CPU). The state
document behind /metrics, health and alerts stays current all along, and a tab that opens the
page gets a current header at once: its watch nudges the monitor, which renders it on that
first watch instead of at its next tick (the tick here is 10 minutes, out of reach)."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import sync_to_async
from bullmq import Queue
from channels.testing import WebsocketCommunicator

from dashboard.asgi import application
from dashboard.core import dash_redis
from dashboard.live import channels as live
from queues.keys import QueueRef
from tests.support.health import make_queue, queue_state
from tests.support.live import monitor_thread, session_headers
from tests.support.waiting import async_wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

QUEUE = QueueRef("default", "bull", "orders")


def waiting_in_state_document() -> int | None:
    entry, _ = queue_state(QUEUE.name)
    return None if entry is None else entry["counts"]["waiting"]


def cached_header() -> list[str]:
    return dash_redis.cached_fragments(dash_redis.dashboard_redis(), live.queue_group(QUEUE))


def waiting_tab_count(html: str) -> str | None:
    found = re.search(r'state-waiting"[^>]*>\s*waiting <span class="count[^"]*"><data [^>]*value="(\d+)"', html)
    return found.group(1) if found else None


async def test_an_unviewed_header_is_not_rendered_and_a_new_viewer_gets_a_current_one(
    live_setup, redis_url, client, user
):
    make_queue(live_setup, QUEUE.name)
    producer = Queue(QUEUE.name, {"connection": redis_url})
    try:
        with monitor_thread(tick=600, name="presence-monitor"):
            await producer.add("job", {"i": 1})
            await async_wait_for(lambda: waiting_in_state_document() == 1)
            await producer.add("job", {"i": 2})  # an event: the queue is refreshed, its figures published
            await async_wait_for(lambda: waiting_in_state_document() == 2)
            assert await sync_to_async(cached_header)() == []  # nobody views the page: never rendered

            headers = await sync_to_async(session_headers)(client, user)
            comm = WebsocketCommunicator(application, "/ws/queue/default/bull/orders/", headers=headers)
            connected, _ = await comm.connect(timeout=5)
            assert connected
            html = await comm.receive_from(timeout=10)  # rendered on its first watch, not at the tick
            assert f'id="{live.queue_live_id(QUEUE)}"' in html and waiting_tab_count(html) == "2"
            await comm.disconnect()

            # The viewer is gone (closing the tab removed its watch, no wait for it to lapse):
            # the header leaves the reconnect cache, so a tab opened later is never sent a stale
            # copy, and is no longer rendered.
            assert await sync_to_async(dash_redis.watched)(dash_redis.dashboard_redis()) == []
            await producer.add("job", {"i": 3})
            await async_wait_for(lambda: waiting_in_state_document() == 3)
            await async_wait_for(lambda: cached_header() == [])
    finally:
        await producer.close()
