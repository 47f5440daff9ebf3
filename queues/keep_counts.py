"""How many jobs each queue's finished sets keep: learned from a job's own options.

``removeOnComplete``/``removeOnFail`` with a count trim the finished set in the same script that
adds the finished job (``moveToFinished``), and no event says so. Counting every ``completed``
or ``failed`` event into the set therefore overcounts a trimmed set by one per finish. Under
steady load a busy queue never gets its quiet read (``queues.quiet``), so without knowing the
keep count the overcount grows until the next periodic snapshot.

The keep count is in the job's ``opts`` (a number, ``true``/``false``, or ``{count, age}``), as
BullMQ's ``getKeepJobs`` reads it. Reading it per event would be a per-event read, so it is read
**rarely**: for each queue, the ``opts`` of the latest job seen added or made active (its hash
most likely still exists), one ``HGET`` batched into a pipeline per connection, at most once per
``REFRESH_S`` per queue (and, if that job was already gone, again after ``RETRY_S``). With the
count known, ``queues.live_counts`` clamps the set's count to it: the estimate is then exact
under any load, as long as the queue's jobs share the option.

What the options cannot tell (the monitor falls back on what an exact read shows, see
``LiveCounts.reset``): a job without the option finishes with its *worker's* default, which is
not stored anywhere; an ``age`` trims by time, not count. Jobs of one queue with different keep
counts are clamped to the count of the job read last.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .job_fields import read_job_field
from .keys import QueueRef
from .safe_json import loads_or
from .text import to_text

if TYPE_CHECKING:
    from .sources.facets import ProbesFacet

KEEP_ALL = -1  # the set is never trimmed by count: every finish adds one
OPTION = {"completed": "removeOnComplete", "failed": "removeOnFail"}
REFRESH_S = 60.0  # a queue's options are read again this often (they may change with a deploy)
RETRY_S = 5.0  # after a read that found no usable job


def keep_count(opts: object, state: str) -> int | None:
    """The number of jobs the finished set ``state`` keeps after a job with these options
    finishes: a count (0: the job is removed at once), ``KEEP_ALL``, or ``None`` when the
    options do not fix it (the worker's default applies, or an age trims the set)."""
    if not isinstance(opts, dict) or OPTION[state] not in opts:
        return None
    value = opts[OPTION[state]]
    if isinstance(value, bool):  # before int: True is an int in Python
        return 0 if value else KEEP_ALL
    if isinstance(value, (int, float)):
        return int(value) if value >= 0 else KEEP_ALL
    if isinstance(value, dict):
        if value.get("age") is not None:
            return None
        count = value.get("count")
        if not isinstance(count, (int, float)) or isinstance(count, bool) or count < 0:
            return KEEP_ALL  # {} or {count: -1}: moveToFinished adds and never trims by count
        return int(count)
    return None


class KeepCounts:
    """Which queues are due a read of one job's options, and the reads themselves."""

    def __init__(self, *, refresh_s: float = REFRESH_S, retry_s: float = RETRY_S):
        self.refresh_s = refresh_s
        self.retry_s = retry_s
        self._next_read: dict[QueueRef, float] = {}  # monotonic time a queue may be read again
        self._pending: dict[QueueRef, str] = {}  # queue -> a job id whose options to read
        self.reads = 0  # HGETs sent, for tests and benchmarks

    def consider(self, queue: QueueRef, job_id: str, at: float) -> None:
        """A job of ``queue`` was seen added or made active at monotonic time ``at``. The
        latest one is read: on a busy queue with a small keep count, a job seen a second
        earlier may already be finished and trimmed away."""
        if job_id and at >= self._next_read.get(queue, 0.0):
            self._pending[queue] = job_id

    @property
    def pending(self) -> bool:
        return bool(self._pending)

    def resolve(
        self, probes_for: Callable[[str], ProbesFacet | None], at: float
    ) -> dict[QueueRef, dict[str, int | None]]:
        """Read the pending jobs' options (one pipeline per connection). Returns, per queue
        read, the keep count of each finished set (see ``keep_count``)."""
        pending, self._pending = self._pending, {}
        replies = read_job_field(probes_for, pending.items(), "opts")  # a connection not read: asked again later
        self.reads += len(replies)
        learned: dict[QueueRef, dict[str, int | None]] = {}
        for (q, _), raw in replies.items():
            opts = loads_or(to_text(raw), None) if raw is not None else None
            if not isinstance(opts, dict):
                self._next_read[q] = at + self.retry_s  # removed already, or not a job hash
                continue
            self._next_read[q] = at + self.refresh_s
            learned[q] = {state: keep_count(opts, state) for state in OPTION}
        return learned

    def forget(self, queue: QueueRef) -> None:
        self._next_read.pop(queue, None)
        self._pending.pop(queue, None)
