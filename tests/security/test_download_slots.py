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


def test_a_download_whose_client_stopped_reading_keeps_its_slot(settings, monkeypatch):
    """Under ASGI the stream renews its lease on a timer: a client that stops reading holds the
    web server's buffers for as long as it stays connected, so its slot must keep counting
    after the lease it started with has lapsed (else a user could stack stalled downloads, one
    a lease apart). Closing the stream gives the slot back."""
    import asyncio
    from types import SimpleNamespace

    from django.test import AsyncRequestFactory

    from dashboard.web import streaming

    server = RedisServer()
    monkeypatch.setattr(download_slots, "LEASE_MS", 1500)
    monkeypatch.setattr(download_slots, "RENEW_EVERY_S", 0.3)
    key = download_slots.KEY_PREFIX + "77"

    def redis_now_ms() -> int:
        seconds, micros = server.client().time()
        return seconds * 1000 + micros // 1000

    async def stall():
        request = AsyncRequestFactory().get("/export")
        request.user = SimpleNamespace(pk=77)
        response = streaming.download(request, iter(["first\n", "second\n"]), content_type="text/plain")
        content = aiter(response)
        assert await anext(content) == b"first\n"
        first_lease_end = int(server.client().zrange(key, 0, -1, withscores=True)[0][1])
        # The client reads nothing more: wait (without blocking the loop) past the first lease.
        while redis_now_ms() < first_lease_end + 500:
            await asyncio.sleep(0.1)
        assert server.client().zcard(key) == 1  # still held
        with pytest.raises(TooManyRequests):
            download_slots.acquire("77", limit=1)
        await content.aclose()
        response.close()

    try:
        settings.QUEUEWATCH_DASHBOARD_REDIS_URL = server.url(0)
        asyncio.run(stall())
        assert server.client().exists(key) == 0
        download_slots.acquire("77", limit=1).release()
    finally:
        server.stop()
