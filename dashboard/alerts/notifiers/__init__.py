"""The registry of notifier (channel) kinds: the one place that lists them.

Each kind is one module with one ``Notifier`` subclass (see ``base.py``): delivery, its
settings' form fields and validation, and how pages describe it. The model's validation, the
channel form and the sender read this registry. To add a kind, write its module and add one
line to ``BUILT_IN`` (docs/recipe-notifier.md).
"""

from __future__ import annotations

import re

from django.utils.module_loading import import_string

from dashboard.alerts.notifiers.base import DeliveryError, Notifier

BUILT_IN = (
    "dashboard.alerts.notifiers.email.EmailNotifier",
    "dashboard.alerts.notifiers.webhook.WebhookNotifier",
)

NOTIFIERS: dict[str, type[Notifier]] = {}

# Form fields every channel has; a kind's settings may not reuse these names.
COMMON_FIELDS = frozenset({"name", "kind", "enabled", "secret", "clear_secret"})


def register(notifier: type[Notifier]) -> type[Notifier]:
    """Add a kind. Its id and its form field names must be new (one channel form shows them all)."""
    if not re.fullmatch(r"[a-z][a-z0-9_-]*", notifier.kind):  # it is written into the form's CSS, unquoted
        raise ValueError(f"notifier kind {notifier.kind!r}: use lowercase letters, digits, - and _")
    if notifier.kind in NOTIFIERS:
        raise ValueError(f"notifier kind {notifier.kind!r} is already registered")
    taken = set(COMMON_FIELDS).union(*(n.form_fields() for n in NOTIFIERS.values()))
    clash = taken & set(notifier.form_fields())
    if clash:
        raise ValueError(f"notifier kind {notifier.kind!r} reuses form field names {sorted(clash)}")
    NOTIFIERS[notifier.kind] = notifier
    return notifier


def unregister(kind: str) -> None:
    NOTIFIERS.pop(kind, None)


def choices() -> list[tuple[str, str]]:
    return [(n.kind, n.label) for n in NOTIFIERS.values()]


def notifier_for(channel) -> Notifier:
    """The notifier for a channel, ready to ``send``."""
    notifier = NOTIFIERS.get(channel.kind)
    if notifier is None:
        raise DeliveryError(f"Unknown channel kind {channel.kind!r}.", retry=False)
    return notifier(channel)


for _path in BUILT_IN:
    register(import_string(_path))

__all__ = ["BUILT_IN", "NOTIFIERS", "DeliveryError", "Notifier", "choices", "notifier_for", "register", "unregister"]
