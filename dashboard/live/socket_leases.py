"""How many live sockets each user holds open, counted across all web processes.

Every open socket costs the web process that holds it and, through the groups it joins, the
monitor that sends to them: one viewer opening thousands of sockets took the monitor's loop
(live updates, alerts and bulk tasks share it) from a few percent to most of a core. So each
socket takes a lease on one of ``QUEUEWATCH_LIVE_SOCKETS_PER_USER`` places of its user, held in
Queuewatch's own Redis (``core.capped_leases``, as downloads are: ``web.download_slots``) and
renewed while it stays open; closing gives it back, and a web process that dies leaves leases
that lapse within ``LEASE_MS``. A socket over the cap is closed with ``TOO_MANY_SOCKETS``, which
the page's script shows (and does not reconnect after).

Without a reachable dashboard Redis the count falls back to this process alone (logged), as for
downloads: no socket is refused because Queuewatch's own Redis is down.
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings

from dashboard.core import capped_leases, dash_redis
from dashboard.core.dash_redis import DashboardRedisError

log = logging.getLogger("queuewatch.live")

TOO_MANY_SOCKETS = 4429  # close code; static/queuewatch.js knows it
KEY_PREFIX = "queuewatch:sockets:"
LEASE_MS = 90_000
RENEW_EVERY_S = 30.0

_local_lock = threading.Lock()
_local: dict[str, set[str]] = {}  # the fallback: user -> tokens held in this process


def _key(user_id) -> str:
    return KEY_PREFIX + str(user_id)


def take(user_id, token: str) -> bool:
    """Take one of the user's places for the socket ``token`` (its channel name); False when the
    user already holds ``QUEUEWATCH_LIVE_SOCKETS_PER_USER`` open sockets."""
    limit = settings.QUEUEWATCH_LIVE_SOCKETS_PER_USER
    try:
        return capped_leases.take(dash_redis.dashboard_redis(), _key(user_id), token, limit=limit, lease_ms=LEASE_MS)
    except DashboardRedisError as exc:
        log.warning("live sockets: dashboard Redis unavailable (%s); counting in this process only", exc)
    with _local_lock:
        held = _local.setdefault(str(user_id), set())
        if len(held) >= limit and token not in held:
            return False
        held.add(token)
        return True


def renew(user_id, token: str) -> None:
    try:
        capped_leases.renew(dash_redis.dashboard_redis(), _key(user_id), token, lease_ms=LEASE_MS)
    except DashboardRedisError as exc:
        log.warning("live sockets: could not renew a lease (%s)", exc)


def give_back(user_id, token: str) -> None:
    with _local_lock:
        held = _local.get(str(user_id))
        if held is not None:
            held.discard(token)
            if not held:
                del _local[str(user_id)]
    try:
        capped_leases.drop(dash_redis.dashboard_redis(), _key(user_id), token)
    except DashboardRedisError as exc:  # the lease lapses by itself
        log.warning("live sockets: could not give a lease back (%s); it lapses in %d s", exc, LEASE_MS // 1000)
