"""What the intake's threads hand to the leader's loop: one small frozen type per kind of
news, so the loop dispatches with ``match`` on the type instead of on a string tag."""

from __future__ import annotations

from dataclasses import dataclass

from queues.events import Event
from queues.keys import QueueRef


@dataclass(frozen=True)
class EventsRead:
    """Events read from a connection, in order per queue, and the gaps (ms from, ms to)
    where a queue's stream was trimmed past the cursor."""

    connection: str
    events: list[Event]
    gaps: dict[QueueRef, tuple[int, int]]


@dataclass(frozen=True)
class Followed:
    """Counting of these queues starts after these event ids (sent before any of their events)."""

    connection: str
    start_ids: dict[QueueRef, str]


@dataclass(frozen=True)
class RecentEvents:
    """Events from just before counting starts: the job clock learns from them, nothing is
    counted — but the timings of ``fresh`` queues, followed for the first time (no stored
    cursor: nobody counted them), are (``CountTracker.warm``)."""

    connection: str
    events: list[Event]
    fresh: frozenset[QueueRef] = frozenset()


@dataclass(frozen=True)
class ConnectionDown:
    connection: str
    reason: str


@dataclass(frozen=True)
class ConnectionUp:
    connection: str


@dataclass(frozen=True)
class ExactReadAsked:
    """Queuewatch itself changed this queue: read it exactly now (and, with
    ``parents_elsewhere``, the queues of its connection holding flow parents in waiting-children)."""

    queue: QueueRef
    parents_elsewhere: bool = False


@dataclass(frozen=True)
class ViewerArrived:
    """Someone started viewing this queue: render its fragments at once."""

    queue: QueueRef


IntakeItem = EventsRead | Followed | RecentEvents | ConnectionDown | ConnectionUp | ExactReadAsked | ViewerArrived
