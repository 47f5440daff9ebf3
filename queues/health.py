"""Production-readiness checks of a BullMQ deployment, from what teams running BullMQ learned
the hard way (reference §3, §4, §6, §7, §10, §11).

Framework-free, like the rest of ``queues/``. Two layers:

* **Reading facts** (``read_server_facts``, ``read_queue_facts``): a handful of cheap, plain
  commands per connection — ``INFO``, ``CONFIG GET`` (optional), ``CLIENT LIST`` (optional),
  the snapshot pipeline, and one pipeline of ``ZRANGE completed|failed 0 0 WITHSCORES``,
  ``GET``/``PTTL limiter`` and ``HMGET meta max duration`` per queue, plus the scheduler list
  of queues that have any. Never Lua, never a write, never anything O(jobs).
  Managed Redis services often refuse ``CONFIG`` and ``CLIENT LIST``: the facts then record
  the refusal and the checks fall back to ``INFO`` fields, to the monitor's state, or answer
  ``unknown`` — they never crash.
* **Checks** (``check_*``): pure functions of those facts and of the monitor's state document
  (plain dicts, see ``publish_state`` in ``dashboard/live/monitor.py``). Each returns one
  ``CheckResult`` with a stable ``kind`` id (the keys of ``CHECKS``), a severity, a status
  (``pass`` / ``fail`` / ``unknown``), a plain-words summary of what was found, the failure it
  causes and the fix.

The alert rule kinds that watch Redis (``queues/alert_kinds/redis_kinds.py``) call these checks,
so ``kind`` and ``severity`` stay stable; results serialise with ``as_dict()``.

``run_checks(client, queues, state, now)`` reads the facts of one connection and runs every
check.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Callable, Iterable

import redis

from .keys import QueueRef
from .schedulers import Scheduler, read_schedulers
from .snapshot import QueueSnapshot, read_snapshots
from .text import to_int, to_ms, to_text

SEVERITIES = ("info", "warning", "critical")
SEVERITY_RANK = {"info": 1, "warning": 2, "critical": 3}
PASS, FAIL, UNKNOWN = "pass", "fail", "unknown"
STATUS_RANK = {FAIL: 0, UNKNOWN: 1, PASS: 2}

# A state document older than this is treated as missing: no monitor is leading.
STATE_MAX_AGE_MS = 120_000
MAX_SAFE_INTEGER = 2**53 - 1  # Queue.rateLimit(ms) sets the limiter to this


@dataclass(frozen=True)
class Check:
    kind: str
    scope: str  # "connection" or "queue"
    title: str
    severity: str  # the severity of a failure unless the result says otherwise
    explanation: str  # the failure this condition causes
    fix: str


def _checks(*items: Check) -> dict[str, Check]:
    return {c.kind: c for c in items}


CHECKS: dict[str, Check] = _checks(
    Check(
        "redis.reachable", "connection", "Redis reachable", "critical",
        "Queuewatch could not run a command on this Redis. If workers cannot either, no job is "
        "added, processed or finished.",
        "Check that the server is up and the URL, user, password and TLS settings are right.",
    ),
    Check(
        "redis.eviction_policy", "connection", "Eviction policy", "critical",
        "With any maxmemory-policy other than noeviction, Redis deletes keys when memory runs "
        "out — job hashes, the wait list, locks. Jobs then vanish without failing, and a lost "
        "lock makes a running job run a second time. The setting is instance-wide, so a Redis "
        "shared with a cache is a problem even if the queues are small.",
        "Set `maxmemory-policy noeviction` (redis.conf, `CONFIG SET maxmemory-policy noeviction`, "
        "or your provider's parameter group). Give the queues their own Redis if another "
        "application needs eviction for its cache.",
    ),
    Check(
        "redis.persistence", "connection", "Persistence", "warning",
        "With AOF off and no RDB save points, Redis keeps everything in memory only: a restart "
        "or failover loses every waiting, delayed and scheduled job.",
        "Enable AOF (`appendonly yes`, `appendfsync everysec`), or at least RDB snapshots "
        "(`save 60 1000`). On a managed service, turn on its persistence/backup option.",
    ),
    Check(
        "redis.version", "connection", "Redis version", "warning",
        "BullMQ 6 refuses to start on Redis older than 5.0.0 and recommends 6.2.0 or newer; "
        "older servers run slower fallback scripts and lack features BullMQ uses (SET KEEPTTL "
        "for deduplication replace, fractional block timeouts, SCAN TYPE).",
        "Upgrade Redis to 6.2 or newer (7.x recommended).",
    ),
    Check(
        "redis.memory", "connection", "Memory headroom", "warning",
        "Close to maxmemory, a noeviction Redis starts refusing writes with OOM errors: adds "
        "fail, and workers cannot move jobs to completed or failed, so jobs stall and run again. "
        "With an eviction policy, keys are deleted instead.",
        "Raise maxmemory (or the instance size), and find what grows: usually finished jobs "
        "kept forever (set removeOnComplete / removeOnFail) or large payloads.",
    ),
    Check(
        "queue.finished_retention", "queue", "Finished-job retention", "warning",
        "Without removeOnComplete / removeOnFail, every finished job stays in Redis forever: "
        "the completed and failed sets grow without bound until memory runs out, and a re-add "
        "with the same custom jobId is silently ignored for as long as the old job is kept.",
        "Add `removeOnComplete: {age: 3600, count: 1000}` and `removeOnFail: {age: 7 * 24 * "
        "3600}` (or counts) to the job options (Queue `defaultJobOptions`). Old jobs can be "
        "cleaned once with `queue.clean(grace, limit, 'completed')`.",
    ),
    Check(
        "queue.legacy_repeat", "queue", "Legacy repeat metadata", "warning",
        "Legacy repeatable-job metadata blocks the upgrade to BullMQ 6: for the old key shape "
        "(`name:jobId:endDate:tz:pattern`) BullMQ 6 throws in getJobSchedulers() and workers "
        "stop scheduling the next run; v5 hashes without `ic` are silently adopted and should "
        "be migrated too.",
        "1. While still on BullMQ v5, create an equivalent job scheduler for each entry with "
        "`queue.upsertJobScheduler(id, {pattern | every, tz}, template)`. "
        "2. Remove the legacy entry with `queue.removeRepeatableByKey(key)`. "
        "3. Then upgrade the workers and producers to BullMQ 6.",
    ),
    Check(
        "queue.repeated_stalls", "queue", "Repeated stalls", "warning",
        "A job stalls when its worker stops renewing the job lock (lockDuration, 30 s by "
        "default): a crashed process, or a processor that blocks Node's event loop with CPU-bound "
        "or synchronous work, so the renewal timer cannot fire. BullMQ then moves the job back "
        "to wait and another worker runs it again — the job runs twice, with its side effects "
        "twice — and after maxStalledCount stalls it fails with \"job stalled more than "
        "allowable limit\".",
        "Run CPU-heavy processors sandboxed (give the Worker a processor file path, optionally "
        "with useWorkerThreads) so the main event loop keeps renewing locks. A longer "
        "lockDuration is not the fix: it only delays the detection of real crashes. Make "
        "processors idempotent, since a stalled job runs again.",
    ),
    Check(
        "queue.duplicated_adds", "queue", "Adds dropped as duplicates", "warning",
        "An add with a custom jobId does nothing while a job with that id still exists in any "
        "state — including completed and failed jobs that are kept (removeOnComplete / "
        "removeOnFail). BullMQ returns the existing job id and emits `duplicated`; no new job "
        "runs. Code that uses jobId for \"one at a time\" silently loses work. (A job scheduler "
        "slot collision emits `duplicated` too.)",
        "For \"at most one pending job per key\" use the `deduplication: {id, ttl?}` option: "
        "its window ends when the job finishes (or after ttl), and duplicates are reported as "
        "`deduplicated`. If you keep custom ids, make them unique per intended run, or prune "
        "finished jobs so old ids are freed.",
    ),
    Check(
        "queue.events_trimmed", "queue", "Events stream trimmed before read", "warning",
        "Each queue's events stream is capped (`maxLenEvents`, about 10000 entries by default; "
        "QueueEventsProducer trims to 1000). It was trimmed past what the monitor had read: "
        "QueueEvents listeners and Queuewatch missed those events. Queuewatch rebuilt completed "
        "and failed counts from the sets, but stalls, adds and duplicates in the gap are lost.",
        "Raise the cap with the Queue option `streams: {events: {maxLen: 50000}}`, avoid custom "
        "publishers that trim to 1000, and make sure a monitor is always leading.",
    ),
    Check(
        "queue.no_workers", "queue", "Workers connected", "critical",
        "Jobs are waiting and no worker is connected to this queue, so nothing will process "
        "them: the backlog grows and delayed jobs are never promoted.",
        "Start (or fix the crash loop of) the workers for this queue, and check they use the "
        "same prefix and Redis database as the producers.",
    ),
    Check(
        "queue.paused", "queue", "Paused queue", "warning",
        "The queue is paused: workers take no new jobs from it until it is resumed; waiting "
        "jobs pile up.",
        "Resume it with `queue.resume()` if the pause was not intended.",
    ),
    Check(
        "queue.rate_limited", "queue", "Global rate limit", "info",
        "The queue's global rate limit (`setGlobalRateLimit(max, duration)`) or a manual "
        "`queue.rateLimit(ms)` is in force: workers take no job until the window ends, so jobs "
        "wait even though workers are idle.",
        "If the backlog keeps growing, raise the limit (`queue.setGlobalRateLimit(max, "
        "duration)`) or remove it (`queue.removeGlobalRateLimit()`); end a manual limit with "
        "`queue.removeRateLimitKey()`.",
    ),
)

CONNECTION_KINDS = tuple(k for k, c in CHECKS.items() if c.scope == "connection")
QUEUE_KINDS = tuple(k for k, c in CHECKS.items() if c.scope == "queue")
STATE_KINDS = ("queue.repeated_stalls", "queue.duplicated_adds", "queue.events_trimmed")


@dataclass
class Thresholds:
    memory_warning: float = 0.80  # used_memory / maxmemory
    memory_critical: float = 0.95
    finished_count: int = 10_000  # completed or failed set at least this large …
    finished_age_ms: int = 7 * 24 * 3600 * 1000  # … and its oldest job at least this old
    stalls_15m: int = 2  # stalls in the last 15 minutes that count as "repeated"
    idle_ms: int = 5 * 60 * 1000  # oldest waiting job this old with no activity: no workers


DEFAULT_THRESHOLDS = Thresholds()


@dataclass
class CheckResult:
    kind: str
    status: str  # pass / fail / unknown
    connection: str
    summary: str  # what was found, in plain words
    severity: str = ""  # defaults to the check's severity
    prefix: str = ""
    queue: str = ""
    details: dict = field(default_factory=dict)
    fix: str = ""  # defaults to the check's fix

    def __post_init__(self):
        check = CHECKS[self.kind]
        self.severity = self.severity or check.severity
        self.fix = self.fix or check.fix
        assert self.severity in SEVERITIES and self.status in STATUS_RANK

    @property
    def check(self) -> Check:
        return CHECKS[self.kind]

    @property
    def scope(self) -> str:
        return self.check.scope

    @property
    def title(self) -> str:
        return self.check.title

    @property
    def explanation(self) -> str:
        return self.check.explanation

    @property
    def failed(self) -> bool:
        return self.status == FAIL

    def fails_at(self, severity: str) -> bool:
        """True when this result failed with at least ``severity``."""
        return self.failed and SEVERITY_RANK[self.severity] >= SEVERITY_RANK[severity]

    def as_dict(self) -> dict:
        return {
            "kind": self.kind, "scope": self.scope, "status": self.status, "severity": self.severity,
            "connection": self.connection, "prefix": self.prefix or None, "queue": self.queue or None,
            "title": self.title, "summary": self.summary, "explanation": self.explanation,
            "fix": self.fix, "details": self.details,
        }


def sort_key(r: CheckResult) -> tuple:
    """Worst first: failures by severity, then unknowns, then passes."""
    return (STATUS_RANK[r.status], -SEVERITY_RANK[r.severity], r.scope != "connection", r.prefix, r.queue, r.kind)


def worst_first(results: Iterable[CheckResult]) -> list[CheckResult]:
    return sorted(results, key=sort_key)


# ------------------------------------------------------------------------------------------
# Facts


@dataclass
class ServerFacts:
    info: dict  # INFO, keys as text
    config: dict  # CONFIG GET results that were allowed, keys as text
    config_error: str = ""  # why CONFIG GET was refused ("" when it worked)
    client_names: list[str] | None = None  # CLIENT LIST names; None when refused
    clients_error: str = ""


def _text_dict(d: dict) -> dict:
    return {to_text(k): (to_text(v) if isinstance(v, bytes) else v) for k, v in d.items()}


CONFIG_PARAMS = ("maxmemory-policy", "maxmemory", "appendonly", "save")


def read_server_facts(client: redis.Redis) -> ServerFacts:
    """INFO always (a failure here means the connection is unusable and is raised);
    CONFIG GET and CLIENT LIST when the server allows them."""
    info = _text_dict(client.info())
    config, config_error = {}, ""
    for param in CONFIG_PARAMS:
        try:
            config.update(_text_dict(client.config_get(param)))
        except redis.ResponseError as exc:
            config_error = str(exc) or "refused"
            config = {}
            break
    # CLIENT LIST shows the clients of every database; a worker counts for the database it
    # has selected, which is ours when it serves these queues.
    db = str(client.connection_pool.connection_kwargs.get("db", 0))
    try:
        names = [to_text(c.get("name", "")) for c in client.client_list() if str(c.get("db", db)) == db]
        clients_error = ""
    except redis.ResponseError as exc:
        names, clients_error = None, str(exc) or "refused"
    return ServerFacts(info=info, config=config, config_error=config_error, client_names=names, clients_error=clients_error)


@dataclass
class QueueFacts:
    snapshot: QueueSnapshot
    oldest_completed_ms: int | None = None  # finishedOn of the oldest job in the set
    oldest_failed_ms: int | None = None
    limiter_count: int | None = None
    limiter_pttl_ms: int | None = None
    rate_max: int | None = None  # meta max / duration (global rate limit)
    rate_duration_ms: int | None = None
    schedulers: list[Scheduler] = field(default_factory=list)


def _oldest(reply) -> int | None:
    """The score of a ``ZRANGE … WITHSCORES`` reply's first entry, as a time; ``None`` when
    empty or not a time (a producer's ``inf`` score must not stop the health checks)."""
    if isinstance(reply, list) and reply:
        try:
            return to_ms(reply[0][1])
        except IndexError:
            return None
    return None


def read_queue_facts(client: redis.Redis, queues: list[QueueRef]) -> list[QueueFacts]:
    snaps = read_snapshots(client, queues)
    if not snaps:
        return []
    pipe = client.pipeline(transaction=False)
    for q in queues:
        pipe.zrange(q.key("completed"), 0, 0, withscores=True)
        pipe.zrange(q.key("failed"), 0, 0, withscores=True)
        pipe.get(q.key("limiter"))
        pipe.pttl(q.key("limiter"))
        pipe.hmget(q.key("meta"), "max", "duration")
    raw = pipe.execute(raise_on_error=False)
    facts = []
    for i, snap in enumerate(snaps):
        completed, failed, limiter, pttl, meta = raw[i * 5:(i + 1) * 5]
        meta = meta if isinstance(meta, list) else [None, None]
        f = QueueFacts(
            snapshot=snap,
            oldest_completed_ms=_oldest(completed),
            oldest_failed_ms=_oldest(failed),
            limiter_count=to_int(limiter) if isinstance(limiter, (bytes, str)) else None,
            limiter_pttl_ms=pttl if isinstance(pttl, int) else None,
            rate_max=to_int(meta[0]),
            rate_duration_ms=to_int(meta[1]),
        )
        if snap.schedulers:
            try:
                f.schedulers = read_schedulers(client, snap.queue)
            except redis.ResponseError:
                f.schedulers = []
        facts.append(f)
    return facts


# ------------------------------------------------------------------------------------------
# Connection checks (pure)


def parse_version(text: str | None) -> tuple[int, int, int] | None:
    if not text:
        return None
    parts = []
    for piece in str(text).split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            return None
        parts.append(int(digits))
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts)


def check_reachable(connection: str, error: str | None) -> CheckResult:
    if error:
        return CheckResult("redis.reachable", FAIL, connection, f"Cannot reach Redis: {error}.")
    return CheckResult("redis.reachable", PASS, connection, "Redis answers.")


def check_eviction_policy(connection: str, server: ServerFacts) -> CheckResult:
    policy = server.config.get("maxmemory-policy") or server.info.get("maxmemory_policy")
    source = "CONFIG" if server.config.get("maxmemory-policy") else "INFO"
    if not policy:
        return CheckResult("redis.eviction_policy", UNKNOWN, connection,
                           "The server does not report its maxmemory-policy (CONFIG refused and INFO has no "
                           "maxmemory_policy); verify it is noeviction in your provider's settings.",
                           details={"policy": None})
    if policy == "noeviction":
        return CheckResult("redis.eviction_policy", PASS, connection, "maxmemory-policy is noeviction.",
                           details={"policy": policy, "source": source})
    return CheckResult("redis.eviction_policy", FAIL, connection,
                       f"maxmemory-policy is {policy}: Redis may evict queue keys, and jobs vanish without failing.",
                       details={"policy": policy, "source": source})


def check_persistence(connection: str, server: ServerFacts) -> CheckResult:
    aof = server.config.get("appendonly")
    if aof is None and "aof_enabled" in server.info:
        aof = "yes" if str(server.info.get("aof_enabled")) == "1" else "no"
    save = server.config.get("save") if "save" in server.config else None
    details = {"appendonly": aof, "save": save, "config_available": not server.config_error}
    if aof == "yes":
        return CheckResult("redis.persistence", PASS, connection, "AOF persistence is on.", details=details)
    if save is None:
        # Without CONFIG, INFO does not tell whether RDB save points are configured.
        return CheckResult("redis.persistence", UNKNOWN, connection,
                           f"AOF is {_onoff(aof)}; RDB save points cannot be read because CONFIG is "
                           f"refused ({server.config_error or 'not available'}). Check your provider's "
                           "persistence setting.", details=details)
    if save.strip():
        return CheckResult("redis.persistence", PASS, connection, f"AOF is off; RDB snapshots are taken (save {save}).",
                           details=details)
    return CheckResult("redis.persistence", FAIL, connection,
                       "AOF is off and no RDB save points are set: a restart loses every waiting job.", details=details)


def _onoff(value: str | None) -> str:
    return {"yes": "on", "no": "off"}.get(value or "", "unknown")


def check_version(connection: str, server: ServerFacts) -> CheckResult:
    text = server.info.get("redis_version")
    version = parse_version(text)
    details = {"redis_version": text, "server_name": server.info.get("server_name")}
    for other in ("valkey_version", "dragonfly_version"):
        if other in server.info:
            details[other] = server.info[other]
    if version is None:
        return CheckResult("redis.version", UNKNOWN, connection, "The server does not report a Redis version.", details=details)
    if version < (5, 0, 0):
        return CheckResult("redis.version", FAIL, connection,
                           f"Redis {text} is older than 5.0.0: BullMQ 6 refuses to connect.", severity="critical",
                           details=details)
    if version < (6, 2, 0):
        return CheckResult("redis.version", FAIL, connection,
                           f"Redis {text} is older than 6.2.0, the minimum BullMQ recommends.", details=details)
    return CheckResult("redis.version", PASS, connection, f"Redis {text}.", details=details)


def check_memory(connection: str, server: ServerFacts, th: Thresholds = DEFAULT_THRESHOLDS) -> CheckResult:
    used = to_int(server.info.get("used_memory"))
    limit = to_int(server.config.get("maxmemory")) if "maxmemory" in server.config else to_int(server.info.get("maxmemory"))
    details = {"used_memory": used, "maxmemory": limit}
    if used is None or limit is None:
        return CheckResult("redis.memory", UNKNOWN, connection, "The server does not report its memory use and limit.",
                           details=details)
    if limit == 0:
        return CheckResult("redis.memory", PASS, connection,
                           f"No maxmemory is set ({_bytes(used)} used): Redis grows until the machine runs out of memory.",
                           details=details)
    ratio = used / limit
    details["ratio"] = round(ratio, 4)
    text = f"{_bytes(used)} of {_bytes(limit)} maxmemory used ({ratio:.0%})."
    if ratio >= th.memory_critical:
        return CheckResult("redis.memory", FAIL, connection, text, severity="critical", details=details)
    if ratio >= th.memory_warning:
        return CheckResult("redis.memory", FAIL, connection, text, details=details)
    return CheckResult("redis.memory", PASS, connection, text, details=details)


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _jobs(n: int) -> str:
    return f"{n} job" if n == 1 else f"{n} jobs"


def _age(ms: int | None) -> str:
    if ms is None:
        return "unknown"
    s = ms / 1000
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if s >= size:
            return f"{s / size:.1f} {unit}"
    return f"{s:.0f} s"


# ------------------------------------------------------------------------------------------
# Queue checks (pure)


def _qr(kind: str, status: str, q: QueueRef, summary: str, **kw) -> CheckResult:
    return CheckResult(kind, status, q.connection, summary, prefix=q.prefix, queue=q.name, **kw)


def check_finished_retention(facts: QueueFacts, now: int, th: Thresholds = DEFAULT_THRESHOLDS) -> CheckResult:
    q, counts = facts.snapshot.queue, facts.snapshot.counts
    found = []
    details = {}
    for state, oldest in (("completed", facts.oldest_completed_ms), ("failed", facts.oldest_failed_ms)):
        age = None if oldest is None else max(0, now - oldest)
        details[state] = {"count": counts[state], "oldest_age_ms": age}
        if counts[state] >= th.finished_count and age is not None and age >= th.finished_age_ms:
            found.append(f"{counts[state]} {state} jobs, the oldest finished {_age(age)} ago")
    details["thresholds"] = {"count": th.finished_count, "age_ms": th.finished_age_ms}
    if found:
        return _qr("queue.finished_retention", FAIL, q,
                   "Finished jobs look kept forever: " + "; ".join(found) + ".", details=details)
    return _qr("queue.finished_retention", PASS, q,
               f"{counts['completed']} completed and {counts['failed']} failed jobs kept.", details=details)


def check_legacy_repeat(facts: QueueFacts) -> CheckResult:
    q = facts.snapshot.queue
    legacy = [s for s in facts.schedulers if s.legacy]
    if not legacy:
        n = len(facts.schedulers)
        return _qr("queue.legacy_repeat", PASS, q, f"{n} job scheduler{'' if n == 1 else 's'}, none legacy.")
    shapes = sorted({s.legacy for s in legacy})
    entries = [{"id": s.id, "layout": s.legacy, "name": s.name, "pattern": s.pattern or None, "every": s.every} for s in legacy]
    severity = "critical" if "key-shape" in shapes else "warning"
    listed = ", ".join(f"`{s.id}` ({s.legacy})" for s in legacy[:5]) + (" …" if len(legacy) > 5 else "")
    entries_word = "entry" if len(legacy) == 1 else "entries"
    return _qr("queue.legacy_repeat", FAIL, q, f"{len(legacy)} legacy repeatable {entries_word}: {listed}.",
               severity=severity, details={"entries": entries})


def _state_missing(kind: str, q: QueueRef, state_entry, state_note: str) -> CheckResult | None:
    if state_entry is None:
        reason = state_note or "This queue is not in the monitor's state yet."
        return _qr(kind, UNKNOWN, q, reason + " This check needs the monitor's event counts, so the result is unknown.",
                   details={"state": None})
    return None


def _events_total(entry: dict, name: str) -> int:
    return int((entry.get("events_total") or {}).get(name) or 0)


def stalls_last_15m(entry: dict) -> int:
    """Stalls in the last 15 minutes, from the 15-minute stall rate (per minute over a sliding
    15-minute window; see ``QueueSeries.per_minute``)."""
    rate = float(((entry.get("rates_per_min") or {}).get("stalled") or {}).get("15") or 0)
    return int(round(rate * 15))


def check_repeated_stalls(q: QueueRef, state_entry: dict | None, th: Thresholds = DEFAULT_THRESHOLDS,
                          state_note: str = "") -> CheckResult:
    missing = _state_missing("queue.repeated_stalls", q, state_entry, state_note)
    if missing:
        return missing
    recent = stalls_last_15m(state_entry)
    stall_failed = int(state_entry.get("stall_failed_15m") or 0)
    total = _events_total(state_entry, "stalled")
    details = {"stalls_15m": recent, "stall_failed_15m": stall_failed, "stalled_total": total,
               "stalled_now": int(state_entry.get("stalled_now") or 0)}
    if recent >= th.stalls_15m or stall_failed:
        extra = f", and {stall_failed} failed for stalling more than allowed" if stall_failed else ""
        return _qr("queue.repeated_stalls", FAIL, q,
                   f"{recent} stalls in the last 15 minutes{extra} ({total} since the monitor started leading): "
                   "these jobs ran more than once.", details=details)
    return _qr("queue.repeated_stalls", PASS, q,
               f"{recent} stalls in the last 15 minutes ({total} since the monitor started leading).", details=details)


def check_duplicated_adds(q: QueueRef, state_entry: dict | None, state_note: str = "") -> CheckResult:
    missing = _state_missing("queue.duplicated_adds", q, state_entry, state_note)
    if missing:
        return missing
    dup, added = _events_total(state_entry, "duplicated"), _events_total(state_entry, "added")
    details = {"duplicated_total": dup, "added_total": added}
    if dup:
        return _qr("queue.duplicated_adds", FAIL, q,
                   f"{dup} adds were dropped because a job with the same custom jobId still existed "
                   f"({added} jobs were added) since the monitor started leading.", details=details)
    return _qr("queue.duplicated_adds", PASS, q, "No add was dropped as a duplicate since the monitor started leading.",
               details=details)


def check_events_trimmed(q: QueueRef, state_entry: dict | None, state_note: str = "") -> CheckResult:
    missing = _state_missing("queue.events_trimmed", q, state_entry, state_note)
    if missing:
        return missing
    gaps = int(state_entry.get("stream_gaps") or 0)
    if gaps:
        return _qr("queue.events_trimmed", FAIL, q,
                   f"The events stream was trimmed past the monitor's position {gaps} time(s) since it started leading.",
                   details={"stream_gaps": gaps})
    return _qr("queue.events_trimmed", PASS, q, "The monitor has read every event before it was trimmed.",
               details={"stream_gaps": 0})


def worker_names_for(q: QueueRef, client_names: Iterable[str]) -> list[str]:
    """Connections of workers of this queue, in both naming shapes: Node BullMQ names its
    blocking connection ``<prefix>:<base64(queue)>[:w:<worker name>]``, Python bullmq
    ``<prefix>:<queue>[:w:<worker name>]``. QueueEvents (``…:qe``) are not workers."""
    b64 = base64.b64encode(q.name.encode("utf-8")).decode("ascii")
    bases = {f"{q.prefix}:{b64}", f"{q.prefix}:{q.name}"}
    return [n for n in client_names if n in bases or any(n.startswith(b + ":w:") for b in bases)]


def _backlog(counts: dict) -> int:
    return int(counts.get("waiting", 0)) + int(counts.get("prioritized", 0))


def check_workers(snapshot: QueueSnapshot, client_names: list[str] | None, state_entry: dict | None,
                  th: Thresholds = DEFAULT_THRESHOLDS, *, is_dead_letter: bool = False,
                  clients_error: str = "") -> CheckResult:
    q, counts = snapshot.queue, snapshot.counts
    backlog = _backlog(counts)
    details = {"backlog": backlog, "source": "client-list" if client_names is not None else "activity"}
    if is_dead_letter:
        return _qr("queue.no_workers", PASS, q, "Dead-letter queue: no workers expected.", details=details)
    if client_names is not None:
        workers = worker_names_for(q, client_names)
        details.update(workers=len(workers), names=workers[:5])
        if workers:
            return _qr("queue.no_workers", PASS, q, f"{len(workers)} worker connection(s).", details=details)
        if backlog:
            return _qr("queue.no_workers", FAIL, q, f"{_jobs(backlog)} waiting and no worker is connected.",
                       details=details)
        return _qr("queue.no_workers", PASS, q, "No worker is connected, but no job is waiting either.", details=details)
    # CLIENT LIST refused (some managed services): judge from activity.
    note = f"CLIENT LIST is not allowed ({clients_error or 'refused'}), so this is judged from activity: "
    active = int(counts.get("active", 0))
    if active:
        return _qr("queue.no_workers", PASS, q, note + f"{_jobs(active)} active.", details=details)
    if not backlog:
        return _qr("queue.no_workers", PASS, q, note + "no job is waiting.", details=details)
    if state_entry is None:
        return _qr("queue.no_workers", UNKNOWN, q,
                   note + f"{_jobs(backlog)} waiting, and without the monitor's rates it cannot tell whether "
                   "workers are processing them.", details=details)
    rates = state_entry.get("rates_per_min") or {}
    recent = sum(float((rates.get(k) or {}).get("5") or 0) for k in ("completed", "failed"))
    age = snapshot.oldest_waiting_age_ms
    details.update(finished_per_min_5m=recent, oldest_waiting_age_ms=age)
    if recent == 0 and age is not None and age >= th.idle_ms:
        return _qr("queue.no_workers", FAIL, q,
                   note + f"{_jobs(backlog)} waiting, the oldest for {_age(age)}, and none finished in 5 minutes.",
                   details=details)
    return _qr("queue.no_workers", PASS, q, note + f"jobs are finishing ({recent:.1f}/min over 5 minutes).",
               details=details)


def check_paused(snapshot: QueueSnapshot) -> CheckResult:
    q = snapshot.queue
    backlog = _backlog(snapshot.counts)
    details = {"paused": snapshot.paused, "backlog": backlog, "legacy_paused_jobs": snapshot.legacy_paused_jobs}
    if not snapshot.paused:
        return _qr("queue.paused", PASS, q, "Not paused.", details=details)
    if backlog:
        return _qr("queue.paused", FAIL, q, f"The queue is paused with {_jobs(backlog)} waiting.", details=details)
    return _qr("queue.paused", FAIL, q, "The queue is paused (no job is waiting yet).", severity="info", details=details)


def check_rate_limit(facts: QueueFacts) -> CheckResult:
    q = facts.snapshot.queue
    count, pttl = facts.limiter_count, facts.limiter_pttl_ms
    details = {"limiter_count": count, "limiter_pttl_ms": pttl, "max": facts.rate_max, "duration_ms": facts.rate_duration_ms}
    backlog = _backlog(facts.snapshot.counts)
    severity = "warning" if backlog else "info"
    if count is not None and pttl is not None and pttl > 0:
        if count >= MAX_SAFE_INTEGER:
            return _qr("queue.rate_limited", FAIL, q,
                       f"The queue was rate-limited by hand (queue.rateLimit) for another {_age(pttl)}; "
                       f"{_jobs(backlog)} waiting.", severity=severity, details=details)
        if facts.rate_max is not None and count >= facts.rate_max:
            return _qr("queue.rate_limited", FAIL, q,
                       f"The global rate limit ({facts.rate_max} jobs per {_age(facts.rate_duration_ms)}) is hit: "
                       f"no job starts for another {_age(pttl)}; {_jobs(backlog)} waiting.", severity=severity, details=details)
    if facts.rate_max is None:
        return _qr("queue.rate_limited", PASS, q, "No global rate limit is set.", details=details)
    return _qr("queue.rate_limited", PASS, q,
               f"Global rate limit {facts.rate_max} per {_age(facts.rate_duration_ms)}, not hit "
               f"({count or 0} in the current window).", details=details)


# ------------------------------------------------------------------------------------------
# Running everything for one connection


def state_index(state: dict | None) -> dict[tuple[str, str, str], dict]:
    if not state:
        return {}
    return {(e.get("connection"), e.get("prefix"), e.get("name")): e for e in state.get("queues") or []}


def usable_state(state: dict | None, now: int) -> tuple[dict | None, str]:
    """The state document if it is fresh enough to trust, and a note saying why not."""
    if not state:
        return None, "No monitor state: `manage.py monitor` is not running (or not leading)."
    age = now - int(state.get("taken_at") or 0)
    if age > STATE_MAX_AGE_MS:
        return None, f"The monitor state is {_age(age)} old: no monitor is leading."
    return state, ""


def run_checks(client: redis.Redis, queues: list[QueueRef], state: dict | None, now: int, *,
               connection: str | None = None, thresholds: Thresholds = DEFAULT_THRESHOLDS,
               is_dead_letter: Callable[[str], bool] | None = None) -> list[CheckResult]:
    """Every check for one connection and its ``queues``, worst first.

    ``state`` is the monitor's state document (``dashboard.live.read_state``) or None; checks
    that need it answer ``unknown`` when it is missing or stale. ``now`` is ms since the epoch.
    A connection that cannot be reached gives one failing ``redis.reachable`` result.
    """
    connection = connection or (queues[0].connection if queues else "default")
    try:
        server = read_server_facts(client)
        facts = read_queue_facts(client, queues)
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
            check_workers(f.snapshot, server.client_names, entry, thresholds, is_dead_letter=dlq,
                          clients_error=server.clients_error),
            check_paused(f.snapshot),
            check_rate_limit(f),
        ]
    return worst_first(results)
