"""Queue events as every source kind delivers them: one ``Event`` per entry of a queue's event
stream (BullMQ's names and fields), ordered by their ids. A Redis node follows its streams
with ``queues.redis.events.EventsFollower``."""

from __future__ import annotations

from dataclasses import dataclass

from .keys import QueueRef


@dataclass(frozen=True)
class Event:
    queue: QueueRef
    stream_id: str
    name: str
    fields: dict

    @property
    def ts_ms(self) -> int:
        return int(self.stream_id.split("-", 1)[0])

    @property
    def job_id(self) -> str:
        return self.fields.get("jobId", "")


def _id_tuple(stream_id: str) -> tuple[int, int]:
    ms, _, seq = stream_id.partition("-")
    return int(ms), int(seq or 0)
