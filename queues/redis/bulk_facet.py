"""The bulk facet on Redis: the batch engine of ``queues.redis.bulk`` on this connection."""

from __future__ import annotations

from collections.abc import Callable

import redis

from ..bulk import BulkPlan, Progress, ProgressStore
from .bulk import run_bulk
from .errors import unreachable_only
from .script_release import require_supported


class RedisBulk:
    def __init__(self, client: redis.Redis, *, connection: str):
        self.client, self.connection = client, connection

    def run(
        self,
        *,
        plan: BulkPlan,
        store: ProgressStore,
        should_cancel: Callable[[], bool],
        on_progress: Callable[[Progress], None],
        count_limit: int | None,
    ) -> Progress:
        with unreachable_only(self.connection):
            require_supported(self.client, plan.queue)
            return run_bulk(
                self.client,
                plan=plan,
                store=store,
                should_cancel=should_cancel,
                on_progress=on_progress,
                count_limit=count_limit,
            )
