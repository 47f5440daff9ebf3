"""A monitored Redis that goes away: every page is told live, and the monitor resumes when it
is back. History roll-up and pruning."""
# Literal `bull:` keys kept: a monitor on a redis-server of the test's own (stopped to make the outage).

from __future__ import annotations

import datetime as dt

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from dashboard.asgi import application
from dashboard.live.history import rollup_and_prune
from dashboard.live.models import QueuePoint
from queues.connections import ConnectionSpec
from tests.support.live import monitor_thread, session_headers
from tests.support.redis_db import point_at
from tests.support.servers import RedisServer
from tests.support.waiting import receive_until, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def outage_setup(settings, live_setup):
    """Monitored Redis on a server of its own (so it can die); dashboard Redis unchanged."""
    monitored = RedisServer()
    monitored.client().hset("bull:orders:meta", "opts.maxLenEvents", 10000)
    point_at(settings, ConnectionSpec("default", monitored.url(), ("bull",)))
    try:
        with monitor_thread(tick=0.5, name="outage-monitor") as monitor:
            yield monitored, monitor
    finally:
        monitored.stop()


@pytest.mark.asyncio
async def test_connection_lost_is_shown_live_on_every_page_and_clears_on_recovery(outage_setup, client, user):
    monitored, monitor = outage_setup
    await sync_to_async(wait_for)(lambda: monitor.stats["ticks"] >= 2)
    headers = await sync_to_async(session_headers)(client, user)
    pages = []
    for path in (
        "/ws/overview/",
        "/ws/queue/default/bull/orders/?state=failed&list=1",
        "/ws/queue/default/bull/orders/jobs/1",
    ):
        comm = WebsocketCommunicator(application, path, headers=headers)
        assert (await comm.connect(timeout=5))[0]
        pages.append(comm)

    await sync_to_async(monitored.kill)()
    for comm in pages:
        banner = await receive_until(comm, lambda h: 'id="live-banner"' in h and "Connection lost" in h, timeout=15)
        assert "Connection lost to Redis “default”" in banner

    await sync_to_async(monitored.start)()
    for comm in pages:
        await receive_until(comm, lambda h: h.strip() == '<div id="live-banner"></div>', timeout=30)
        await comm.disconnect()
    assert monitor.lock.held


def test_minutes_roll_up_into_hours_and_old_history_is_pruned(live_setup, settings):
    now = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)
    hour = now.replace(minute=0) - dt.timedelta(hours=1)
    common = {"connection": "default", "prefix": "bull", "queue": "orders"}
    for i in range(3):
        QueuePoint.objects.create(
            **common, resolution=60, start=hour + dt.timedelta(minutes=i), failed=2, waiting=10 + i
        )
    QueuePoint.objects.create(**common, resolution=60, start=now - dt.timedelta(days=8), failed=1)
    QueuePoint.objects.create(**common, resolution=3600, start=hour - dt.timedelta(days=91), failed=1)

    rollup_and_prune()

    rolled = QueuePoint.objects.get(**common, resolution=3600, start=hour)
    assert rolled.failed == 6 and rolled.waiting == 12  # counters summed, gauges last value
    assert not QueuePoint.objects.filter(resolution=60, start__lt=now - dt.timedelta(days=7)).exists()
    assert not QueuePoint.objects.filter(resolution=3600, start__lt=now - dt.timedelta(days=90)).exists()
