"""The schedulers facet on Redis: BullMQ's ``repeat`` set and ``repeat:<id>`` hashes."""

from __future__ import annotations

import builtins

import redis

from .. import scheduler_edit, scheduler_migration, scheduler_runs, schedulers
from ..keys import QueueRef
from ..scheduler_zone import upsert_zone
from . import scheduler_detail as redis_scheduler_detail
from . import scheduler_edit as redis_scheduler_edit
from . import scheduler_migration as redis_scheduler_migration
from . import schedulers as redis_schedulers
from .errors import redis_errors
from .script_release import require_supported


class RedisSchedulers:
    def __init__(self, client: redis.Redis, *, connection: str, cron_tz: str = ""):
        # cron_tz: the zone the connection's workers run zone-less patterns in, if configured.
        self.client, self.connection, self.cron_tz = client, connection, cron_tz

    def list(self, queue: QueueRef) -> list[schedulers.Scheduler]:
        with redis_errors(self.connection):
            return redis_schedulers.read_schedulers(self.client, queue, cron_tz=self.cron_tz)

    def page(self, queue: QueueRef, *, start: int, count: int) -> tuple[builtins.list[schedulers.Scheduler], int]:
        with redis_errors(self.connection):
            return redis_schedulers.read_scheduler_page(
                self.client, queue, start=start, count=count, cron_tz=self.cron_tz
            )

    def spec(self, queue: QueueRef, *, scheduler_id: str) -> scheduler_edit.SchedulerSpec | None:
        with redis_errors(self.connection):
            return redis_scheduler_edit.read_spec(self.client, queue=queue, scheduler_id=scheduler_id)

    def edit(self, queue: QueueRef, *, spec: scheduler_edit.SchedulerSpec) -> scheduler_edit.SchedulerResult:
        with redis_errors(self.connection):
            require_supported(self.client, queue)
            return redis_scheduler_edit.edit_scheduler(self.client, queue=queue, spec=spec, cron_tz=self.cron_tz)

    def create(self, queue: QueueRef, *, spec: scheduler_edit.SchedulerSpec) -> scheduler_edit.SchedulerResult:
        with redis_errors(self.connection):
            require_supported(self.client, queue)
            return redis_scheduler_edit.create_scheduler(self.client, queue=queue, spec=spec, cron_tz=self.cron_tz)

    def detail(self, queue: QueueRef, *, scheduler_id: str) -> scheduler_runs.SchedulerDetail | None:
        with redis_errors(self.connection):
            return redis_scheduler_detail.read_detail(self.client, queue, scheduler_id, cron_tz=self.cron_tz)

    def workers_zone(self, queue: QueueRef, *, scheduler_id: str = ""):
        """The zone a zone-less pattern upserted into ``queue`` (over ``scheduler_id``, if given)
        would run in (``queues.scheduler_zone``): the scheduler's own stored next run is the
        evidence when it has a zone-less pattern, else another zone-less scheduler's."""
        with redis_errors(self.connection):
            evidence = None
            if scheduler_id:
                evidence = redis_scheduler_edit.stored_zone_evidence(self.client, queue, scheduler_id)
            if evidence is None or not evidence[0] or evidence[1]:
                evidence = redis_scheduler_edit.queue_zone_evidence(self.client, queue)
        return upsert_zone(pattern="* * * * *", tz="", configured=self.cron_tz, stored=evidence)

    def remove(self, queue: QueueRef, *, scheduler_id: str) -> scheduler_edit.SchedulerResult:
        with redis_errors(self.connection):
            require_supported(self.client, queue)
            return redis_scheduler_edit.remove_scheduler(self.client, queue=queue, scheduler_id=scheduler_id)

    def migration_plan(self, queue: QueueRef, *, member: str, scheduler_id: str) -> scheduler_migration.MigrationPlan:
        with redis_errors(self.connection):
            return redis_scheduler_migration.plan_migration(
                self.client, queue=queue, member=member, scheduler_id=scheduler_id, cron_tz=self.cron_tz
            )

    def migrate(self, queue: QueueRef, *, plan: scheduler_migration.MigrationPlan) -> scheduler_edit.SchedulerResult:
        with redis_errors(self.connection):
            require_supported(self.client, queue)
            return redis_scheduler_migration.migrate_legacy(self.client, queue=queue, plan=plan)
