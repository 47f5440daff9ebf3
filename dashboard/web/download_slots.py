"""How many downloads each user runs at once, counted across all web processes.

Each running download (job export, audit CSV) holds a Redis or database cursor and a thread
for as long as its client reads, so a viewer opening many could tie up every web process; a
per-process count would let them open the cap times the number of processes.

The count lives in Queuewatch's own Redis (``QUEUEWATCH_DASHBOARD_REDIS_URL``, never the
monitored one): one sorted set per user, ``member = slot token``, ``score = lease end``
(``core.capped_leases``: atomic across processes). A running download renews its lease
while it streams; release removes it. A web process that dies leaves leases that lapse after
``LEASE_MS``, so a crash never locks a user out for longer. A download to a client that has
stopped reading keeps its lease (the stream renews on a timer, not per chunk): the web server
holds that download's buffers until the client reads or goes away, so its slot must count.

Without a reachable dashboard Redis the cap falls back to this process alone (logged): a
download is not refused because Queuewatch's own Redis is down."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator

from django.utils.translation import gettext as _

from dashboard.core import capped_leases, dash_redis
from dashboard.core.dash_redis import DashboardRedisError
from dashboard.web.errors import TooManyRequests

log = logging.getLogger("queuewatch.downloads")

KEY_PREFIX = "queuewatch:downloads:"
LEASE_MS = 60_000
RENEW_EVERY_S = 10.0


def _refused(limit: int) -> TooManyRequests:
    return TooManyRequests(
        _("You already have %(count)d downloads running; wait for one to finish, then try again.") % {"count": limit}
    )


class Slot:
    """One taken slot: ``release`` is safe to call more than once, from any thread."""

    def __init__(self, release, renew=None):
        self._release, self._renew = release, renew
        self._released = threading.Event()

    def release(self) -> None:
        if self._released.is_set():
            return
        self._released.set()
        self._release()

    def renew(self) -> None:
        """Extend the lease now (nothing once released, or for a slot counted in this process)."""
        if self._renew is not None and not self._released.is_set():
            self._renew()

    def renewing(self, chunks: Iterator[str]) -> Iterator[str]:
        """``chunks``, renewing the lease every ``RENEW_EVERY_S`` while they are produced."""
        if self._renew is None:
            return chunks
        return self._renewed(chunks)

    def _renewed(self, chunks: Iterator[str]) -> Iterator[str]:
        renewed = time.monotonic()
        try:
            for chunk in chunks:
                yield chunk
                if time.monotonic() - renewed >= RENEW_EVERY_S and not self._released.is_set():
                    self._renew()
                    renewed = time.monotonic()
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()


class _LocalSlots:
    """The fallback: this process's own count."""

    def __init__(self):
        self._lock = threading.Lock()
        self._running: dict[str, int] = {}

    def acquire(self, who: str, *, limit: int) -> Slot:
        with self._lock:
            if self._running.get(who, 0) >= limit:
                raise _refused(limit)
            self._running[who] = self._running.get(who, 0) + 1

        def release() -> None:
            with self._lock:
                left = self._running.get(who, 1) - 1
                if left > 0:
                    self._running[who] = left
                else:
                    self._running.pop(who, None)

        return Slot(release)


LOCAL = _LocalSlots()


def acquire(who: str, *, limit: int) -> Slot:
    """Take one of ``who``'s ``limit`` download slots or raise ``TooManyRequests``."""
    key, token = KEY_PREFIX + who, uuid.uuid4().hex
    try:
        client = dash_redis.dashboard_redis()
        taken = capped_leases.take(client, key, token, limit=limit, lease_ms=LEASE_MS)
    except DashboardRedisError as exc:
        log.warning("download slots: dashboard Redis unavailable (%s); counting in this process only", exc)
        return LOCAL.acquire(who, limit=limit)
    if not taken:
        raise _refused(limit)

    def release() -> None:
        try:
            capped_leases.drop(client, key, token)
        except DashboardRedisError as exc:  # the lease lapses by itself
            log.warning("download slots: could not release (%s); it lapses in %d s", exc, LEASE_MS // 1000)

    def renew() -> None:
        try:
            capped_leases.renew(client, key, token, lease_ms=LEASE_MS)
        except DashboardRedisError as exc:
            log.warning("download slots: could not renew (%s)", exc)

    return Slot(release, renew)
