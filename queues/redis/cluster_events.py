"""Following BullMQ's ``events`` streams on a Redis Cluster.

A Cluster refuses an ``XREAD`` naming streams of several hash slots (``CROSSSLOT``), even when
one node holds them all. So the followed queues are grouped by slot (queues sharing a hash tag
share one: ``{bull}:a`` and ``{bull}:b`` are read together), each group is an ``EventsFollower``
(cursors, gap checks, the recent tail: the single-node code, unchanged) on a dedicated
connection to the primary owning the slot, one connection per primary whatever the number of
groups.

One ``read``:

* one group in all (every queue under one tagged prefix, the common case): a blocking ``XREAD``
  on it, exactly as on a single node;
* several groups: a blocking ``XREAD`` of at most ``poll_ms`` on the group with the most queues,
  then one pipelined round of non-blocking ``XREAD``s (one per group) on each primary for the
  other groups. An event of the large group arrives at once; one of another group waits at
  most ``poll_ms``. Idle, that is 1 + (number of primaries) round trips per ``poll_ms``.

A slot that moved (``MOVED``/``ASK`` during resharding or after a failover) makes it read the
slot map again and regroup, keeping every cursor (the gap check then runs on each stream, so
events trimmed meanwhile are reconciled, never lost silently). While a slot is being migrated
its keys answer ``ASK`` and the map still names the old owner: the follower then waits, cursors
kept, and tries again on each ``read`` (as long as a read blocks) until the map names the new
owner. A resharding is not an outage: nothing is raised to the caller for it.
"""

from __future__ import annotations

import time
from typing import Protocol

import redis

from ..events import Event
from ..keys import QueueRef
from .events import EventsFollower
from .snapshot import queue_slot

POLL_MS = 250  # the longest wait for an event of a group not blocked on

MOVED = (redis.exceptions.MovedError, redis.exceptions.AskError)  # a slot now served elsewhere
Gaps = dict[QueueRef, tuple[int, int]]


class SlotOwners(Protocol):
    """The slot map, and dedicated connections to the primaries (given by the source kind)."""

    def owner(self, slot: int) -> str:
        """The name (``host:port``) of the primary owning ``slot``."""
        ...

    def connect(self, node: str) -> redis.Redis:
        """A new connection to that primary, for blocking reads (socket timeout beyond the block)."""
        ...

    def refresh(self) -> None:
        """Read the slot map again."""
        ...


class ClusterEventsFollower:
    def __init__(self, owners: SlotOwners, *, block_ms: int = 1000, count: int = 1000, poll_ms: int = POLL_MS):
        self.owners = owners
        self.block_ms, self.count, self.poll_ms = block_ms, count, poll_ms
        self._clients: dict[str, redis.Redis] = {}  # one per primary
        self._groups: dict[int, tuple[str, EventsFollower]] = {}  # slot -> (its primary, follower)
        self.last_ids: dict[QueueRef, str] = {}
        # Queues to follow again, with their cursors, once the slot map stops redirecting.
        self._unsettled: tuple[list[QueueRef], dict[QueueRef, str]] | None = None

    def _client(self, node: str) -> redis.Redis:
        if node not in self._clients:
            self._clients[node] = self.owners.connect(node)
        return self._clients[node]

    def connected(self, nodes: list[str]) -> None:
        """Open (and check) the connections to these primaries now (raises if one is down)."""
        for node in nodes:
            self._client(node).ping()

    def follow(self, queues: list[QueueRef], start_ids: dict[QueueRef, str] | None = None) -> list[QueueRef]:
        """As ``EventsFollower.follow``. A queue whose keys span slots (no hash tag) is not
        followed: BullMQ cannot run it on a Cluster, and it has no stream to read as one."""
        start_ids = start_ids or {}
        before = set(self.last_ids)
        if self._unsettled is not None:
            # Waiting for a moving slot: resume each queue from our cursor, as a regroup would.
            self._regroup(queues, start_ids)
            return [q for q in queues if q in self.last_ids and q not in before]
        try:
            self._follow(queues, start_ids)
        except MOVED:
            self._regroup(queues, start_ids)
        return [q for q in queues if q in self.last_ids and q not in before]

    def _follow(self, queues: list[QueueRef], start_ids: dict[QueueRef, str]) -> None:
        by_slot: dict[int, list[QueueRef]] = {}
        for q in queues:
            slot = queue_slot(q)
            if slot is not None:
                by_slot.setdefault(slot, []).append(q)
        for slot in [s for s in self._groups if s not in by_slot]:
            del self._groups[slot]
        try:
            for slot, slot_queues in by_slot.items():
                if slot not in self._groups:
                    node = self.owners.owner(slot)
                    follower = EventsFollower(self._client(node), block_ms=self.block_ms, count=self.count)
                    self._groups[slot] = (node, follower)
                self._groups[slot][1].follow(slot_queues, start_ids)
        finally:
            self._gather_cursors()

    def recent(self, queues: list[QueueRef], *, count: int) -> list[Event]:
        wanted = set(queues)
        events: list[Event] = []
        for _node, follower in self._groups.values():
            mine = [q for q in follower.last_ids if q in wanted]
            if mine:
                events += follower.recent(mine, count=count)
        return events

    def read(self, block_ms: int | None = None) -> tuple[list[Event], Gaps]:
        block = self.block_ms if block_ms is None else block_ms
        if self._unsettled is not None and not self._settle():
            time.sleep(min(block, self.poll_ms) / 1000)  # the slot is still moving: wait as a read would
            return [], {}
        if not self._groups:
            return [], {}
        try:
            if len(self._groups) == 1:
                (_node, only), *_ = self._groups.values()
                result = only.read(block)
            else:
                result = self._read_groups(min(block, self.poll_ms))
        except MOVED:
            self._regroup()
            return [], {}
        self._gather_cursors()
        return result

    def _read_groups(self, block: int) -> tuple[list[Event], Gaps]:
        """Block on the largest group, then poll the others (one pipeline per primary)."""
        largest = max(self._groups, key=lambda slot: len(self._groups[slot][1].last_ids))
        events, gaps = self._groups[largest][1].read(block)
        by_node: dict[str, list[EventsFollower]] = {}
        for slot, (node, follower) in self._groups.items():
            if slot != largest:
                by_node.setdefault(node, []).append(follower)
        try:
            for node, followers in by_node.items():
                pipe = self._client(node).pipeline(transaction=False)
                for follower in followers:
                    pipe.xread(follower.streams(), count=self.count)
                for follower, response in zip(followers, pipe.execute()):
                    more, more_gaps = follower.take(response)
                    events += more
                    gaps.update(more_gaps)
        except MOVED:
            # The events already taken moved their cursors: hand them on; the rest are read
            # from the new owners next time.
            self._regroup()
        return events, gaps

    def _regroup(self, queues: list[QueueRef] | None = None, start_ids: dict[QueueRef, str] | None = None) -> None:
        """The slot map changed: read it again and follow ``queues`` (by default the followed
        ones) afresh, each from its cursor where it has one."""
        cursors = dict(self.last_ids)
        self._unsettled = (list(cursors) if queues is None else list(queues), {**(start_ids or {}), **cursors})
        self._settle()

    def _settle(self) -> bool:
        """Follow the unsettled queues on the primaries the slot map names now; False (and the
        queues stay unsettled, with their cursors) while a slot still redirects."""
        if self._unsettled is None:
            return True
        queues, starts = self._unsettled
        self.owners.refresh()
        self._groups = {}
        try:
            self._follow(queues, starts)
        except MOVED:
            self._groups = {}
            self.last_ids = {q: starts[q] for q in queues if q in starts}
            return False
        self._unsettled = None
        return True

    def _gather_cursors(self) -> None:
        self.last_ids = {q: last for _node, follower in self._groups.values() for q, last in follower.last_ids.items()}
