"""Judging every check of one connection from its facts, read once (a Redis node reads them and
runs this with ``queues.redis.health_checks.run_checks``)."""

from __future__ import annotations

from collections.abc import Callable

from ..messages import _
from .facts import QueueFacts, ServerFacts, WorkerFacts
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


def judge_connection(
    connection: str,
    server: ServerFacts,
    facts: list[QueueFacts],
    found: WorkerFacts,
    state: dict | None,
    now: int,
    *,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    is_dead_letter: Callable[[str], bool] | None = None,
) -> list[CheckResult]:
    """Every check for one reachable connection, from its facts, worst first.

    ``state`` is the monitor's state document (``dashboard.live.read_state``) or None; checks
    that need it answer ``unknown`` when it is missing or stale. ``now`` is ms since the epoch.
    """
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
