"""The server facet on Redis: the health checks of a node and the queues on it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import redis

from ..health import CheckResult, Thresholds
from ..keys import QueueRef
from ..snapshot import QueueSnapshot
from ..workers import Worker
from .health_checks import checks_by_shares


class RedisServer:
    def __init__(self, client: redis.Redis, *, connection: str):
        self.client, self.connection = client, connection

    def health_checks(
        self,
        queues: list[QueueRef],
        *,
        state: dict | None,
        now: int,
        thresholds: Thresholds,
        is_dead_letter: Callable[[str], bool],
        snapshots: Mapping[QueueRef, QueueSnapshot] | None,
        workers: Mapping[QueueRef, list[Worker]] | None,
        workers_at: int | None,
    ) -> Iterable[CheckResult]:
        # An unreachable server is its own failing check, never an exception; the results come
        # a share of the queues at a time, so the caller never holds every queue's at once.
        return checks_by_shares(
            self.client,
            queues,
            state,
            now,
            connection=self.connection,
            thresholds=thresholds,
            is_dead_letter=is_dead_letter,
            snapshots=snapshots,
            workers=workers,
            workers_at=workers_at,
        )
