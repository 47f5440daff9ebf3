"""Hostile job hashes, as a careless or malicious producer writes them with redis-cli."""

from __future__ import annotations

import contextlib
import logging

DEEP = "[" * 900 + "]" * 900  # parses, but every recursive walk after it raised RecursionError


def seed_non_finite(r, queue: str = "evil", *, prefix: str = "bull") -> None:
    """Job ``inf`` with non-finite numbers and deep JSON everywhere, listed in failed and
    delayed with infinite scores, next to an ordinary job ``calm-1``."""
    q = f"{prefix}:{queue}:"
    r.hset(q + "meta", mapping={"opts.maxLenEvents": 10000})
    r.hset(
        q + "inf",
        mapping={
            "name": "hostile",
            "finishedOn": "1e400",
            "timestamp": "Infinity",
            "processedOn": "inf",
            "atm": "1e400",
            "delay": "-inf",
            "opts": '{"timestamp":Infinity,"attempts":1e400}',
            "data": DEEP,
            "returnvalue": '{"n":1e400,"m":NaN}',
            "progress": "1e400",
            "stacktrace": DEEP,
        },
    )
    r.zadd(q + "failed", {"inf": float("inf")})
    r.zadd(q + "delayed", {"inf": float("inf")})
    r.hset(
        q + "calm-1",
        mapping={"name": "ordinary", "data": '{"k":1}', "timestamp": 1700000000000, "finishedOn": 1700000001000},
    )
    r.zadd(q + "failed", {"calm-1": 1700000001000})
    r.rpush(q + "wait", "inf")  # oldest waiting job: its timestamp is not a time


@contextlib.contextmanager
def monitor_log():
    """Messages the monitor logs meanwhile (its own handler: independent of pytest's capture)."""
    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record):
            messages.append(record.getMessage())

    handler = Collect(level=logging.WARNING)
    logger = logging.getLogger("queuewatch.monitor")
    logger.addHandler(handler)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)
