"""The monitor's probes on Redis: active lists, locks and single fields, pipelined."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import redis

from ..keys import QueueRef
from ..stalls import ActiveLists
from .errors import redis_errors
from .stalls import read_active, without_lock

# BullMQ scores a delayed job ``due_ms * 4096 + seq``.
DELAY_SCORE_FACTOR = 4096


class RedisProbes:
    def __init__(self, client: redis.Redis, *, connection: str):
        self.client, self.connection = client, connection

    def active(self, lengths: Mapping[QueueRef, int]) -> ActiveLists:
        with redis_errors(self.connection):
            return read_active(self.client, dict(lengths))  # whole lists, bounded

    def without_lock(self, jobs: Mapping[QueueRef, list[str]]) -> dict[QueueRef, list[str]]:
        with redis_errors(self.connection):
            return without_lock(self.client, dict(jobs))

    def job_fields(self, jobs: Sequence[tuple[QueueRef, str]], fields: Sequence[str]) -> list[list[bytes | None]]:
        with redis_errors(self.connection):
            pipe = self.client.pipeline(transaction=False)
            for queue, job_id in jobs:
                pipe.hmget(queue.job_key(job_id), list(fields))
            return pipe.execute()

    def finished_counts(
        self, queues: Sequence[QueueRef], *, minutes: Sequence[int], width_ms: int
    ) -> dict[QueueRef, list[tuple[int, int]]]:
        with redis_errors(self.connection):
            pipe = self.client.pipeline(transaction=False)
            for q in queues:
                for m in minutes:
                    pipe.zcount(q.key("completed"), m, m + width_ms - 1)
                    pipe.zcount(q.key("failed"), m, m + width_ms - 1)
            replies = iter(pipe.execute())
        return {q: [(next(replies), next(replies)) for _ in minutes] for q in queues}

    def due_delayed(self, queues: Sequence[QueueRef], *, now_ms: int) -> dict[QueueRef, int]:
        limit = now_ms * DELAY_SCORE_FACTOR + DELAY_SCORE_FACTOR - 1
        with redis_errors(self.connection):
            pipe = self.client.pipeline(transaction=False)
            for q in queues:
                pipe.zcount(q.key("delayed"), "-inf", limit)
            return dict(zip(queues, pipe.execute()))
