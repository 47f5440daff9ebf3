"""The one notifier interface (DESIGN.md convention 4).

A notifier turns one ``Notification`` into one delivery: ``send(notification)`` returns a short
description of what the receiver answered ("HTTP 202", "accepted by SMTP server") or raises
``DeliveryError`` saying whether trying again could help. Retries, backoff and the channel's
"last error" are not the notifier's business: they live in one place, ``sender.py``.
"""

from __future__ import annotations

import datetime
from typing import Protocol

from dashboard.alerts.message_shapes import Message


class DeliveryError(Exception):
    """A failed delivery. ``retry`` is False for errors that will not go away by themselves
    (a 4xx other than 408/429, a refused address, a bad configuration of this channel);
    ``retry_after`` is the receiver's own hint (``Retry-After``), in seconds, when it gave one."""

    def __init__(self, message: str, *, retry: bool, retry_after: float | None = None):
        super().__init__(message)
        self.message = message
        self.retry = retry
        self.retry_after = retry_after


class Notifier(Protocol):
    def send(self, notification) -> str: ...


def notifier_for(channel) -> Notifier:
    """The notifier for a channel's kind."""
    from dashboard.alerts.email_notifier import EmailNotifier
    from dashboard.alerts.models import Channel
    from dashboard.alerts.webhook_notifier import WebhookNotifier

    if channel.kind == Channel.EMAIL:
        return EmailNotifier(channel)
    if channel.kind == Channel.WEBHOOK:
        return WebhookNotifier(channel)
    raise DeliveryError(f"Unknown channel kind {channel.kind!r}.", retry=False)


def absolute_url(path_or_url: str | None) -> str | None:
    """An absolute link for a path of ours (``/q/...``), using QUEUEWATCH_BASE_URL; None when
    no base URL is configured (a relative link in an email or a chat message is useless)."""
    from django.conf import settings

    if not path_or_url:
        return None
    if path_or_url.startswith(("http://", "https://")):
        return path_or_url
    base = getattr(settings, "QUEUEWATCH_BASE_URL", "")
    return base + "/" + path_or_url.lstrip("/") if base else None


def message_for(notification) -> Message:
    """What every notifier renders from: the row's content, the link to the relevant page (the
    first alert's page, else the overview), and the channel's name."""
    from django.conf import settings

    payload = notification.payload if isinstance(notification.payload, dict) else {}
    links = (absolute_url(a.get("url")) for a in payload.get("alerts") or [] if isinstance(a, dict))
    link = next((url for url in links if url), None)
    return Message(
        idempotency_key=notification.idempotency_key,
        kind=notification.kind,
        subject=notification.subject,
        payload=payload,
        channel=notification.channel.name,
        created_at=notification.created_at.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        link=link or absolute_url("/"),
        base_url=getattr(settings, "QUEUEWATCH_BASE_URL", ""),
    )
