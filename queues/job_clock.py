"""Timing jobs from the events stream the monitor already reads: no Redis read per job.

A stream entry's id is its time. Per job, the clock remembers its name (only ``added`` carries
it), when it became ready to run and when its current attempt started:

* ready: ``added`` (or any ``waiting``) at the entry's time; a ``delayed`` job at the due time
  its event carries (``delay`` is absolute), or earlier if it was promoted by hand
  (``waiting prev=delayed`` before the due time);
* ``active``: a **wait** sample, ready → active (one per attempt: a retried job waits again);
* ``completed``/``failed``: a **processing** sample, active → finish, and a completion or final
  failure for the job's name. Failed attempts that will be retried come from
  ``queues.attempts`` and are given a name here (``attempt_failed``).

Memory is bounded: at most ``MEMORY`` jobs are remembered (least recently seen forgotten first;
about 150 bytes each, names interned), and a job is forgotten when it finishes or is removed.
A job the clock does not know (added before the monitor followed, or forgotten) has its name
read once, batched with the others into one pipelined ``HGET name`` per connection
(``resolve_names``), with the samples it produced held until then; a job already deleted
(``removeOnComplete: true``) is counted under ``UNKNOWN_NAME``. On a new term of leadership
the clock is warmed from the tail of each stream before the resume point (``warm``: state only,
nothing counted), so jobs in flight across a takeover keep their samples.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, overload

from .events import Event
from .job_fields import read_job_field
from .keys import QueueRef
from .text import to_text

if TYPE_CHECKING:
    from .sources.facets import ProbesFacet

MEMORY = 100_000  # jobs remembered at once (the id -> name map's bound)
UNKNOWN_NAME = "(unknown)"  # a job whose hash was gone before its name could be read
WARM_EVENTS = 2_000  # entries read back per stream at the start of a term, once


@dataclass(frozen=True)
class Sample:
    """One thing to count for a job name in the minute of ``ts_ms``: ``kind`` is ``wait`` or
    ``processing`` (with ``ms``), ``completed``, ``failed`` or ``attempt_failed``."""

    queue: QueueRef
    name: str
    ts_ms: int
    kind: str
    ms: int | None = None


class _Job:
    __slots__ = ("name", "ready_ms", "due_ms", "active_ms")

    def __init__(self, name: str | None):
        self.name = name
        self.ready_ms: int | None = None
        self.due_ms: int | None = None  # a delayed job's due time
        self.active_ms: int | None = None


class JobClock:
    def __init__(self, *, memory: int = MEMORY):
        self.memory = memory
        self._jobs: OrderedDict[tuple[QueueRef, str], _Job] = OrderedDict()
        # Samples of jobs whose name is not known yet, by job, until resolve_names.
        self._unnamed: dict[tuple[QueueRef, str], list[Sample]] = {}

    def __len__(self) -> int:
        return len(self._jobs)

    @property
    def names_to_read(self) -> int:
        return len(self._unnamed)

    # --- events -----------------------------------------------------------------------------

    def observe(self, ev: Event) -> list[Sample]:
        """Apply one event; returns the samples it completes (those of jobs with a known name)."""
        return self._apply(ev, counting=True)

    def warm(self, ev: Event) -> None:
        """Learn from an event before the resume point (already counted, or before we followed)."""
        self._apply(ev, counting=False)

    def attempt_failed(self, ev: Event) -> list[Sample]:
        """A failed attempt that will be retried (decided by ``queues.attempts``)."""
        job = self._job((ev.queue, ev.job_id), create=True)
        return self._named(ev.queue, ev.job_id, job, [(ev.ts_ms, "attempt_failed", None)])

    def _apply(self, ev: Event, *, counting: bool) -> list[Sample]:
        if not ev.job_id:
            return []
        key, ts, name = (ev.queue, ev.job_id), ev.ts_ms, ev.name
        if name == "added":
            added = self._job(key, create=True)
            added.name = sys.intern(ev.fields.get("name", "") or "")
            added.ready_ms, added.due_ms, added.active_ms = ts, None, None
            return []
        if name == "removed":
            self._jobs.pop(key, None)
            return []
        found: list[tuple[int, str, int | None]] = []
        if name == "waiting":
            job = self._job(key, create=counting)
            if job is None:
                return []
            if ev.fields.get("prev") == "delayed" and job.due_ms is not None:
                job.ready_ms = min(job.due_ms, ts)  # due, or promoted by hand before it was due
            else:
                job.ready_ms = ts
            job.due_ms = None
        elif name == "delayed":
            job = self._job(key, create=counting)
            if job is None:
                return []
            due = _int(ev.fields.get("delay"))
            job.due_ms = job.ready_ms = due if due is not None else ts
            job.active_ms = None
        elif name == "active":
            job = self._job(key, create=counting)
            if job is None:
                return []
            if job.ready_ms is not None:
                found.append((ts, "wait", ts - job.ready_ms))
            job.ready_ms, job.due_ms, job.active_ms = None, None, ts
        elif name in ("completed", "failed"):
            job = self._job(key, create=counting)
            if job is None:
                return []
            found.append((ts, name, None if job.active_ms is None else ts - job.active_ms))
            # Finished: forget the timestamps, keep the name (a retry from the finished set may follow).
            job.ready_ms = job.due_ms = job.active_ms = None
        else:
            return []
        return self._named(ev.queue, ev.job_id, job, found) if counting else []

    def _named(self, queue: QueueRef, job_id: str, job: _Job, found) -> list[Sample]:
        samples = [Sample(queue, job.name or "", ts, kind, ms) for ts, kind, ms in found]
        if job.name is None and samples:
            self._unnamed.setdefault((queue, job_id), []).extend(samples)
            return []
        return samples

    @overload
    def _job(self, key: tuple[QueueRef, str], *, create: Literal[True]) -> _Job: ...

    @overload
    def _job(self, key: tuple[QueueRef, str], *, create: bool) -> _Job | None: ...

    def _job(self, key: tuple[QueueRef, str], *, create: bool) -> _Job | None:
        job = self._jobs.get(key)
        if job is not None:
            self._jobs.move_to_end(key)
            return job
        if not create:
            return None
        job = self._jobs[key] = _Job(None)
        if len(self._jobs) > self.memory:
            self._jobs.popitem(last=False)
        return job

    # --- names of jobs added before we followed ----------------------------------------------

    def resolve_names(self, probes_for: Callable[[str], ProbesFacet | None]) -> list[Sample]:
        """Read the names of jobs whose samples wait for one: one pipelined ``HGET`` per job, a
        pipeline per connection; returns their samples, named."""
        if not self._unnamed:
            return []
        ready: list[Sample] = []
        # A connection that cannot be read is left out: its jobs are tried at the next resolve.
        for key, raw in read_job_field(probes_for, list(self._unnamed), "name").items():
            name = sys.intern(to_text(raw)) if raw is not None else UNKNOWN_NAME
            job = self._jobs.get(key)
            if job is not None and job.name is None:
                job.name = name
            ready += [Sample(s.queue, name, s.ts_ms, s.kind, s.ms) for s in self._unnamed.pop(key)]
        return ready


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
