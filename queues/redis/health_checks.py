"""Running every health check for one Redis node connection: read its facts
(``queues.redis.health_facts``), then judge them (``queues.health``), a share of its queues at
a time."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import redis

from ..health import (
    DEFAULT_THRESHOLDS,
    CheckResult,
    StateView,
    Thresholds,
    check_reachable,
    judge_queues,
    judge_server,
    worst_first,
)
from ..keys import QueueRef
from ..snapshot import QueueSnapshot
from ..workers import Worker
from .health_facts import read_queue_facts, read_server_facts, read_worker_facts

# Queues whose facts are read and judged at a time. At 10,000 queues the facts and results of
# every queue at once (some 80,000 results, each with its words) were the monitor's largest
# moment, ~170 MiB above its resting size; a share's are a few MiB.
QUEUES_PER_SHARE = 500


def run_checks(
    client: redis.Redis, queues: list[QueueRef], state: dict | None, now: int, **options
) -> list[CheckResult]:
    """Every check for one connection and its ``queues``, worst first: ``checks_by_shares``
    (with its keyword options), gathered."""
    return worst_first(checks_by_shares(client, queues, state, now, **options))


def checks_by_shares(
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
) -> Iterator[CheckResult]:
    """Every check for one connection and its ``queues``, ``QUEUES_PER_SHARE`` queues at a time
    (in no particular order), for a caller that folds each result away as it comes.

    ``state`` is the monitor's state document (``dashboard.core.state_store.read_state``) or None; checks
    that need it answer ``unknown`` when it is missing or stale. ``now`` is ms since the epoch.
    A connection that cannot be reached gives one failing ``redis.reachable`` result; one lost
    part-way ends with it, after the results of the shares read before, and without the
    server's own checks.
    ``snapshots``: queue figures the caller already holds (the monitor's), not read again.
    ``workers``: the leading monitor's last reading of the queues' workers (taken at
    ``workers_at``), judged instead of a ``CLIENT LIST`` of our own when it has every queue.
    """
    connection = connection or (queues[0].connection if queues else "default")
    view = StateView.of(state, now)
    try:
        server = read_server_facts(client)
        found = read_worker_facts(client, queues, workers, workers_at)
        for start in range(0, len(queues), QUEUES_PER_SHARE):
            facts = read_queue_facts(
                client, queues[start : start + QUEUES_PER_SHARE], snapshots, oldest_from=thresholds.finished_count
            )
            yield from judge_queues(facts, found, view, now, thresholds=thresholds, is_dead_letter=is_dead_letter)
    except redis.RedisError as exc:
        yield check_reachable(connection, str(exc) or exc.__class__.__name__)
        return
    yield from judge_server(connection, server, thresholds)
