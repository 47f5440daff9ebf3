"""Alert rule kinds and their evaluation: pure functions, no Django, no I/O.

``rule_evaluate(*, rule, facts, now)`` looks at what the monitor knows (per-queue signals,
connections that are down, the latest health check results, job schedulers) and returns one
``Observation`` per target in the rule's scope: the value, whether it is past the firing
threshold, and whether it is back past the resolve threshold. The state machine (pending →
firing → resolved, rows, notifications) lives in ``dashboard.alerts.engine``; this module only
says what is true now.

``rule`` is anything with the attributes of ``RuleSpec`` (the Django model has them).
Queue signals are duck-typed like ``dashboard.live.rates.QueueSignals``.

Thresholds compare with "above" (``value > threshold``). A separate resolve threshold gives
hysteresis: once firing, the alert only resolves when ``value <= resolve_threshold``; between
the two it stays as it is.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import hashlib
from dataclasses import dataclass, field
from typing import Iterable

from .cron import CronError, cron_next

WINDOWS = (1, 5, 15)  # minutes; the monitor keeps rates over these


@dataclass(frozen=True)
class Target:
    """What an alert is about: a connection, a queue, or one item (job scheduler) of a queue."""

    connection: str
    prefix: str = ""
    queue: str = ""
    item: str = ""

    @property
    def key(self) -> str:
        return "\x1f".join((self.connection, self.prefix, self.queue, self.item))

    def label(self) -> str:
        if not self.queue:
            return f"Redis “{self.connection}”"
        text = f"{self.connection}/{self.queue}"
        return f"{text} scheduler “{self.item}”" if self.item else text

    def as_dict(self) -> dict:
        return {"connection": self.connection, "prefix": self.prefix, "queue": self.queue, "item": self.item}


def fingerprint(*, rule_id: int, target: Target) -> str:
    """Stable id of one rule's incident on one target (the same across restarts/monitors)."""
    return hashlib.sha1(f"{rule_id}\x1e{target.key}".encode("utf-8", "surrogatepass")).hexdigest()[:20]


@dataclass(frozen=True)
class Kind:
    id: str
    title: str
    scope: str  # "queue", "connection" or "scheduler"
    unit: str  # what the threshold is measured in, for forms and messages
    help: str
    uses_window: bool = False
    uses_min_volume: bool = False
    # For kinds about duration ("paused for longer than T"): the threshold is a duration in
    # seconds that is added to the pending period rather than compared with a value.
    duration_threshold: bool = False


def _kinds(*items: Kind) -> dict[str, Kind]:
    return {k.id: k for k in items}


KINDS: dict[str, Kind] = _kinds(
    Kind("dlq_depth", "Dead-letter depth above N", "queue", "jobs",
         "Jobs in the failed set (or waiting in a dead-letter queue)."),
    Kind("dlq_growth", "Dead-letter growth above N per minute", "queue", "jobs/min",
         "Jobs entering the dead-letter set per minute over the window.", uses_window=True),
    Kind("failure_ratio", "Failure ratio above X %", "queue", "%",
         "Failed ÷ (completed + failed) over the window; needs at least the minimum volume of finished jobs.",
         uses_window=True, uses_min_volume=True),
    Kind("stalled_window", "Stalled jobs above N over a window", "queue", "jobs",
         "Stall events (a worker lost a job's lock) in the window.", uses_window=True),
    Kind("stalled_now", "Jobs stalled right now above N", "queue", "jobs",
         "Active jobs whose lock has expired (0 means: any stalled job)."),
    Kind("backlog", "Backlog above N", "queue", "jobs",
         "Waiting plus prioritized jobs; optionally also delayed jobs already due (nobody promoted them: no worker)."),
    Kind("oldest_waiting", "Oldest waiting job older than T", "queue", "seconds",
         "Age of the oldest job still waiting to be picked up."),
    Kind("no_completions", "Work waiting, nothing completing for T", "queue", "seconds",
         "Jobs are waiting and none completed for T seconds: workers down or stuck.", duration_threshold=True),
    Kind("paused", "Queue paused for longer than T", "queue", "seconds",
         "The queue has been paused for T seconds.", duration_threshold=True),
    Kind("scheduler_missed", "A job scheduler missed its run", "scheduler", "seconds of grace",
         "The iteration due by the scheduler's cron pattern or interval was not taken by a worker within the grace period."),
    Kind("redis_unreachable", "Redis unreachable", "connection", "",
         "The monitor cannot run commands on this Redis."),
    Kind("eviction_policy", "Eviction policy is not noeviction", "connection", "",
         "Redis may delete job keys when memory runs out."),
    Kind("memory", "Memory above X % of maxmemory", "connection", "%",
         "used_memory ÷ maxmemory (never fires when maxmemory is not set)."),
)

KIND_CHOICES = [(k.id, k.title) for k in KINDS.values()]
# Kinds whose condition is a yes/no fact: no threshold to enter.
THRESHOLDLESS = {"redis_unreachable", "eviction_policy"}


@dataclass
class RuleSpec:
    """The attributes evaluation needs (the Django model ``AlertRule`` has the same)."""

    id: int
    kind: str
    threshold: float = 0.0
    resolve_threshold: float | None = None
    window_minutes: int = 5
    min_volume: int = 0
    connection: str = ""  # "" = every connection
    queue_glob: str = ""  # "" or "*" = every queue
    include_due_delayed: bool = False  # backlog: count delayed jobs already due too


@dataclass
class ConnectionFacts:
    """What is known about one connection's Redis server (from the monitor and health checks)."""

    reachable: bool = True
    error: str = ""
    eviction_policy: str | None = None
    used_memory: int | None = None
    maxmemory: int | None = None


@dataclass
class Facts:
    queues: list  # QueueSignals-like objects (``.snapshot.queue`` is a QueueRef)
    connections: dict[str, ConnectionFacts] = field(default_factory=dict)
    schedulers: dict = field(default_factory=dict)  # QueueRef -> list[queues.schedulers.Scheduler]
    due_delayed: dict = field(default_factory=dict)  # QueueRef -> delayed jobs already due (not promoted yet)
    # Every queue of every reachable connection is in ``queues`` (false while a monitor that
    # just took over has not read them all yet): only then does "absent" mean "gone".
    complete: bool = True


@dataclass
class Observation:
    target: Target
    value: float | None  # None when it cannot be measured right now (treated as "no change")
    above: bool  # past the firing threshold
    clear: bool  # past the resolve threshold (hysteresis); ``not above`` without one
    summary: str  # plain words for notifications and pages


def in_scope(rule, *, connection: str, queue: str = "") -> bool:
    if rule.connection and rule.connection != connection:
        return False
    glob = (rule.queue_glob or "").strip()
    return not queue or not glob or glob == "*" or fnmatch.fnmatchcase(queue, glob)


def _observe(rule, target: Target, value: float | None, summary: str) -> Observation:
    if value is None:
        return Observation(target, None, False, False, summary)
    above = value > rule.threshold
    resolve_at = rule.resolve_threshold if rule.resolve_threshold is not None else rule.threshold
    return Observation(target, value, above, value <= resolve_at, summary)


def _flag(target: Target, on: bool, summary: str) -> Observation:
    return Observation(target, 1.0 if on else 0.0, on, not on, summary)


def _window(rule) -> int:
    return rule.window_minutes if rule.window_minutes in WINDOWS else 5


def _queue_value(rule, sig, *, due_delayed: int = 0) -> tuple[float | None, str]:
    """One queue's value for the rule's kind, and a sentence saying what it is."""
    snap = sig.snapshot
    counts = snap.counts
    w = _window(rule)
    kind = rule.kind
    if kind == "dlq_depth":
        depth = counts.get("waiting", 0) if sig.is_dlq else counts.get("failed", 0)
        return depth, f"{depth} jobs in the dead-letter set"
    if kind == "dlq_growth":
        rate = sig.dlq_growth_per_min[w]
        return round(rate, 2), f"dead letters growing by {rate:.1f}/min over {w} min"
    if kind == "failure_ratio":
        failed, completed = sig.totals["failed"][w], sig.totals["completed"][w]
        finished = failed + completed
        if finished == 0 or finished < rule.min_volume:
            return 0.0, f"{finished} jobs finished in {w} min (below the minimum volume of {rule.min_volume})"
        pct = 100.0 * failed / finished
        return round(pct, 1), f"{pct:.1f}% of {finished} jobs failed over {w} min"
    if kind == "stalled_window":
        n = sig.totals["stalled"][w]
        return n, f"{n} stall events in {w} min"
    if kind == "stalled_now":
        n = len(sig.stalled_now)
        return n, f"{n} jobs stalled now"
    if kind == "backlog":
        n = counts.get("waiting", 0) + counts.get("prioritized", 0)
        if getattr(rule, "include_due_delayed", False):
            return n + due_delayed, f"{n + due_delayed} jobs waiting (incl. {due_delayed} delayed jobs already due)"
        return n, f"{n} jobs waiting"
    if kind == "oldest_waiting":
        age = snap.oldest_waiting_age_ms
        if age is None:
            return 0.0, "no job waiting"
        return round(age / 1000, 1), f"oldest waiting job is {age / 1000:.0f} s old"
    if kind == "no_completions":
        waiting = counts.get("waiting", 0) + counts.get("prioritized", 0)
        done = sig.totals["completed"][1]
        stuck = waiting > 0 and done == 0 and not snap.paused
        return (1.0 if stuck else 0.0), f"{waiting} jobs waiting, {done} completed in the last minute"
    if kind == "paused":
        return (1.0 if snap.paused else 0.0), "queue paused" if snap.paused else "queue running"
    raise ValueError(f"not a queue rule kind: {kind}")


def _scheduler_observations(rule, facts: Facts, now: dt.datetime) -> Iterable[Observation]:
    grace = dt.timedelta(seconds=max(0.0, rule.threshold))
    for queue, schedulers in facts.schedulers.items():
        if not in_scope(rule, connection=queue.connection, queue=queue.name):
            continue
        for s in schedulers:
            target = Target(queue.connection, queue.prefix, queue.name, s.id)
            how = f"cron “{s.pattern}” in {s.tz or 'UTC'}" if s.pattern else f"every {s.every} ms"
            missed = missed_runs(s, now=now, grace=grace)
            if missed is None:
                yield Observation(target, 0.0, False, True, f"on time ({how})")
                continue
            first, count = missed
            late = (now - first).total_seconds()
            summary = (f"{count} run{'s' if count != 1 else ''} not taken by a worker ({how}); "
                       f"the first was due at {first:%Y-%m-%d %H:%M:%S} UTC, {late:.0f} s ago")
            yield Observation(target, round(late, 1), True, False, summary)


MAX_COUNTED_RUNS = 100


def missed_runs(scheduler, *, now: dt.datetime, grace: dt.timedelta) -> tuple[dt.datetime, int] | None:
    """(first missed run, how many runs were missed) or None when the scheduler is on time.

    BullMQ keeps the next iteration's time as the scheduler's score and moves it on only when
    a worker takes that iteration's job: a score more than ``grace`` in the past is a run not
    taken. How many runs have been missed since comes from the cron pattern (croniter, in the
    scheduler's time zone) or the interval."""
    if scheduler.next_run is None:
        return None
    first = dt.datetime.fromtimestamp(scheduler.next_run / 1000, tz=dt.timezone.utc)
    deadline = now - grace
    if first > deadline:
        return None
    count = 1
    if scheduler.pattern:
        try:
            later = cron_next(expr=scheduler.pattern, tz=scheduler.tz or "UTC", after=first, count=MAX_COUNTED_RUNS)
            count += sum(1 for t in later if t <= deadline)
        except CronError:
            pass  # BullMQ accepted a pattern croniter does not: count the one we know of
    elif scheduler.every:
        count += min(MAX_COUNTED_RUNS, int((deadline - first).total_seconds() * 1000 // scheduler.every))
    return first, count


def rule_evaluate(*, rule, facts: Facts, now: dt.datetime) -> list[Observation]:
    """Observations of every target in the rule's scope. Targets that cannot be measured
    now (their connection is down) are left out, so their alerts keep their state."""
    kind = KINDS.get(rule.kind)
    if kind is None:
        raise ValueError(f"unknown rule kind {rule.kind!r}")
    if kind.scope == "scheduler":
        return list(_scheduler_observations(rule, facts, now))
    if kind.scope == "connection":
        return [obs for name, cf in sorted(facts.connections.items())
                if in_scope(rule, connection=name) and (obs := _connection_observation(rule, name, cf)) is not None]
    out = []
    for sig in facts.queues:
        q = sig.snapshot.queue
        if not in_scope(rule, connection=q.connection, queue=q.name):
            continue
        cf = facts.connections.get(q.connection)
        if cf is not None and not cf.reachable:
            continue
        value, summary = _queue_value(rule, sig, due_delayed=facts.due_delayed.get(q, 0))
        target = Target(q.connection, q.prefix, q.name)
        out.append(_flag(target, value > 0, summary) if kind.duration_threshold else _observe(rule, target, value, summary))
    return out


GONE = "no longer present (the queue or scheduler was removed, or is out of the rule's scope now)"


def vanished(*, rule, facts: Facts, target: Target, observed: set[Target]) -> Observation | None:
    """An open alert whose target was not observed: resolved when that surely means it is
    gone (a queue or scheduler kind, facts complete, its connection reachable), else None —
    a target we merely could not see keeps its state."""
    if KINDS[rule.kind].scope == "connection" or target in observed or not facts.complete:
        return None
    cf = facts.connections.get(target.connection)
    if cf is None or not cf.reachable:
        return None
    return Observation(target, 0.0, False, True, GONE)


def _connection_observation(rule, name: str, cf: ConnectionFacts) -> Observation | None:
    target = Target(name)
    if rule.kind == "redis_unreachable":
        return _flag(target, not cf.reachable, f"unreachable: {cf.error}" if not cf.reachable else "reachable")
    if not cf.reachable:
        return None
    if rule.kind == "eviction_policy":
        if cf.eviction_policy is None:
            return None
        bad = cf.eviction_policy != "noeviction"
        return _flag(target, bad, f"maxmemory-policy is {cf.eviction_policy}")
    if rule.kind == "memory":
        if not cf.maxmemory or cf.used_memory is None:
            return _observe(rule, target, 0.0, "no maxmemory set")
        pct = 100.0 * cf.used_memory / cf.maxmemory
        return _observe(rule, target, round(pct, 1), f"memory at {pct:.1f}% of maxmemory")
    raise ValueError(f"not a connection rule kind: {rule.kind}")


def extra_pending_seconds(rule) -> float:
    """Kinds about a duration wait that long (on top of the rule's own ``for``) before firing."""
    kind = KINDS[rule.kind]
    return max(0.0, float(rule.threshold)) if kind.duration_threshold else 0.0


# --- the state machine's decisions ------------------------------------------------------------
# One pure function decides; the engine applies its answer to database rows (with CAS), the
# "last 24 hours" preview to an in-memory simulation, so both follow exactly the same rules.

OPEN, FIRE, DROP, START_CLEAR, RESOLVE, STAY = "open", "fire", "drop", "start_clear", "resolve", "stay"
PENDING, FIRING = "pending", "firing"


@dataclass
class Phase:
    """What a decision needs to know of an open alert."""

    state: str  # PENDING or FIRING
    pending_since: dt.datetime
    clear_since: dt.datetime | None = None


def next_step(*, rule, phase: Phase | None, obs: Observation, now: dt.datetime) -> str:
    """The step an alert takes on this observation. ``OPEN`` creates a pending alert (which
    the caller then asks about again, so a rule without a ``for`` fires at once)."""
    if phase is None:
        return OPEN if obs.above else STAY
    if phase.state == PENDING:
        if not obs.above:
            return DROP  # never fired: nothing to tell anyone
        wait = dt.timedelta(seconds=rule.for_seconds + extra_pending_seconds(rule))
        return FIRE if now - phase.pending_since >= wait else STAY
    if not obs.clear:
        return STAY  # still bad (or between the thresholds); a keep-firing clock is reset by the caller
    keep = dt.timedelta(seconds=rule.keep_firing_seconds)
    if keep and phase.clear_since is None:
        return START_CLEAR
    if keep and now - phase.clear_since < keep:
        return STAY
    return RESOLVE


def repeat_due(*, rule, last_notified: dt.datetime | None, now: dt.datetime) -> bool:
    """A firing alert is told again every ``repeat_minutes`` (0: never)."""
    return bool(rule.repeat_minutes) and last_notified is not None and now - last_notified >= dt.timedelta(minutes=rule.repeat_minutes)


# --- silences and maintenance windows -----------------------------------------------------


@dataclass
class Matcher:
    """What a silence or maintenance window applies to; empty fields match everything."""

    rule_id: int | None = None
    connection: str = ""
    queue_glob: str = ""


def matches(matcher: Matcher, *, rule_id: int, target: Target) -> bool:
    if matcher.rule_id is not None and matcher.rule_id != rule_id:
        return False
    if matcher.connection and matcher.connection != target.connection:
        return False
    glob = (matcher.queue_glob or "").strip()
    if glob and glob != "*":
        # A queue glob cannot say anything about a connection-wide alert: it does not match.
        return bool(target.queue) and fnmatch.fnmatchcase(target.queue, glob)
    return True


def silenced_by(matchers: Iterable[tuple[Matcher, str]], *, rule_id: int, target: Target) -> str:
    """The label of the first silence/window matching, or ""."""
    for matcher, label in matchers:
        if matches(matcher, rule_id=rule_id, target=target):
            return label
    return ""


def describe_threshold(rule) -> str:
    """The rule's condition in plain words, e.g. "Backlog above N: 100 jobs over 5 min"."""
    kind = KINDS[rule.kind]
    if rule.kind in THRESHOLDLESS:
        return kind.title
    text = f"{kind.title}: {rule.threshold:g} {kind.unit}".rstrip()
    return text + (f" over {_window(rule)} min" if kind.uses_window else "")
