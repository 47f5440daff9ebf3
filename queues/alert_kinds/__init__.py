"""The registry of alert rule kinds: the one place that lists them.

Each kind is one class (see ``base.RuleKind``) carrying its label and help, the validation of
its threshold and parameters, the data it needs and its evaluation. Everything else — the rule
form's choices, the model's validation, the preview, the monitor's data gathering, the pages —
reads this registry. To add a kind, write its class and add it to ``BUILT_IN`` (docs/recipe-rule-kind.md).
"""

from __future__ import annotations

from .base import RuleKind
from .queue_kinds import (
    AttemptFailures,
    Backlog,
    DlqDepth,
    DlqGrowth,
    FailureRatio,
    NoCompletions,
    NoWorkers,
    OldestWaiting,
    Paused,
    StalledNow,
    StalledWindow,
)
from .redis_kinds import ConnectionUnreachable, EvictionPolicy, Memory
from .scheduler_kinds import SchedulerMissed
from .timing_kinds import ProcessingP95, WaitP95

BUILT_IN: tuple[type[RuleKind], ...] = (
    DlqDepth,
    DlqGrowth,
    FailureRatio,
    AttemptFailures,
    StalledWindow,
    StalledNow,
    Backlog,
    OldestWaiting,
    NoCompletions,
    NoWorkers,
    WaitP95,
    ProcessingP95,
    Paused,
    SchedulerMissed,
    ConnectionUnreachable,
    EvictionPolicy,
    Memory,
)

KINDS: dict[str, RuleKind] = {}


def register(kind: type[RuleKind]) -> RuleKind:
    """Add a kind (its class) to the registry; an id can be registered once."""
    if kind.id in KINDS:
        raise ValueError(f"rule kind {kind.id!r} is already registered")
    KINDS[kind.id] = instance = kind()
    return instance


def unregister(kind_id: str) -> None:
    KINDS.pop(kind_id, None)


def kind_of(rule) -> RuleKind:
    """The kind of ``rule`` (anything with a ``kind`` id); ValueError for an unknown one."""
    kind = KINDS.get(rule.kind)
    if kind is None:
        raise ValueError(f"unknown rule kind {rule.kind!r}")
    return kind


def choices() -> list[tuple[str, str]]:
    return [(k.id, k.title) for k in KINDS.values()]


def needs_of(rules) -> list:
    """Every ``Need`` of these rules, each once, in a stable order."""
    seen: dict[str, object] = {}
    for rule in rules:
        kind = KINDS.get(rule.kind)
        for need in kind.needs(rule) if kind else ():
            seen.setdefault(need.name, need)
    return list(seen.values())


for _kind in BUILT_IN:
    register(_kind)
