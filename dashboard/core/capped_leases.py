"""Capped leases in Queuewatch's own Redis: at most ``limit`` held under one key, across every
web process (a user's downloads: ``web.download_slots``; their live sockets: ``live.socket_leases``).

One sorted set per holder (a user): member = lease token, score = lease end in ms on Redis's
clock (web hosts' clocks do not matter). Taking one first drops lapsed leases, then counts, in
one script (atomic across processes); a process that dies leaves leases that lapse on their own.
"""

from __future__ import annotations

from dashboard.core.dash_redis import DashboardRedis

_TAKE_LEASE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == false and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""
# Extends a lease still held (XX: a released or lapsed one is not brought back).
_RENEW_LEASE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return n
"""


def take(client: DashboardRedis, key: str, token: str, *, limit: int, lease_ms: int) -> bool:
    """Take a lease on one of ``limit`` places under ``key``; False when all are held."""
    return bool(client.eval(_TAKE_LEASE, 1, key, token, limit, lease_ms))


def renew(client: DashboardRedis, key: str, token: str, *, lease_ms: int) -> None:
    client.eval(_RENEW_LEASE, 1, key, token, lease_ms)


def drop(client: DashboardRedis, key: str, token: str) -> None:
    client.zrem(key, token)
