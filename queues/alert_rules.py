"""Alert rule evaluation and the state machine's decisions: pure functions, no Django, no I/O.

``rule_evaluate(*, rule, facts, now)`` looks at what the monitor knows (per-queue signals,
connections that are down, the latest health check results, and whatever the rule's kind needs
gathered) and returns one ``Observation`` per target in the rule's scope: the value, whether it
is past the firing threshold, and whether it is back past the resolve threshold. What each kind
measures lives in the kind itself (``queues.alert_kinds``, one registry); the state machine's
rows and notifications live in ``dashboard.alerts.engine``; this module says what is true now
and which step an alert takes on it.

``rule`` is anything with the attributes of ``RuleSpec`` (the Django model has them).
"""

from __future__ import annotations

import datetime as dt
import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass

# Re-exported: callers of evaluation use these names from here (KINDS is the kinds registry).
from .alert_kinds import KINDS, kind_of, summaries  # noqa: F401
from .alert_kinds.base import CONNECTION, WINDOWS, ConnectionFacts, Facts, Observation, Target, fingerprint, in_scope  # noqa: F401


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
    job_name: str = ""  # timing kinds: a job name or glob ("" = the whole queue)


def rule_evaluate(*, rule, facts: Facts, now: dt.datetime) -> list[Observation]:
    """Observations of every target in the rule's scope. Targets that cannot be measured
    now (their connection is down) are left out, so their alerts keep their state."""
    return kind_of(rule).observe(rule=rule, facts=facts, now=now)


GONE = summaries.GONE


def vanished(*, rule, facts: Facts, target: Target, observed: set[Target]) -> Observation | None:
    """An open alert whose target was not observed: resolved when that surely means it is
    gone (a queue or scheduler kind, facts complete, its connection reachable), else None —
    a target we merely could not see keeps its state."""
    if kind_of(rule).scope == CONNECTION or target in observed or not facts.complete:
        return None
    cf = facts.connections.get(target.connection)
    if cf is None or not cf.reachable:
        return None
    return Observation(target, 0.0, False, True, GONE)


def extra_pending_seconds(rule) -> float:
    """Kinds about a duration wait that long (on top of the rule's own ``for``) before firing."""
    return kind_of(rule).extra_pending_seconds(rule)


def describe_threshold(rule) -> str:
    """The rule's condition in plain words, e.g. "Backlog above N: 100 jobs over 5 min"."""
    return kind_of(rule).describe(rule)


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
    if keep:
        if phase.clear_since is None:
            return START_CLEAR
        if now - phase.clear_since < keep:
            return STAY
    return RESOLVE


def repeat_due(*, rule, last_notified: dt.datetime | None, now: dt.datetime) -> bool:
    """A firing alert is told again every ``repeat_minutes`` (0: never)."""
    return (
        bool(rule.repeat_minutes)
        and last_notified is not None
        and now - last_notified >= dt.timedelta(minutes=rule.repeat_minutes)
    )


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


def exact_glob(name: str) -> str:
    """A glob matching ``name`` only: its glob characters each in a class of their own."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def matcher_for(*, rule_id: int, target: Target) -> Matcher:
    """The silence that mutes one alert: its rule, its connection and exactly its queue (an
    alert about a whole connection: the connection). A silence has no matcher for an item (a
    scheduler, a job name), so it mutes the rule's other items on that queue too."""
    return Matcher(rule_id=rule_id, connection=target.connection, queue_glob=exact_glob(target.queue))
