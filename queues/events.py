"""Queue events as every source kind delivers them: one ``Event`` per entry of a queue's event
stream (BullMQ's names and fields, values as text), ordered by their ids. A Redis node follows
its streams with ``queues.redis.events.EventsFollower``; BullMQ on PostgreSQL with
``queues.postgres.events.PostgresEventsFollower``.

An id is ``"<ms>-<seq>"`` on Redis (the time is part of it) and ``"<n>"`` on PostgreSQL (one
sequence per schema): ids of one queue compare as ``_id_tuple``s either way. Where the id holds
no time, the kind gives it in ``at_ms``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .keys import QueueRef


@dataclass(frozen=True)
class Event:
    queue: QueueRef
    stream_id: str
    name: str
    fields: dict
    at_ms: int | None = None  # when the id is not a time (PostgreSQL's ``created_at_ms``)

    @property
    def ts_ms(self) -> int:
        if self.at_ms is not None:
            return self.at_ms
        return int(self.stream_id.split("-", 1)[0])

    @property
    def job_id(self) -> str:
        return self.fields.get("jobId", "")


def _id_tuple(stream_id: str) -> tuple[int, int]:
    ms, _, seq = stream_id.partition("-")
    return int(ms), int(seq or 0)
