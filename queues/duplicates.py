"""BullMQ's ``duplicated`` event, told apart by what caused it.

BullMQ emits ``duplicated`` (fields: the job id only) in three situations that mean different
things to an operator:

* **a custom ``jobId`` that still exists** (``handleDuplicatedJob`` in every add script): the add
  was dropped, nothing runs. This is the trap the ``queue.duplicated_adds`` check is about;
* **a job scheduler's next iteration that already exists** (``updateJobScheduler``): the worker
  that took an iteration found the next one already there. The schedule goes on; iteration ids
  are ``repeat:<scheduler id>:<ms>``, which tells them apart without a read;
* **a flow that re-adds a child with a custom id** (the same ``handleDuplicatedJob`` with a
  parent): the existing job is attached to the parent (its result recorded there when it has
  completed) instead of being added again. Its hash then has a ``parentKey``.

So a ``duplicated`` event whose id is not an iteration's costs one ``HGET parentKey`` of the job,
batched per connection like the monitor's other per-event reads (``queues.job_fields``). The
answer is kept per job id (``MEMORY``, least recently used forgotten first): a producer that
re-adds the same custom id at a high rate costs one read, not one per event.

Limits: a plain add (without a parent) of a custom id whose existing job is itself a flow child
counts as a flow re-add; a flow's top-level parent re-added with its custom id is what it is, an
add dropped because the id existed (its children are attached to it). Ids pending beyond
``MAX_PENDING`` are counted as custom ids without a read.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

from .job_fields import read_job_field
from .keys import QueueRef
from .text import to_text

if TYPE_CHECKING:
    from .sources.facets import ProbesFacet

SCHEDULER, FLOW, CUSTOM_ID = "scheduler", "flow", "custom_id"
KINDS = (CUSTOM_ID, SCHEDULER, FLOW)
ITERATION_PREFIX = "repeat:"  # job scheduler iterations (and legacy repeatables) are repeat:<key>:<ms>
MEMORY = 10_000  # job ids whose kind is remembered
MAX_PENDING = 10_000  # distinct job ids waiting for their read at once


def iteration_id(job_id: str) -> bool:
    return job_id.startswith(ITERATION_PREFIX)


class DuplicateKinds:
    """Which kind each ``duplicated`` event is: at once for scheduler iterations and jobs read
    before, after one batched read (``resolve``) for the others."""

    def __init__(self, *, memory: int = MEMORY, max_pending: int = MAX_PENDING):
        self.memory, self.max_pending = memory, max_pending
        self._known: OrderedDict[tuple[QueueRef, str], str] = OrderedDict()
        self._pending: dict[tuple[QueueRef, str], int] = {}  # job -> events waiting for its read
        self.reads = 0  # HGETs sent, for tests and benchmarks

    @property
    def pending(self) -> bool:
        return bool(self._pending)

    def consider(self, queue: QueueRef, job_id: str) -> str | None:
        """One ``duplicated`` event: its kind, or ``None`` when it waits for ``resolve``."""
        if iteration_id(job_id):
            return SCHEDULER
        key = (queue, job_id)
        known = self._known.get(key)
        if known is not None:
            self._known.move_to_end(key)
            return known
        if key not in self._pending and len(self._pending) >= self.max_pending:
            return CUSTOM_ID  # bounded work: not read, counted as the common case
        self._pending[key] = self._pending.get(key, 0) + 1
        return None

    def resolve(self, probes_for: Callable[[str], ProbesFacet | None]) -> list[tuple[QueueRef, str, int]]:
        """Read the pending jobs' ``parentKey`` (one pipeline per connection); returns
        (queue, kind, events) per job read. A connection that cannot be read keeps its jobs
        pending; a job already gone counts as a custom id (no parent is known)."""
        if not self._pending:
            return []
        decided = []
        for key in [k for k in self._pending if probes_for(k[0].connection) is None]:
            decided.append((key[0], CUSTOM_ID, self._pending.pop(key)))  # a kind without probes: not read
        replies = read_job_field(probes_for, list(self._pending), "parentKey")
        self.reads += len(replies)
        for key, raw in replies.items():
            kind = FLOW if raw is not None and to_text(raw) else CUSTOM_ID
            decided.append((key[0], kind, self._pending.pop(key)))
            self._known[key] = kind
            if len(self._known) > self.memory:
                self._known.popitem(last=False)
        return decided

    def forget(self, queue: QueueRef) -> None:
        for key in [k for k in self._pending if k[0] == queue]:
            del self._pending[key]
