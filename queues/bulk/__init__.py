"""A bulk task, the same for every source kind: what it does (``plan.py``: ``BulkPlan``, fixed
when the operator confirms it), how far it got and where that is kept (``progress.py``:
``Progress``, ``ProgressStore``, ``MemoryStore``), and the JSON merge patch an edit-and-retry
applies to each job's stored data (``edit_patch.py``).

A Redis node runs the task with its crash-safe, paced, cancellable engine: ``queues.redis.bulk``
(``run_bulk``). Importers use the package (``from queues import bulk``; ``bulk.BulkPlan``, …).
"""

from __future__ import annotations

from .plan import ACTION_STATES, ACTIONS, DEFAULT_RATE, MAX_BATCH, BulkPlan
from .progress import CANCELLED, DONE_STATE, GONE, RUNNING, MemoryStore, Progress, ProgressStore

__all__ = [
    "ACTIONS",
    "ACTION_STATES",
    "CANCELLED",
    "DEFAULT_RATE",
    "DONE_STATE",
    "GONE",
    "MAX_BATCH",
    "RUNNING",
    "BulkPlan",
    "MemoryStore",
    "Progress",
    "ProgressStore",
]
