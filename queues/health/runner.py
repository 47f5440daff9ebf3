"""Judging the checks of one connection from its facts, read once: the server's (``judge_server``)
and its queues' (``judge_queues``; a Redis node reads the facts in ``queues.redis.health_checks``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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
from .results import DEFAULT_THRESHOLDS, CheckResult, Thresholds
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


def judge_server(
    connection: str, server: ServerFacts, thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> list[CheckResult]:
    """The checks of a reachable Redis server itself (its queues' are ``judge_queues``)."""
    return [
        check_reachable(connection, None),
        check_eviction_policy(connection, server),
        check_persistence(connection, server),
        check_version(connection, server),
        check_memory(connection, server, thresholds),
    ]


@dataclass(frozen=True)
class StateView:
    """The monitor's state document as the state-based checks read it: each queue's entry, and
    why there are none (a missing or stale document). Made once per run, for every share."""

    by_queue: dict[tuple[str, str, str], dict]
    note: str

    @classmethod
    def of(cls, state: dict | None, now: int) -> StateView:
        fresh, note = usable_state(state, now)
        return cls(state_index(fresh), note)


def judge_queues(
    facts: list[QueueFacts],
    found: WorkerFacts | None,
    state: dict | StateView | None,
    now: int,
    *,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    is_dead_letter: Callable[[str], bool] | None = None,
    limits_read: bool = True,
) -> list[CheckResult]:
    """The checks every source kind shares, per queue, from its facts and the monitor's state
    (its document, or a ``StateView`` of it made once for several calls).

    ``found``: the queues' workers, or None for a kind that cannot read them (the workers check
    is then left out). ``limits_read``: False for a kind whose facts hold no scheduler list,
    rate limiter or limit (the legacy-repeat and rate-limit checks are then left out rather
    than passed on facts nobody read)."""
    view = state if isinstance(state, StateView) else StateView.of(state, now)
    results: list[CheckResult] = []
    for f in facts:
        q = f.snapshot.queue
        entry = view.by_queue.get((q.connection, q.prefix, q.name))
        results += [
            check_finished_retention(f, now, thresholds),
            check_repeated_stalls(q, entry, thresholds, view.note),
            check_duplicated_adds(q, entry, view.note),
            check_events_trimmed(q, entry, view.note),
            check_paused(f.snapshot),
        ]
        if limits_read:
            results += [check_legacy_repeat(f), check_rate_limit(f)]
        if found is not None:
            dlq = bool(entry.get("is_dlq")) if entry else bool(is_dead_letter and is_dead_letter(q.name))
            results.append(check_workers(f.snapshot, found, entry, thresholds, is_dead_letter=dlq))
    return results
