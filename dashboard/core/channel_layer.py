"""The channel layer on the dashboard Redis, sealed: channels_redis encrypts and authenticates
every message (Fernet, ``symmetric_encryption_keys``) with a key derived from ``SECRET_KEY``
(``signing.channel_layer_key``), so a message someone else pushes into the layer's lists in
that Redis is never dispatched to a consumer. channels_redis raises on such a message, which
would end the receiving consumer (and close a tab's websocket) for each one pushed: here it is
dropped instead, and logged once (``signing.rejected``)."""

from __future__ import annotations

from channels_redis.core import RedisChannelLayer
from cryptography.fernet import InvalidToken

from dashboard.core import signing
from queues.connections import channel_layer_hosts

CHANNEL_MESSAGE = "channel-layer message"
DROPPED_TYPE = "queuewatch.dropped"  # what a forged message becomes; consumers ignore it


class SealedRedisChannelLayer(RedisChannelLayer):
    def deserialize(self, message):
        try:
            return super().deserialize(message)
        except (InvalidToken, ValueError, TypeError):
            signing.rejected(CHANNEL_MESSAGE)
            return {"type": DROPPED_TYPE}


def channel_layers(url: str | None, secret_key: str) -> dict:
    """``CHANNEL_LAYERS`` for a dashboard Redis at ``url`` (in-memory without one)."""
    if not url:
        return {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    return {
        "default": {
            "BACKEND": "dashboard.core.channel_layer.SealedRedisChannelLayer",
            # A URL, or the Sentinel form for redis+sentinel://; no socket timeout (see there).
            "CONFIG": {
                "hosts": channel_layer_hosts(url),
                "prefix": "queuewatch:asgi",
                "symmetric_encryption_keys": [signing.channel_layer_key(secret_key)],
            },
        }
    }
