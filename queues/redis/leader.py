"""A token-checked leader lock in Redis, so exactly one monitor reads and publishes.

``SET key token NX PX ttl`` acquires; extending and releasing check the token inside a tiny Lua
script so a monitor whose lock already expired (and was taken by a standby) can never extend or
delete the new leader's lock. This script runs on Queuewatch's own (dashboard) Redis, never
against BullMQ keys.
"""

from __future__ import annotations

import secrets

import redis

from . import replies

_EXTEND = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class LeaderLock:
    def __init__(self, client: redis.Redis, key: str = "queuewatch:monitor:leader", *, ttl_ms: int = 5000):
        self.client = client
        self.key = key
        self.ttl_ms = ttl_ms
        self.token = secrets.token_hex(16)
        self._extend = client.register_script(_EXTEND)
        self._release = client.register_script(_RELEASE)
        self.held = False

    def acquire(self) -> bool:
        self.held = bool(self.client.set(self.key, self.token, nx=True, px=self.ttl_ms))
        return self.held

    def extend(self) -> bool:
        """Extend our lease; False means leadership is lost and the caller must stop leading."""
        try:
            self.held = bool(self._extend(keys=[self.key], args=[self.token, self.ttl_ms]))
        except redis.RedisError:
            self.held = False
        return self.held

    def release(self) -> None:
        try:
            self._release(keys=[self.key], args=[self.token])
        except redis.RedisError:
            pass  # it expires by itself
        self.held = False

    def holder(self) -> str | None:
        value = replies.value(self.client.get(self.key))
        return value.decode() if value else None
