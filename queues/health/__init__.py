"""Production-readiness checks of a BullMQ deployment, from what teams running BullMQ learned
the hard way (reference §3, §4, §6, §7, §10, §11).

Framework-free, like the rest of ``queues/``. Two layers:

* **Reading facts** (``facts.py``: ``read_server_facts``, ``read_queue_facts``,
  ``read_worker_facts``): a handful of cheap, plain commands per connection — ``INFO``,
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
own, registered by the kind's module (``register_checks``; Redis: ``queues/redis/
health_catalogue.py``), and a connection of any kind has one reachability check
(``reachability_kind``; ``check_connection_reachable`` in ``reachability.py``). The alert rule
kinds about connections (``queues/alert_kinds/redis_kinds.py``) call these checks, so ``kind``
and ``severity`` stay stable; results serialise with ``as_dict()``.

``run_checks(client, queues, state, now)`` (``runner.py``) reads the facts of one connection and
runs every check.

Importers use the package (``from queues import health``; ``health.run_checks``,
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
from .facts import (
    CONFIG_PARAMS,
    QueueFacts,
    ServerFacts,
    WorkerFacts,
    read_queue_facts,
    read_server_facts,
    read_worker_facts,
)
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
from .runner import STATE_MAX_AGE_MS, run_checks, state_index, usable_state

__all__ = [
    "ADVICE_KINDS",
    "CHECKS",
    "CONFIG_PARAMS",
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
    "parse_version",
    "reachability_kind",
    "read_queue_facts",
    "read_server_facts",
    "read_worker_facts",
    "register_checks",
    "run_checks",
    "sort_key",
    "stalls_last_15m",
    "state_index",
    "usable_state",
    "worst_first",
]
