"""Data some rule kinds need beyond the monitor's per-queue signals, read from Redis only when
an enabled rule needs it (see ``Need``). Plain commands, pipelined; a connection or queue that
cannot be read is logged and skipped this time."""

from __future__ import annotations

import datetime as dt
import logging

import redis

from ..schedulers import read_schedulers
from .base import Need

log = logging.getLogger("queuewatch.alerts")


def read_scheduler_facts(*, signals: list, client_for, down: dict[str, str], now: dt.datetime) -> dict:
    """Job schedulers of every queue that has any, on reachable connections: QueueRef -> list."""
    out = {}
    for sig in signals:
        q = sig.snapshot.queue
        if not sig.snapshot.schedulers or q.connection in down:
            continue
        try:
            out[q] = read_schedulers(client_for(q.connection), q)
        except redis.RedisError:
            log.warning("could not read the job schedulers of %s/%s; skipped this time", q.connection, q.name)
    return out


def count_due_delayed(*, signals: list, client_for, down: dict[str, str], now: dt.datetime) -> dict:
    """Delayed jobs already due, per queue with delayed jobs: one ``ZCOUNT`` each, pipelined
    per connection. (BullMQ scores delayed jobs ``due_ms * 4096 + seq``; a worker promotes
    due ones, so a count that stays up means no worker is fetching.)"""
    limit = int(now.timestamp() * 1000) * 4096 + 4095
    by_conn: dict[str, list] = {}
    for sig in signals:
        q = sig.snapshot.queue
        if sig.snapshot.counts.get("delayed") and q.connection not in down:
            by_conn.setdefault(q.connection, []).append(q)
    out = {}
    for name, queues in by_conn.items():
        try:
            pipe = client_for(name).pipeline(transaction=False)
            for q in queues:
                pipe.zcount(q.key("delayed"), "-inf", limit)
            out.update(zip(queues, pipe.execute()))
        except redis.RedisError:
            log.warning("could not count due delayed jobs on %s; skipped this time", name)
    return out


SCHEDULERS = Need("schedulers", read_scheduler_facts)
DUE_DELAYED = Need("due_delayed", count_due_delayed)
