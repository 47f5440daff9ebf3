"""Reading the workers document the leading monitor publishes (``channels.publish_workers``):
one home for what it says about a queue, for the queue page, the advice and the health checks.
Reads the dashboard Redis only, never the monitored one."""

from __future__ import annotations

from dataclasses import dataclass, field

from dashboard.core import dash_redis
from dashboard.core.dash_redis import DashboardRedisError
from dashboard.live import channels as live
from queues.keys import QueueRef
from queues.workers import Worker


@dataclass
class QueueWorkers:
    """A queue's workers as the monitor last read them (``queues.workers``); ``known`` is false
    without a running monitor or where the server refuses CLIENT LIST (then ``error`` says why)."""

    known: bool
    workers: list[Worker] = field(default_factory=list)
    taken_at: int | None = None
    error: str = ""


def workers_document() -> dict:
    """The monitor's workers document from the dashboard Redis (``{}`` without one)."""
    try:
        return dash_redis.read_workers(dash_redis.dashboard_redis()) or {}
    except DashboardRedisError:  # pages and checks work without the dashboard Redis
        return {}


def queue_workers(queue: QueueRef, doc: dict | None = None) -> QueueWorkers:
    doc = workers_document() if doc is None else doc
    found = (doc.get("queues") or {}).get(live.queue_id(queue))
    if found is None:
        return QueueWorkers(False, error=(doc.get("unknown") or {}).get(queue.connection, ""))
    return QueueWorkers(True, [Worker.from_dict(w) for w in found], doc.get("taken_at"))
