"""Stalled jobs (reference §4): what a read of the active jobs found, and the reason BullMQ gives
a job that stalled too often.

A job is *currently stalled* when it sits in ``active`` but the lock its worker holds is gone:
the worker died or blocked its event loop past the lock duration, and the next stall check of
any live worker will move it back to waiting. A Redis node reads the active lists and their
locks with ``queues.redis.stalls``."""

from __future__ import annotations

from dataclasses import dataclass, field

from .keys import QueueRef

STALLED_LIMIT_REASON = "job stalled more than allowable limit"


@dataclass
class ActiveLists:
    """What one read of ``active`` lists found: ids per queue (head first), and the queues
    whose list was longer than the budget allowed (only their tail was read)."""

    ids: dict[QueueRef, list[str]] = field(default_factory=dict)
    partial: set[QueueRef] = field(default_factory=set)
