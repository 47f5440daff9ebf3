"""The monitor's discovery of queues and the queue list it publishes.

Each connection's queues are found by one resumable SCAN pass at a time, advanced a budgeted
step per second (``queues.discovery_pass``), so a full pass over a huge keyspace costs the
monitored Redis a stated share of one core. The list found is published in the dashboard Redis
for the web processes, which never SCAN (docs/operations.md).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection

from django.conf import settings

from dashboard.connections.registry import Registry
from dashboard.core import dash_redis
from dashboard.core.dash_redis import DashboardRedis, DashboardRedisError
from queues.discovery_pass import discovery_for
from queues.keys import QueueRef

log = logging.getLogger("queuewatch.monitor")

DISCOVERY_INTERVAL = 10.0  # s: a discovery pass never starts sooner than this after the last began
DISCOVERY_STEP_INTERVAL = 1.0  # s between steps of a pass (each costs QUEUEWATCH_DISCOVERY_KEYS_PER_S keys)
LIST_REPUBLISH_S = 20.0  # an unchanged queue list is published again this often (it expires after 60 s)


class QueueLists:
    """Per connection, for one term of leadership: its discovery walk, the list last followed
    and when that list was last published."""

    def __init__(self, *, registry: Registry, dash: DashboardRedis, monitor_name: str):
        self.registry, self.dash, self.monitor_name = registry, dash, monitor_name
        self.keys_per_step = max(1, int(settings.QUEUEWATCH_DISCOVERY_KEYS_PER_S * DISCOVERY_STEP_INTERVAL))
        self.reset()

    def reset(self) -> None:
        self.walks: dict[str, object] = {}  # connection -> its DiscoveryPass / WholeDiscovery
        self.followed: dict[str, list[QueueRef]] = {}
        self.published: dict[str, float] = {}  # connection -> time.monotonic() of the last publish

    def step(self, name: str, cursors: dict[QueueRef, str], viewed: Collection[QueueRef] = ()) -> list[QueueRef] | None:
        """One budgeted step of connection ``name``'s discovery: the new list when it differs
        from the one followed (the caller follows it, then says so with ``followed``), else
        ``None``. A failed step raises the source's own error (the caller translates it with
        ``source.errors()``); the list is published (or republished: it expires) either way.
        ``viewed``: queues viewers opened that the list may not have yet (``adopt``)."""
        walk = self.walks.get(name)
        if walk is None:
            walk = self.walks[name] = self._start(name, cursors)
        adopt(walk, viewed)
        walk.step()
        found = walk.queues
        # Compared with what is followed, not with the step's answer: a term whose first
        # steps failed still follows the list it started from.
        changed = found != self.followed.get(name)
        if changed or time.monotonic() >= self.published.get(name, 0.0) + LIST_REPUBLISH_S:
            try:
                dash_redis.publish_queue_list(self.dash, name, found)
                self.published[name] = time.monotonic()
            except DashboardRedisError as exc:  # the dashboard Redis: retried next step
                log.warning("%s: could not publish the queue list of %s (%s)", self.monitor_name, name, exc)
        return found if changed else None

    def _start(self, name: str, cursors: dict[QueueRef, str]):
        """A new term's discovery starts from what is already known: the list the last leader
        published and the queues with stored cursors. They keep being followed while the first
        pass walks the keyspace; its end drops those it did not meet."""
        try:
            published = dash_redis.read_queue_list(self.dash, name) or []
        except DashboardRedisError:
            published = []
        known = {*published, *(q for q in cursors if q.connection == name)}
        # A kind discovered whole (a Cluster, PostgreSQL) discovers on a thread: the loop keeps
        # ticking while a pass runs.
        return discovery_for(
            self.registry.source(name),
            keys_per_step=self.keys_per_step,
            min_pass_s=DISCOVERY_INTERVAL,
            known=known,
            background=True,
        )


def adopt(walk, queues: Collection[QueueRef]) -> None:
    """Queues viewers opened before discovery listed them: listed at once where the connection's
    walk can confirm them one by one (``DiscoveryPass.adopt``: a new tenant's queue is followed
    within a second, not once the walk of a large keyspace reaches it); other kinds find them on
    their next whole pass."""
    confirm = getattr(walk, "adopt", None)
    if confirm is not None and queues:
        confirm(queues)
