"""At most one running bulk task per queue."""

from __future__ import annotations

import uuid

import redis

from ...keys import QueueRef
from ...text import to_text


class BulkLock:
    """At most one running bulk task per queue: a token-checked lock with a TTL, extended by
    the engine after every batch, so a dead runner's lock lapses and a resume can take over."""

    RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
    EXTEND = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"

    def __init__(
        self,
        client: redis.Redis,
        *,
        queue: QueueRef,
        owner: str | None = None,
        ttl_ms: int = 30000,
        namespace: str = "queuewatch:bulk-lock",
    ):
        self.client, self.queue, self.ttl_ms = client, queue, ttl_ms
        self.owner = owner or uuid.uuid4().hex
        self.key = f"{namespace}:{queue.connection}:{queue.prefix}:{queue.name}"

    def acquire(self) -> bool:
        return bool(self.client.set(self.key, self.owner, nx=True, px=self.ttl_ms)) or self.holder() == self.owner

    def extend(self) -> bool:
        return bool(self.client.eval(self.EXTEND, 1, self.key, self.owner, self.ttl_ms))

    def release(self) -> None:
        self.client.eval(self.RELEASE, 1, self.key, self.owner)

    def holder(self) -> str | None:
        raw = self.client.get(self.key)
        return to_text(raw) if raw is not None else None


class LockLost(Exception):
    """The queue's bulk lock was lost (expired or taken): stop, another runner may be active."""
