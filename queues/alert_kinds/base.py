"""What every alert rule kind is made of: the facts it reads, the observations it returns, and
the ``RuleKind`` base class each kind subclasses. Framework-free, no I/O.

A kind is one object that knows everything about itself: its label and help (for forms and
pages), which rule fields it reads and how to validate them, the data it needs beyond the
monitor's per-queue signals (``Need``), and how to turn facts into one ``Observation`` per target.
Kinds are listed in one registry, ``queues.alert_kinds`` (its ``__init__``).

``rule`` is anything with the attributes of ``queues.alert_rules.RuleSpec`` (the Django model
``AlertRule`` has them). Queue signals are duck-typed like ``dashboard.live.rates.QueueSignals``.

Thresholds compare with "above" (``value > threshold``). A separate resolve threshold gives
hysteresis: once firing, the alert only resolves when ``value <= resolve_threshold``; between
the two it stays as it is.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..messages import _, gettext_noop
from ..rates import RATE_WINDOWS

WINDOWS = RATE_WINDOWS  # a rule's window (minutes) is one the monitor keeps rates over
QUEUE, CONNECTION, SCHEDULER = "queue", "connection", "scheduler"

# Rule fields only some kinds read; a kind lists the ones it uses in ``RuleKind.params``.
WINDOW, MIN_VOLUME, DUE_DELAYED_PARAM = "window_minutes", "min_volume", "include_due_delayed"
JOB_NAME = "job_name"  # a job name or glob: one alert per matching job name (timing kinds)

# The rule fields whose use depends on the kind, in the form's order: a rule form shows those
# its kind reads (``RuleKind.shown_fields``), every other field is shown for every kind.
QUEUE_GLOB, THRESHOLD, RESOLVE_THRESHOLD = "queue_glob", "threshold", "resolve_threshold"
KIND_FIELDS = (QUEUE_GLOB, THRESHOLD, RESOLVE_THRESHOLD, WINDOW, MIN_VOLUME, DUE_DELAYED_PARAM, JOB_NAME)


# A target's item as each kind names it (``RuleKind.item_noun``).
ITEM_LABELS = {
    "scheduler": gettext_noop("{queue} scheduler “{item}”"),
    "job name": gettext_noop("{queue} job name “{item}”"),
}


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

    def label(self, item_noun: str = "scheduler") -> str:
        """``item_noun`` says what the item is (the rule kind's ``item_noun``). Marked, so a page
        shows it in the reader's language (``|translated``); notifications keep the English."""
        if not self.queue:
            return _("connection “{connection}”", connection=self.connection)  # whatever kind of store it is
        text = f"{self.connection}/{self.queue}"
        if not self.item:
            return text
        if item_noun in ITEM_LABELS:
            return _(ITEM_LABELS[item_noun], queue=text, item=self.item)
        return f"{text} {item_noun} “{self.item}”"

    def as_dict(self) -> dict:
        return {"connection": self.connection, "prefix": self.prefix, "queue": self.queue, "item": self.item}


def fingerprint(*, rule_id: int, target: Target) -> str:
    """Stable id of one rule's incident on one target (the same across restarts/monitors)."""
    return hashlib.sha1(f"{rule_id}\x1e{target.key}".encode("utf-8", "surrogatepass")).hexdigest()[:20]


@dataclass(frozen=True)
class Need:
    """Data beyond the monitor's per-queue signals that some kinds read. It is gathered only
    when an enabled rule needs it (``RuleKind.needs``), by ``gather(*, signals, source_for,
    down, now)`` — ``source_for(connection name)`` gives its source — and is found by the
    kinds in ``facts.of(need)``. A gatherer skips (and logs) what it cannot read."""

    name: str
    gather: Callable[..., dict]


@dataclass
class ConnectionFacts:
    """What is known about one connection (from the monitor and the last health report):
    reachability now, and the server's settings as the health checks last read them (which
    settings: the catalogue's ``Check.alert_facts``; ``None`` where not read or not reported)."""

    reachable: bool = True
    error: str = ""
    source: str = "redis"  # the connection's source kind (``Source.kind``)
    eviction_policy: str | None = None
    used_memory: int | None = None
    maxmemory: int | None = None


@dataclass
class Facts:
    queues: list  # QueueSignals-like objects (``.snapshot.queue`` is a QueueRef)
    connections: dict[str, ConnectionFacts] = field(default_factory=dict)
    needs: dict[str, Any] = field(default_factory=dict)  # Need.name -> what its gatherer returned
    # Every queue of every reachable connection is in ``queues`` (false while a monitor that
    # just took over has not read them all yet): only then does "absent" mean "gone".
    complete: bool = True

    def of(self, need: Need) -> dict:
        """What ``need``'s gatherer found (empty when it was not gathered)."""
        return self.needs.get(need.name) or {}

    def reachable(self, connection: str) -> bool:
        cf = self.connections.get(connection)
        return cf is None or cf.reachable


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


def compare(rule, target: Target, value: float | None, summary: str) -> Observation:
    """An observation of a measured value against the rule's threshold and resolve threshold."""
    if value is None:
        return Observation(target, None, False, False, summary)
    above = value > rule.threshold
    resolve_at = rule.resolve_threshold if rule.resolve_threshold is not None else rule.threshold
    return Observation(target, value, above, value <= resolve_at, summary)


def flag(target: Target, on: bool, summary: str) -> Observation:
    """An observation of a yes/no condition (1 when it holds)."""
    return Observation(target, 1.0 if on else 0.0, on, not on, summary)


def window_of(rule) -> int:
    return rule.window_minutes if rule.window_minutes in WINDOWS else 5


class RuleKind:
    """One kind of alert rule. Subclass ``QueueKind``, ``ConnectionKind`` (or this class for
    another scope), set the class attributes, implement the measuring method, and add the
    class to ``queues.alert_kinds.BUILT_IN``."""

    id: ClassVar[str]
    title: ClassVar[str]  # "Backlog above N": the choice in the rule form
    scope: ClassVar[str]  # QUEUE, CONNECTION or SCHEDULER: what its alerts are about
    unit: ClassVar[str] = ""  # what the threshold is measured in, for forms and messages
    help: ClassVar[str] = ""
    params: ClassVar[frozenset[str]] = frozenset()  # optional rule fields it reads (WINDOW, …)
    has_threshold: ClassVar[bool] = True  # False: a yes/no fact, no threshold to enter
    percent: ClassVar[bool] = False  # the threshold is a percentage (at most 100)
    # For kinds about a duration ("paused for longer than T"): the threshold is a duration in
    # seconds that is added to the pending period rather than compared with a value.
    duration_threshold: ClassVar[bool] = False
    # The "last 24 hours" preview can replay it over stored per-minute history.
    replayable: ClassVar[bool] = False
    item_noun: ClassVar[str] = "scheduler"  # what a target's item is, in labels ("job name" for timing kinds)
    # The connection-level health check this kind watches (``queues.health``), "" for none: a
    # connection whose source kind does not report that check (a Redis server's settings on a
    # PostgreSQL connection) is outside what the kind can judge (``applies_to``).
    check: ClassVar[str] = ""

    @property
    def uses_window(self) -> bool:
        return WINDOW in self.params

    @property
    def uses_min_volume(self) -> bool:
        return MIN_VOLUME in self.params

    def shown_fields(self) -> frozenset[str]:
        """Which of ``KIND_FIELDS`` a rule of this kind reads, so a form shows only those: a
        queue glob unless it is about connections, a threshold unless it is a yes/no fact, a
        resolve threshold (hysteresis) only for a measured value (a duration kind's condition
        holds or not), and its own ``params``."""
        shown = set(self.params)
        if self.scope != CONNECTION:
            shown.add(QUEUE_GLOB)
        if self.has_threshold:
            shown.add(THRESHOLD)
            if not self.duration_threshold:
                shown.add(RESOLVE_THRESHOLD)
        return frozenset(shown)

    def applies_to(self, source_kind: str) -> bool:
        """Whether a rule of this kind can judge a connection of ``source_kind`` ("redis", "postgres"…)."""
        from .. import health

        return not self.check or self.check in health.connection_kinds(source_kind)

    def needs(self, rule) -> tuple[Need, ...]:
        """The data this rule needs gathered before it can be evaluated."""
        return ()

    def validate(self, rule) -> dict[str, str]:
        """Messages for the rule's fields that make no sense for this kind (field -> message)."""
        errors: dict[str, str] = {}
        threshold, resolve = rule.threshold, rule.resolve_threshold
        if self.percent and threshold is not None and threshold > 100:
            errors["threshold"] = _("A percentage cannot be above 100 (got {threshold}).", threshold=f"{threshold:g}")
        if threshold is not None and resolve is not None and resolve > threshold:
            errors["resolve_threshold"] = _(
                "The resolve threshold ({resolve}) must be at or below the threshold "
                "({threshold}); otherwise the alert would resolve while still firing.",
                resolve=f"{resolve:g}",
                threshold=f"{threshold:g}",
            )
        return errors

    def observe(self, *, rule, facts: Facts, now: dt.datetime) -> list[Observation]:
        """One observation per target in the rule's scope that can be measured now. Targets
        left out (their connection is down) keep their alerts' state."""
        raise NotImplementedError

    def extra_pending_seconds(self, rule) -> float:
        """Kinds about a duration wait that long (on top of the rule's own ``for``) before firing."""
        return max(0.0, float(rule.threshold)) if self.duration_threshold else 0.0

    def describe(self, rule) -> str:
        """The rule's condition in plain words, e.g. "Backlog above N: 100 jobs over 5 min"."""
        if not self.has_threshold:
            return self.title
        if self.uses_window:
            return _(
                "{title}: {threshold} {unit} over {window} min",
                title=self.title,
                threshold=f"{rule.threshold:g}",
                unit=self.unit,
                window=window_of(rule),
            )
        if self.unit:
            return _("{title}: {threshold} {unit}", title=self.title, threshold=f"{rule.threshold:g}", unit=self.unit)
        return _("{title}: {threshold}", title=self.title, threshold=f"{rule.threshold:g}")

    def __repr__(self) -> str:
        return f"<rule kind {self.id}>"


class QueueKind(RuleKind):
    """A kind measured on each queue's signals: implement ``measure``."""

    scope = QUEUE
    replayable = True

    def measure(self, rule, sig, facts: Facts) -> tuple[float | None, str]:
        """One queue's value for the rule, and a sentence saying what it is."""
        raise NotImplementedError

    def observe(self, *, rule, facts: Facts, now: dt.datetime) -> list[Observation]:
        out = []
        for sig in facts.queues:
            q = sig.snapshot.queue
            if not in_scope(rule, connection=q.connection, queue=q.name) or not facts.reachable(q.connection):
                continue
            value, summary = self.measure(rule, sig, facts)
            target = Target(q.connection, q.prefix, q.name)
            if self.duration_threshold:
                # The duration kinds always measure 1.0 or 0.0; an unknown value holds nothing.
                out.append(flag(target, value is not None and value > 0, summary))
            else:
                out.append(compare(rule, target, value, summary))
        return out


class ConnectionKind(RuleKind):
    """A kind about a connection as a whole (its store, not one queue): implement ``observe_connection``."""

    scope = CONNECTION

    def observe_connection(self, rule, name: str, cf: ConnectionFacts) -> Observation | None:
        raise NotImplementedError

    def observe(self, *, rule, facts: Facts, now: dt.datetime) -> list[Observation]:
        return [
            obs
            for name, cf in sorted(facts.connections.items())
            if in_scope(rule, connection=name) and (obs := self.observe_connection(rule, name, cf)) is not None
        ]
