"""The job tools and deduplication facets on Redis (``queues.redis.job_tools``,
``queues.redis.dedup``): each state change through BullMQ's own scripts, only on a queue no
newer BullMQ release wrote (``queues.redis.script_release``)."""

from __future__ import annotations

import redis

from ..actions import ActionResult
from ..dedup import DedupPage
from ..keys import QueueRef
from ..redact import Redactor
from . import dedup, job_tools
from .errors import redis_errors
from .script_release import require_supported


class RedisJobTools:
    def __init__(self, client: redis.Redis, *, connection: str):
        self.client, self.connection = client, connection

    def change_priority(self, queue: QueueRef, *, job_id: str, priority: int) -> ActionResult:
        with redis_errors(self.connection):
            require_supported(self.client, queue)
            return job_tools.change_priority(self.client, queue=queue, job_id=job_id, priority=priority)

    def change_delay(self, queue: QueueRef, *, job_id: str, delay_ms: int) -> ActionResult:
        with redis_errors(self.connection):
            require_supported(self.client, queue)
            return job_tools.change_delay(self.client, queue=queue, job_id=job_id, delay_ms=delay_ms)

    def move_to_failed(self, queue: QueueRef, *, job_id: str, reason: str) -> ActionResult:
        with redis_errors(self.connection):
            require_supported(self.client, queue)
            return job_tools.move_to_failed(self.client, queue=queue, job_id=job_id, reason=reason)


class RedisDedup:
    def __init__(self, client: redis.Redis, *, connection: str):
        self.client, self.connection = client, connection

    def page(self, queue: QueueRef, *, cursor: str, redactor: Redactor) -> DedupPage:
        with redis_errors(self.connection):
            return dedup.dedup_page(self.client, queue, cursor=cursor, redactor=redactor)

    def release(self, queue: QueueRef, *, dedup_id: str, owner: str) -> ActionResult:
        with redis_errors(self.connection):
            require_supported(self.client, queue)
            return dedup.release(self.client, queue=queue, dedup_id=dedup_id, owner=owner)
