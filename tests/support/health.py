"""Helpers for the health-check and /metrics tests: queues that exist before a monitor starts,
and reading the monitor's state document."""

from __future__ import annotations

from queues.keys import QueueRef
from tests.support.waiting import wait_for


def make_queue(client, name, prefix="bull"):
    """A queue as BullMQ leaves it on first use: only its meta hash."""
    client.hset(f"{prefix}:{name}:meta", "opts.maxLenEvents", 10000)
    return QueueRef("default", prefix, name)


def queue_state(name):
    """(this queue's entry in the monitor's state document or None, the whole document)."""
    from dashboard.core import dash_redis, state_store

    state = state_store.read_state(dash_redis.dashboard_redis()) or {"queues": []}
    return next((q for q in state["queues"] if q["name"] == name), None), state


def wait_followed(monitor, *names):
    """Until the monitor follows these queues' events streams and has ticked twice."""
    wait_for(
        lambda: (
            all(QueueRef("default", "bull", n) in getattr(monitor, "applied_cursors", {}) for n in names)
            and monitor.stats["ticks"] >= 2
        ),
        timeout=20,
    )
