"""The commands facet on Redis: every state change through BullMQ's own Lua scripts (see
``queues.redis.actions``, ``queues.redis.redrive``, ``queues.redis.job_add``,
``queues.redis.queue_settings``). Each script runs only on a queue no newer BullMQ release wrote
(``queues.redis.script_release``); the settings that are plain writes to ``meta`` stay open."""

from __future__ import annotations

import redis

from .. import actions, edit_retry, job_add, queue_settings
from ..job_options import NewJob
from ..keys import QueueRef
from . import actions as redis_actions
from . import edit_retry as redis_edit_retry
from . import flow_actions as redis_flow_actions
from . import job_add as redis_job_add
from . import queue_settings as redis_queue_settings
from .errors import redis_errors
from .redrive import job_redrive_to_source
from .script_release import require_supported


class RedisCommands:
    def __init__(self, client: redis.Redis, *, connection: str):
        self.client, self.connection = client, connection

    def retry(self, queue: QueueRef, *, job_id: str, reset_counters: bool) -> actions.ActionResult:
        with redis_errors(self.connection):
            require_supported(self.client, queue)
            return redis_actions.job_retry(self.client, queue=queue, job_id=job_id, reset_counters=reset_counters)

    def discard(self, queue: QueueRef, *, job_id: str) -> actions.ActionResult:
        with redis_errors(self.connection):
            require_supported(self.client, queue)
            return redis_actions.job_discard(self.client, queue=queue, job_id=job_id)

    def promote(self, queue: QueueRef, *, job_id: str) -> actions.ActionResult:
        with redis_errors(self.connection):
            require_supported(self.client, queue)
            return redis_actions.job_promote(self.client, queue=queue, job_id=job_id)

    def redrive(
        self, dlq: QueueRef, *, job_id: str, source: QueueRef, payload_field: str | None = None
    ) -> actions.ActionResult:
        with redis_errors(self.connection):
            require_supported(self.client, dlq, source)
            return job_redrive_to_source(
                self.client, dlq=dlq, job_id=job_id, source=source, payload_field=payload_field
            )

    def pause(self, queue: QueueRef, *, paused: bool) -> None:
        with redis_errors(self.connection):
            require_supported(self.client, queue)
            redis_actions.queue_pause(self.client, queue=queue, paused=paused)

    def clean(self, queue: QueueRef, *, state: str, older_than_ms: int, limit: int) -> int:
        with redis_errors(self.connection):
            require_supported(self.client, queue)
            return redis_actions.queue_clean(
                self.client, queue=queue, state=state, older_than_ms=older_than_ms, limit=limit
            )

    def add(self, queue: QueueRef, *, job: NewJob, schema: dict | None) -> job_add.AddOutcome:
        with redis_errors(self.connection):
            require_supported(self.client, queue)
            return redis_job_add.add_job(self.client, queue=queue, job=job, schema=schema)

    def edit_and_retry(
        self, queue: QueueRef, *, plan: edit_retry.EditPlan, reset_counters: bool
    ) -> actions.ActionResult:
        with redis_errors(self.connection):
            require_supported(self.client, queue)
            return redis_edit_retry.edit_and_retry(self.client, queue=queue, plan=plan, reset_counters=reset_counters)

    def settings(self, queue: QueueRef) -> queue_settings.QueueSettings:
        with redis_errors(self.connection):
            return redis_queue_settings.read_settings(self.client, queue=queue)

    def set_concurrency(self, queue: QueueRef, *, concurrency: int | None) -> None:
        with redis_errors(self.connection):
            redis_queue_settings.set_global_concurrency(self.client, queue=queue, concurrency=concurrency)

    def set_rate_limit(self, queue: QueueRef, *, max_jobs: int | None, duration_ms: int | None) -> None:
        with redis_errors(self.connection):
            redis_queue_settings.set_global_rate_limit(
                self.client, queue=queue, max_jobs=max_jobs, duration_ms=duration_ms
            )

    def rate_limit_for(self, queue: QueueRef, *, ms: int) -> None:
        with redis_errors(self.connection):
            redis_queue_settings.rate_limit_for(self.client, queue=queue, ms=ms)

    def remove_rate_limit_key(self, queue: QueueRef) -> bool:
        with redis_errors(self.connection):
            return redis_queue_settings.remove_rate_limit_key(self.client, queue=queue)

    def drain(self, queue: QueueRef, *, delayed: bool) -> int:
        with redis_errors(self.connection):
            require_supported(self.client, queue)
            return redis_queue_settings.drain(self.client, queue=queue, delayed=delayed)

    def obliterate(self, queue: QueueRef) -> None:
        with redis_errors(self.connection):
            require_supported(self.client, queue)
            redis_queue_settings.obliterate(self.client, queue=queue)

    def remove_child_dependency(self, queue: QueueRef, *, job_id: str) -> actions.ActionResult:
        with redis_errors(self.connection):
            require_supported(self.client, queue)
            return redis_flow_actions.remove_child_dependency(self.client, queue=queue, job_id=job_id)

    def remove_unprocessed_children(self, queue: QueueRef, *, job_id: str) -> actions.ActionResult:
        with redis_errors(self.connection):
            require_supported(self.client, queue)
            return redis_flow_actions.remove_unprocessed_children(self.client, queue=queue, job_id=job_id)
