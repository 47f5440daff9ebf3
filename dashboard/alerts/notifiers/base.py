"""The one notifier interface.

A notifier kind is one class: how to deliver (``send``), the settings its channels need (form
fields, their validation into ``Channel.config``, and their initial values on edit), and how to
describe a channel of its kind on pages without anything secret. Kinds are listed in one
registry, ``dashboard.alerts.notifiers`` (its ``__init__``).

``send(notification)`` turns one ``Notification`` into one delivery and returns a short
description of what the receiver answered ("HTTP 202", "accepted by SMTP server"), or raises
``DeliveryError`` saying whether trying again could help. Retries, backoff and the channel's
"last error" are not the notifier's business: they live in one place, ``sender.py``.
"""

from __future__ import annotations

import datetime
from typing import ClassVar

from django import forms
from django.conf import settings

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


class Notifier:
    """One channel kind. An instance delivers for one channel (``self.channel``); the settings
    methods are class methods, used by the channel form before any channel exists."""

    kind: ClassVar[str]  # stored in Channel.kind
    label: ClassVar[str]  # "Email": the choice in the channel form
    form_note: ClassVar[str] = ""  # a sentence under the kind's settings in the form
    uses_secret: ClassVar[bool] = False  # the form offers Channel.secret (write-only) for this kind

    def __init__(self, channel):
        self.channel = channel
        self.config = channel.config or {}

    def send(self, notification) -> str:
        raise NotImplementedError

    @classmethod
    def form_fields(cls) -> dict[str, forms.Field]:
        """Fresh form fields for this kind's settings, all ``required=False`` (a channel form
        shows every kind's fields; only the chosen kind's are validated, by ``clean_config``).
        Names are shared by all kinds in one form: the registry refuses a clash."""
        return {}

    @classmethod
    def unavailable(cls) -> str:
        """Why channels of this kind cannot deliver at all right now (a deployment setting is
        missing), said on the form and the channel list; "" when they can."""
        return ""

    @classmethod
    def clean_config(cls, *, data: dict, stored: dict, add_error) -> dict:
        """The channel's ``config`` from the form's cleaned ``data``; problems are reported with
        ``add_error(field name, message)``. ``stored`` is the channel's config before the edit."""
        return {}

    @classmethod
    def initial(cls, config: dict) -> dict:
        """The form's initial values for a stored ``config`` (never a secret)."""
        return {}

    @classmethod
    def adjust_fields(cls, fields: dict, config: dict) -> None:
        """Adapt the kind's form fields to a stored channel's ``config`` (on edit)."""

    @classmethod
    def destination(cls, config: dict) -> str:
        """Where the channel sends, for pages: nothing secret (tokens often sit in URLs)."""
        return ""

    @classmethod
    def variant(cls, config: dict) -> str:
        """A word shown next to the kind in the channel list (e.g. a webhook's payload shape)."""
        return ""


def absolute_url(path_or_url: str | None) -> str | None:
    """An absolute link for a path of ours (``/q/...``), using QUEUEWATCH_BASE_URL; None when
    no base URL is configured (a relative link in an email or a chat message is useless)."""
    if not path_or_url:
        return None
    if path_or_url.startswith(("http://", "https://")):
        return path_or_url
    base = getattr(settings, "QUEUEWATCH_BASE_URL", "")
    return base + "/" + path_or_url.lstrip("/") if base else None


def message_for(notification) -> Message:
    """What every notifier renders from: the row's content, the link to the relevant page (the
    first alert's page, else the overview), and the channel's name."""
    payload = notification.payload if isinstance(notification.payload, dict) else {}
    links = (absolute_url(a.get("url")) for a in payload.get("alerts") or [] if isinstance(a, dict))
    link = next((url for url in links if url), None)
    return Message(
        idempotency_key=notification.idempotency_key,
        kind=notification.kind,
        subject=notification.subject,
        payload=payload,
        channel=notification.channel.name,
        created_at=notification.created_at.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        link=link or absolute_url("/"),
        base_url=getattr(settings, "QUEUEWATCH_BASE_URL", ""),
    )
