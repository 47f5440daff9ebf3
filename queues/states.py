"""A job's states: where BullMQ keeps each one in Redis, and what Queuewatch lets an operator do
with the jobs in it. One table (``STATES``); every state rule elsewhere (which key, list or
sorted set, which tabs, which states an action or a filter accepts) is read from it.

Framework-free, like the rest of ``queues``: the web edge validates its inputs against the same
tuples the domain functions check, so a page, the API and Redis never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

LIST, ZSET = "list", "zset"

# What an operator can do with the jobs of a state. The names of the bulk actions are the
# operations' names (``queues.bulk.plan.ACTIONS``).
BROWSE = "browse"  # a tab of the queue page (and the live job list, the API's job list)
SELECT = "select"  # "all jobs matching a filter" can be chosen in it (``queues.selection``)
RETRY = "retry"  # back to waiting with BullMQ's reprocessJob (one job or in bulk)
CLEAN = "clean"  # removed by age with BullMQ's cleanJobsInSet (``Queue.clean``)
PROMOTE = "promote"  # run now (BullMQ's promote)
DISCARD = "discard"  # where a bulk discard looks for a chosen job (one job is removed from any state)
REDRIVE = "redrive"  # copied to another queue and removed (``queues.redis.redrive``)
EDIT_RETRY = "edit-retry"  # data patched, then retried (``queues.redis.bulk.edit``)
# The job tools (``queues.job_tools``). Changing the priority re-queues a waiting or prioritized
# job at once (BullMQ's changePriority); a delayed or waiting-children job keeps it for when it
# becomes ready. Move to failed: a job no worker holds (an active one once its lock lapsed); not
# a waiting-children job, whose children would go on reporting to a parent already failed.
CHANGE_PRIORITY = "change-priority"
CHANGE_DELAY = "change-delay"  # BullMQ's changeDelay: delayed jobs only
MOVE_TO_FAILED = "move-to-failed"
OPERATIONS = (
    BROWSE,
    SELECT,
    RETRY,
    CLEAN,
    PROMOTE,
    DISCARD,
    REDRIVE,
    EDIT_RETRY,
    CHANGE_PRIORITY,
    CHANGE_DELAY,
    MOVE_TO_FAILED,
)


@dataclass(frozen=True)
class JobState:
    name: str
    key: str  # the suffix of ``<prefix>:<queue>:<key>``
    structure: str  # LIST or ZSET
    allows: frozenset[str] = frozenset()
    finished: bool = False  # scored by finish time (``finishedOn``); a job's life is over

    def __post_init__(self):
        unknown = self.allows - set(OPERATIONS)
        if self.structure not in (LIST, ZSET) or unknown:
            raise ValueError(f"State {self.name!r}: structure {self.structure!r}, operations {sorted(unknown)}.")


def _state(name: str, key: str, structure: str, *allows: str, finished: bool = False) -> JobState:
    return JobState(name, key, structure, frozenset(allows), finished)


# In the order the queue page shows its tabs; every derived tuple keeps this order.
# Clean: BullMQ's Queue.clean also takes ``active`` and ``paused``. Not here: cleaning active
# races the workers that hold those jobs, and ``paused`` is a legacy list (see below).
STATES = (
    _state("waiting", "wait", LIST, BROWSE, SELECT, CLEAN, DISCARD, REDRIVE, CHANGE_PRIORITY, MOVE_TO_FAILED),
    # discard and move to failed: refused while a worker holds the job's lock
    _state("active", "active", LIST, BROWSE, DISCARD, MOVE_TO_FAILED),
    _state(
        "prioritized", "prioritized", ZSET, BROWSE, SELECT, CLEAN, DISCARD, REDRIVE, CHANGE_PRIORITY, MOVE_TO_FAILED
    ),
    _state(
        "delayed",
        "delayed",
        ZSET,
        BROWSE,
        SELECT,
        CLEAN,
        PROMOTE,
        DISCARD,
        REDRIVE,
        CHANGE_PRIORITY,
        CHANGE_DELAY,
        MOVE_TO_FAILED,
    ),
    _state("waiting-children", "waiting-children", ZSET, BROWSE, CHANGE_PRIORITY),
    _state("completed", "completed", ZSET, BROWSE, SELECT, RETRY, CLEAN, DISCARD, REDRIVE, finished=True),
    _state("failed", "failed", ZSET, BROWSE, SELECT, RETRY, CLEAN, DISCARD, REDRIVE, EDIT_RETRY, finished=True),
    # BullMQ 4/5 kept a paused queue's jobs in this list; BullMQ 6 pauses with a flag in meta.
    # Its jobs are shown and counted as waiting.
    _state("paused", "paused", LIST),
)
BY_NAME = {s.name: s for s in STATES}


def states_allowing(operation: str) -> tuple[str, ...]:
    if operation not in OPERATIONS:
        raise ValueError(f"Unknown operation {operation!r}; choose one of {', '.join(OPERATIONS)}.")
    return tuple(s.name for s in STATES if operation in s.allows)


def state_allows(state: str, operation: str) -> bool:
    """Whether ``operation`` takes jobs from ``state`` (False for a name that is no state)."""
    found = BY_NAME.get(state)
    return found is not None and operation in found.allows


STATE_KEYS = {s.name: s.key for s in STATES}  # e.g. waiting -> "wait"
LIST_STATES = tuple(s.name for s in STATES if s.structure == LIST)
FINISHED_STATES = tuple(s.name for s in STATES if s.finished)
BROWSABLE_STATES = states_allowing(BROWSE)
# Every state a job is counted in (the legacy list counts as waiting), in the order counts were
# first published in (the snapshot, /metrics): scrapers and the golden /metrics file see it.
COUNT_STATES = ("waiting", "active", "delayed", "prioritized", "waiting-children", "completed", "failed")
SELECTABLE_STATES = states_allowing(SELECT)
RETRYABLE_STATES = states_allowing(RETRY)
CLEANABLE_STATES = states_allowing(CLEAN)
PROMOTABLE_STATES = states_allowing(PROMOTE)
