"""Authenticating what Queuewatch reads back from Redis: the one home for signing and checking it.

By default the dashboard Redis is the first monitored Redis, which every BullMQ producer and
worker can write. What Queuewatch keeps there reaches browsers (live fragments are swapped into
pages by htmx, which acts on their ``hx-*`` attributes) and decides what pages show (the state,
workers and health documents, the published queue lists). So everything Queuewatch writes there
is signed here (HMAC-SHA256, with a key derived from ``SECRET_KEY`` and the value's purpose), and
everything read back is checked here: a value that does not verify is dropped, as if absent, and
logged once per purpose per process (a forged value usually keeps coming back).

The channel layer's messages are encrypted and authenticated by channels_redis itself, with a
key derived here as well (``channel_layer_key``; ``dashboard.core.channel_layer``).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import logging

from django.conf import settings

log = logging.getLogger("queuewatch.security")

FRAGMENT = "fragment"  # a live fragment: in the reconnect cache and in channel-layer messages
DOCUMENT = "document"  # a JSON document, bound to its key (one cannot be replayed under another)
MAC_LENGTH = 64  # hex characters of an HMAC-SHA256

_logged: set[str] = set()


@functools.lru_cache(maxsize=64)
def _key(secret_key: str, purpose: str) -> bytes:
    return hashlib.sha256(b"queuewatch-dashboard-redis\x00" + purpose.encode() + b"\x00" + secret_key.encode()).digest()


def _mac(purpose: str, text: str, bound_to: str) -> str:
    return _mac_of_bytes(purpose, text.encode("utf-8", "surrogatepass"), bound_to)


def _mac_of_bytes(purpose: str, payload: bytes, bound_to: str) -> str:
    mac = document_mac(bound_to, purpose=purpose)
    mac.update(payload)
    return mac.hexdigest()


def document_mac(bound_to: str, *, purpose: str = DOCUMENT) -> hmac.HMAC:
    """The signature ``sign`` puts in front, made as the payload goes: ``update`` it with each
    part of the UTF-8 text, then its ``hexdigest()`` is the signature (``dash_redis.DocumentStream``)."""
    return hmac.new(_key(settings.SECRET_KEY, purpose), bound_to.encode("utf-8", "surrogatepass") + b"\x00", "sha256")


def sign(purpose: str, text: str, *, bound_to: str = "") -> str:
    """``text`` with its signature in front, to store or send; ``bound_to`` (e.g. the key it is
    stored under) must be the same to verify."""
    return _mac(purpose, text, bound_to) + text


def verify(purpose: str, signed: str | bytes | None, *, bound_to: str = "") -> str | None:
    """The text ``sign(purpose, text, bound_to=...)`` returned, or None for anything Queuewatch
    did not sign for this purpose and binding (written by someone else, or under another
    ``SECRET_KEY``)."""
    if signed is None:
        return None
    if isinstance(signed, bytes):
        try:
            signed = signed.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            signed = ""
    mac, text = signed[:MAC_LENGTH], signed[MAC_LENGTH:]
    if len(mac) == MAC_LENGTH and hmac.compare_digest(mac, _mac(purpose, text, bound_to)):
        return text
    rejected(purpose)
    return None


def rejected(purpose: str) -> None:
    """Log, once per purpose per process, that a value failed its check and was dropped."""
    if purpose not in _logged:
        _logged.add(purpose)
        log.warning(
            "dropped a %s read from the dashboard Redis: its signature does not verify. Something "
            "other than Queuewatch writes to that Redis (or another SECRET_KEY does): give "
            "Queuewatch a Redis of its own (QUEUEWATCH_DASHBOARD_REDIS_URL, docs/operations.md, "
            "'Trust model'). Further ones are dropped without a log line.",
            purpose,
        )


def channel_layer_key(secret_key: str) -> str:
    """The key channels_redis encrypts and authenticates channel-layer messages with."""
    return hmac.new(secret_key.encode(), b"queuewatch-channel-layer", "sha256").hexdigest()
