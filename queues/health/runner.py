"""Running every check for one connection: read its facts once, then judge them."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import redis

from ..keys import QueueRef
from ..messages import _
from ..snapshot import QueueSnapshot
from ..workers import Worker
from .facts import read_queue_facts, read_server_facts, read_worker_facts
from .queue_checks import (
    check_duplicated_adds,
    check_events_trimmed,
    check_finished_retention,
    check_legacy_repeat,
    check_paused,
    check_rate_limit,
    check_repeated_stalls,
    check_workers,
)
from .redis_checks import (
    check_eviction_policy,
    check_memory,
    check_persistence,
    check_reachable,
    check_version,
)
from .results import DEFAULT_THRESHOLDS, CheckResult, Thresholds, worst_first
from .wording import format_age

# A state document older than this is treated as missing: no monitor is leading.
STATE_MAX_AGE_MS = 120_000


def state_index(state: dict | None) -> dict[tuple[str, str, str], dict]:
    if not state:
        return {}
    return {(e.get("connection"), e.get("prefix"), e.get("name")): e for e in state.get("queues") or []}


def usable_state(state: dict | None, now: int) -> tuple[dict | None, str]:
    """The state document if it is fresh enough to trust, and a note saying why not."""
    if not state:
        return None, _("No monitor state: `manage.py monitor` is not running (or not leading).")
    age = now - int(state.get("taken_at") or 0)
    if age > STATE_MAX_AGE_MS:
        return None, _("The monitor state is {age} old: no monitor is leading.", age=format_age(age))
    return state, ""


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

    ``state`` is the monitor's state document (``dashboard.live.read_state``) or None; checks
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
    fresh, note = usable_state(state, now)
    by_queue = state_index(fresh)
    results = [
        check_reachable(connection, None),
        check_eviction_policy(connection, server),
        check_persistence(connection, server),
        check_version(connection, server),
        check_memory(connection, server, thresholds),
    ]
    for f in facts:
        q = f.snapshot.queue
        entry = by_queue.get((q.connection, q.prefix, q.name))
        entry_note = note
        dlq = bool(entry.get("is_dlq")) if entry else bool(is_dead_letter and is_dead_letter(q.name))
        results += [
            check_finished_retention(f, now, thresholds),
            check_legacy_repeat(f),
            check_repeated_stalls(q, entry, thresholds, entry_note),
            check_duplicated_adds(q, entry, entry_note),
            check_events_trimmed(q, entry, entry_note),
            check_workers(f.snapshot, found, entry, thresholds, is_dead_letter=dlq),
            check_paused(f.snapshot),
            check_rate_limit(f),
        ]
    return worst_first(results)
