"""The server facet on PostgreSQL: the health checks of a BullMQ database and its queues.

The connection-level checks are the kind's own (``queues.health.postgres_checks``: reachability,
schema version, long transactions, connection headroom, dead job rows); the queue checks are
those every kind shares (``queues.health.judge_queues``), with the workers BullMQ named in
``pg_stat_activity`` (the leading monitor's reading when it has every queue, else read here), and
without the two whose facts this kind does not read: the legacy repeat metadata (a Redis-only
layout) and the rate limiter."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import psycopg

from ..health import CheckResult, Thresholds, WorkerFacts, judge_queues, worst_first
from ..health.postgres_checks import check_reachable, judge_server
from ..keys import QueueRef
from ..snapshot import QueueSnapshot
from ..sources.spec import hide_url_secrets
from ..workers import Worker
from .connection import PostgresConnection, describe
from .health_facts import read_event_streams, read_queue_facts, read_server_facts
from .workers import read_workers


class PostgresServer:
    def __init__(self, db: PostgresConnection, *, connection: str, schemas: tuple[str, ...]):
        self.db, self.connection, self.schemas = db, connection, schemas

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
    ) -> list[CheckResult]:
        # An unreachable server is one failing postgres.reachable result, never an exception.
        try:
            server = read_server_facts(self.db, self.schemas, long_ms=thresholds.long_transaction_ms)
            server.event_streams = read_event_streams(self.db, queues)
            facts = read_queue_facts(self.db, queues, snapshots, oldest_from=thresholds.finished_count)
            if workers is not None and all(q in workers for q in queues):
                found = WorkerFacts({q: workers[q] for q in queues}, "monitor", taken_at=workers_at)
            else:
                found = WorkerFacts(read_workers(self.db, queues), "pg_stat_activity")
        except psycopg.Error as exc:
            return [check_reachable(self.connection, hide_url_secrets(describe(exc), self.db.url))]
        results = judge_server(self.connection, server, now, thresholds)
        results += judge_queues(
            facts, found, state, now, thresholds=thresholds, is_dead_letter=is_dead_letter, limits_read=False
        )
        return worst_first(results)
