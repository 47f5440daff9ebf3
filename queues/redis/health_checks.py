"""Running every health check for one Redis node connection: read its facts once
(``queues.redis.health_facts``), then judge them (``queues.health.judge_connection``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import redis

from ..health import DEFAULT_THRESHOLDS, CheckResult, Thresholds, check_reachable, judge_connection
from ..keys import QueueRef
from ..snapshot import QueueSnapshot
from ..workers import Worker
from .health_facts import read_queue_facts, read_server_facts, read_worker_facts


def run_checks(
    client: redis.Redis,
    queues: list[QueueRef],
    state: dict | None,
    now: int,
    *,
    connection: str | None = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    is_dead_letter: Callable[[str], bool] | None = None,
    snapshots: Mapping[QueueRef, QueueSnapshot] | None = None,
    workers: Mapping[QueueRef, list[Worker]] | None = None,
    workers_at: int | None = None,
) -> list[CheckResult]:
    """Every check for one connection and its ``queues``, worst first.

    ``state`` is the monitor's state document (``dashboard.core.state_store.read_state``) or None; checks
    that need it answer ``unknown`` when it is missing or stale. ``now`` is ms since the epoch.
    A connection that cannot be reached gives one failing ``redis.reachable`` result.
    ``snapshots``: queue figures the caller already holds (the monitor's), not read again.
    ``workers``: the leading monitor's last reading of the queues' workers (taken at
    ``workers_at``), judged instead of a ``CLIENT LIST`` of our own when it has every queue.
    """
    connection = connection or (queues[0].connection if queues else "default")
    try:
        server = read_server_facts(client)
        facts = read_queue_facts(client, queues, snapshots, oldest_from=thresholds.finished_count)
        found = read_worker_facts(client, queues, workers, workers_at)
    except redis.RedisError as exc:
        return [check_reachable(connection, str(exc) or exc.__class__.__name__)]
    return judge_connection(
        connection, server, facts, found, state, now, thresholds=thresholds, is_dead_letter=is_dead_letter
    )
