"""Data some rule kinds need beyond the monitor's per-queue signals, read through each
connection's source only when an enabled rule needs it (see ``Need``). A connection or queue
that cannot be read, or whose kind does not offer the read, is skipped this time."""

from __future__ import annotations

import datetime as dt
import logging

from ..errors import SourceUnavailable
from .base import Need

log = logging.getLogger("queuewatch.alerts")


def read_scheduler_facts(*, signals: list, source_for, down: dict[str, str], now: dt.datetime) -> dict:
    """Job schedulers of every queue that has any, on reachable connections: QueueRef -> list."""
    out = {}
    for sig in signals:
        q = sig.snapshot.queue
        if not sig.snapshot.schedulers or q.connection in down:
            continue
        stored = source_for(q.connection).schedulers
        if stored is None:
            continue
        try:
            out[q] = stored.list(q)
        except SourceUnavailable:
            log.warning("could not read the job schedulers of %s/%s; skipped this time", q.connection, q.name)
    return out


def count_due_delayed(*, signals: list, source_for, down: dict[str, str], now: dt.datetime) -> dict:
    """Delayed jobs already due, per queue with delayed jobs, one probe per connection. (A
    worker promotes due ones, so a count that stays up means no worker is fetching.)"""
    by_conn: dict[str, list] = {}
    for sig in signals:
        q = sig.snapshot.queue
        if sig.snapshot.counts.get("delayed") and q.connection not in down:
            by_conn.setdefault(q.connection, []).append(q)
    out = {}
    for name, queues in by_conn.items():
        probes = source_for(name).probes
        if probes is None:
            continue
        try:
            out.update(probes.due_delayed(queues, now_ms=int(now.timestamp() * 1000)))
        except SourceUnavailable:
            log.warning("could not count due delayed jobs on %s; skipped this time", name)
    return out


SCHEDULERS = Need("schedulers", read_scheduler_facts)
DUE_DELAYED = Need("due_delayed", count_due_delayed)
