"""Production-readiness checks of a BullMQ deployment, from what teams running BullMQ learned
the hard way (reference §3, §4, §6, §7, §10, §11).

Framework-free, like the rest of ``queues/``. Two layers:

* **Facts** (``facts.py``: ``ServerFacts``, ``QueueFacts``, ``WorkerFacts``): plain values a
  source reads cheaply. A Redis node reads them with ``queues.redis.health_facts``: ``INFO``,
  ``CONFIG GET`` (optional), the snapshot pipeline (skipped for queues whose snapshot the caller
  holds: the leading monitor's), and one pipeline of ``GET``/``PTTL limiter`` and ``HMGET meta
  max duration`` per queue, with ``ZRANGE completed|failed 0 0 WITHSCORES`` for sets large
  enough to fail the retention check, plus the scheduler list of queues that have any. Workers
  come from the leading monitor's published reading; only without one does a run send its own
  ``CLIENT LIST`` (optional). Never Lua, never a write, never anything O(jobs). Managed Redis
  services often refuse ``CONFIG`` and ``CLIENT LIST``: the facts then record the refusal and
  the checks fall back to ``INFO`` fields, to the monitor's state, or answer ``unknown`` — they
  never crash.
* **Checks** (``redis_checks.py`` per connection, ``queue_checks.py`` per queue): pure
  functions of those facts and of the monitor's state document (plain dicts, see
  ``publish_state`` in ``dashboard/monitor/loop.py``). Each returns one ``CheckResult``
  (``results.py``) with a stable ``kind`` id (the keys of ``CHECKS``, ``catalogue.py``), a
  severity, a status (``pass`` / ``fail`` / ``unknown``), a plain-words summary of what was
  found, the failure it causes and the fix.

The queue checks are shared by every source kind; the connection-level checks are each kind's
own, registered by the kind's module (``register_checks``; Redis:
``redis_catalogue.py`` here), and a connection of any kind has one reachability check
(``reachability_kind``; ``check_connection_reachable`` in ``reachability.py``). The alert rule
kinds about connections (``queues/alert_kinds/redis_kinds.py``) call these checks, so ``kind``
and ``severity`` stay stable; results serialise with ``as_dict()``.

``judge_server`` and ``judge_queues`` (``runner.py``) run the checks on the facts of a server
and of its queues;
``queues.redis.health_checks.run_checks(client, queues, state, now)`` reads a Redis node's facts
and judges them (``checks_by_shares``: a share of its queues at a time).

Importers use the package (``from queues import health``; ``health.judge_queues``,
``health.CheckResult``, …): the names below are its public surface, whichever module holds them.
"""

from __future__ import annotations

from .catalogue import (
    ADVICE_KINDS,
    CHECKS,
    CONNECTION_REACHABLE,
    QUEUE_KINDS,
    STATE_KINDS,
    Check,
    connection_kinds,
    reachability_kind,
    register_checks,
)
from .facts import QueueFacts, ServerFacts, WorkerFacts
from .queue_checks import (
    MAX_SAFE_INTEGER,
    check_duplicated_adds,
    check_events_trimmed,
    check_finished_retention,
    check_legacy_repeat,
    check_paused,
    check_rate_limit,
    check_repeated_stalls,
    check_workers,
    stalls_last_15m,
)
from .reachability import check_connection_reachable
from .redis_checks import (
    check_eviction_policy,
    check_memory,
    check_persistence,
    check_reachable,
    check_version,
    parse_version,
)
from .results import (
    DEFAULT_THRESHOLDS,
    FAIL,
    PASS,
    SEVERITIES,
    SEVERITY_RANK,
    STATUS_RANK,
    UNKNOWN,
    CheckResult,
    Thresholds,
    sort_key,
    worst_first,
)
from .runner import (
    STATE_MAX_AGE_MS,
    StateView,
    judge_queues,
    judge_server,
    state_index,
    usable_state,
)

__all__ = [
    "ADVICE_KINDS",
    "CHECKS",
    "CONNECTION_REACHABLE",
    "DEFAULT_THRESHOLDS",
    "FAIL",
    "MAX_SAFE_INTEGER",
    "PASS",
    "QUEUE_KINDS",
    "SEVERITIES",
    "SEVERITY_RANK",
    "STATE_KINDS",
    "STATE_MAX_AGE_MS",
    "STATUS_RANK",
    "UNKNOWN",
    "Check",
    "CheckResult",
    "QueueFacts",
    "ServerFacts",
    "StateView",
    "Thresholds",
    "WorkerFacts",
    "check_connection_reachable",
    "check_duplicated_adds",
    "check_events_trimmed",
    "check_eviction_policy",
    "check_finished_retention",
    "check_legacy_repeat",
    "check_memory",
    "check_paused",
    "check_persistence",
    "check_rate_limit",
    "check_reachable",
    "check_repeated_stalls",
    "check_version",
    "check_workers",
    "connection_kinds",
    "judge_queues",
    "judge_server",
    "parse_version",
    "reachability_kind",
    "register_checks",
    "sort_key",
    "stalls_last_15m",
    "state_index",
    "usable_state",
    "worst_first",
]
