"""Telling the alert channels that no monitor leads, from a monitor that does not lead.

Whoever can write to the dashboard Redis can hold the leader lock: no monitor leads, so no alert
is evaluated and the leader's outbox runner sends nothing (``dashboard.live.monitor_presence``).
A standby monitor notices that the last-led record is older than ``SILENT_AFTER_MS`` and sends
one FIRING notification to every enabled channel itself; the outbox row's idempotency key
derives from when a monitor last led (the outage's start), so every standby, and every check of
each, queues the same row, which the outbox's unique key keeps to one. A monitor that leads
again (or a standby seeing a fresh record) queues one RESOLVED per FIRING sent. Delivery is the
outbox's: claimed by compare-and-swap, retried with backoff on every later check.
"""

from __future__ import annotations

import datetime
import logging
import time

from django.db import DatabaseError, IntegrityError, close_old_connections, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from dashboard.alerts.models import Channel, Notification
from dashboard.alerts.sender import send_due
from dashboard.core import dash_redis
from dashboard.core.db import db_retry
from dashboard.live.monitor_presence import silent_minutes

log = logging.getLogger("queuewatch.monitor")

KEY_PREFIX = "monitor-silent:"
SEND_BUDGET_S = 5.0  # a standby's check is held up by at most this plus one delivery's timeout


def _key(outage_ms: int, kind: str) -> str:
    return f"{KEY_PREFIX}{outage_ms}:{kind}"


def _iso(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _payload(kind: str, *, outage_ms: int, summary: str, now_ms: int) -> dict:
    resolved = kind == Notification.RESOLVED
    return {
        "status": "resolved" if resolved else "firing",
        "kind": kind,
        "group_key": f"{KEY_PREFIX}{outage_ms}",
        "rule": {"id": None, "name": _("No monitor leads"), "kind": "monitor_silent"},
        "alerts": [
            {
                "fingerprint": f"{KEY_PREFIX}{outage_ms}",
                "target": {"connection": None, "prefix": None, "queue": None},
                "state": "resolved" if resolved else "firing",
                "value": None,
                "threshold": None,
                "summary": summary,
                "url": None,
                "started_at": _iso(outage_ms),
                "ended_at": _iso(now_ms) if resolved else None,
                "silenced": False,
            }
        ],
    }


def _enqueue(channel_id: int, kind: str, *, outage_ms: int, summary: str, now_ms: int) -> bool:
    """One outbox row; False when it is there already (queued by another check or standby)."""

    def create() -> bool:
        try:
            with transaction.atomic():
                Notification.objects.create(
                    channel_id=channel_id,
                    idempotency_key=_key(outage_ms, kind),
                    kind=kind,
                    subject=f"[Queuewatch] {summary}"[:300],
                    payload=_payload(kind, outage_ms=outage_ms, summary=summary, now_ms=now_ms),
                )
            return True
        except IntegrityError:
            return False

    return db_retry(create)


def queue_firing(*, outage_ms: int, minutes: int, now_ms: int) -> int:
    """A FIRING row per enabled channel for the outage that began at ``outage_ms``; how many
    were new. With no enabled channel, only the standby's log says it."""
    summary = _(
        "No monitor has led for %(minutes)s min: alerts, live updates and bulk tasks are stopped. "
        "Check the monitor processes, and who holds the leader lock in the dashboard Redis."
    ) % {"minutes": minutes}
    channels = list(Channel.objects.filter(enabled=True).values_list("id", flat=True))
    if not channels:
        log.warning("no monitor leads, and no alert channel is enabled to say so: this log is all")
    return sum(_enqueue(c, Notification.FIRING, outage_ms=outage_ms, summary=summary, now_ms=now_ms) for c in channels)


def queue_resolved(*, now_ms: int) -> int:
    """A RESOLVED row for every FIRING one that has none yet: a monitor leads again."""
    mine = Notification.objects.filter(idempotency_key__startswith=KEY_PREFIX)
    resolved = set(mine.filter(kind=Notification.RESOLVED).values_list("channel_id", "idempotency_key"))
    new = 0
    for channel_id, key in mine.filter(kind=Notification.FIRING).values_list("channel_id", "idempotency_key"):
        outage_ms = int(key.removeprefix(KEY_PREFIX).partition(":")[0])
        if (channel_id, _key(outage_ms, Notification.RESOLVED)) in resolved:
            continue
        summary = _("A monitor leads again.")
        new += _enqueue(channel_id, Notification.RESOLVED, outage_ms=outage_ms, summary=summary, now_ms=now_ms)
    return new


def check_from_standby(client) -> None:
    """A standby's periodic look: queue FIRING while no monitor leads (RESOLVED once one does),
    then deliver these rows itself, since the leader's outbox runner may not be running."""
    now_ms = int(time.time() * 1000)
    try:
        last_led = dash_redis.read_last_led(client)
    except (dash_redis.DashboardRedisError, ValueError):
        return
    minutes = silent_minutes(last_led, now_ms)
    try:
        if minutes is None:
            queue_resolved(now_ms=now_ms)
        else:
            queue_firing(outage_ms=(last_led or {})["at"], minutes=minutes, now_ms=now_ms)
        send_due(now=timezone.now(), key_prefix=KEY_PREFIX, budget_s=SEND_BUDGET_S)
    except DatabaseError:
        log.exception("could not queue or send the notification that no monitor leads; next check retries")
    finally:
        close_old_connections()


def leading_again() -> None:
    """Called by a monitor taking the lead: every outage notified is over."""
    try:
        queue_resolved(now_ms=int(time.time() * 1000))
    except DatabaseError:
        log.exception("could not queue the notification that a monitor leads again")
