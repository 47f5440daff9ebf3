"""Whether a monitor leads: noticed outside the leader. Someone who can write to the dashboard
Redis can hold the leader lock (``SET`` it with a token of their own): every monitor then waits,
and alerts, live updates and bulk tasks stop without an error anywhere. The leader records when
it last led (``state_store.publish_state``, signed); pages show a banner and standby monitors log
when that is older than ``SILENT_AFTER_MS``."""

from __future__ import annotations

import logging
import time

from dashboard.core import dash_redis
from dashboard.core.dash_redis import DashboardRedisError

log = logging.getLogger("queuewatch.monitor")

SILENT_AFTER_MS = 3 * 60_000


def silent_minutes(last_led: dict | None, now_ms: int) -> int | None:
    """Whole minutes since a monitor last led, once that exceeds ``SILENT_AFTER_MS``; None while
    one leads, or when none ever has (a setup without a monitor)."""
    at = (last_led or {}).get("at")
    if not isinstance(at, int) or now_ms - at < SILENT_AFTER_MS:
        return None
    return (now_ms - at) // 60_000


def monitor_silence(client=None) -> int | None:
    try:
        doc = dash_redis.read_last_led(client or dash_redis.dashboard_redis())
    except (DashboardRedisError, ValueError):
        return None
    return silent_minutes(doc, int(time.time() * 1000))


def context(request) -> dict:
    """Template context processor: the "no monitor has led" banner, for signed-in viewers."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"monitor_silent_minutes": monitor_silence()}


def warn_if_silent(client, monitor_name: str, holder: str | None) -> bool:
    """Called by a monitor that could not take the lock: log when no monitor has led lately."""
    minutes = monitor_silence(client)
    if minutes is None:
        return False
    log.warning(
        "%s: no monitor has led for %d min, yet the leader lock is held (by %r): if no monitor of "
        "yours holds it, someone else wrote it into the dashboard Redis (docs/operations.md, 'Trust model')",
        monitor_name,
        minutes,
        (holder or "")[:40],
    )
    return True
