"""The download cap's store (``dashboard.web.download_slots``): leases in the dashboard Redis, shared
by every web process; without a reachable dashboard Redis, a count in this process, so a
download is never refused because Queuewatch's own Redis is down."""

from __future__ import annotations

import pytest

from dashboard.web import download_slots
from dashboard.web.errors import TooManyRequests
from tests.support.servers import RedisServer, refused_port


def test_leases_in_the_dashboard_redis_cap_and_release(settings):
    server = RedisServer()
    try:
        settings.QUEUEWATCH_DASHBOARD_REDIS_URL = server.url(0)
        taken = [download_slots.acquire("u1", limit=2) for _ in range(2)]
        assert server.client().zcard(download_slots.KEY_PREFIX + "u1") == 2
        with pytest.raises(TooManyRequests):
            download_slots.acquire("u1", limit=2)
        download_slots.acquire("u2", limit=2).release()  # another user is not affected
        taken[0].release()
        taken[0].release()  # twice is harmless
        again = download_slots.acquire("u1", limit=2)
        assert server.client().zcard(download_slots.KEY_PREFIX + "u1") == 2
        again.release()
        taken[1].release()
        assert server.client().exists(download_slots.KEY_PREFIX + "u1") == 0
    finally:
        server.stop()


def test_without_a_dashboard_redis_the_cap_counts_in_this_process(settings):
    settings.QUEUEWATCH_DASHBOARD_REDIS_URL = f"redis://127.0.0.1:{refused_port()}/0"  # nothing listens
    first = download_slots.acquire("u3", limit=1)
    with pytest.raises(TooManyRequests):
        download_slots.acquire("u3", limit=1)
    first.release()
    download_slots.acquire("u3", limit=1).release()
