"""The bulk engine of a Redis node: crash-safe, paced, cancellable retry / discard / promote /
redrive / edit-and-retry (the plan and progress it works from: ``queues.bulk``).

Used for every bulk action: redrive of the failed set (retry with counters reset), retry all
or selected, discard all or selected, promote all delayed, and redrive of an application
dead-letter queue into its source queue. It runs in the monitor process (the caller), never in
a web request, and reports progress through a ``ProgressStore`` the caller provides (the
Django side stores rows; ``MemoryStore``/``RedisStore`` here serve tests and the benchmark).

Its parts: ``totals.py`` (how many jobs a plan targets), ``store.py`` (``RedisStore``),
``lock.py`` (one task per queue), ``batches.py`` (one batch: the script calls), ``head.py``
(the whole-set retry fast road), ``edit.py`` (a batch of edit-and-retry: one JSON merge patch on
each job's stored data) and ``engine.py`` (``run_bulk``, the loop). Importers use the
package (``from queues.redis import bulk``; ``bulk.run_bulk``, …).

How "every job exactly once, none left behind" holds when the process dies at any point:

* Each job is moved by one atomic BullMQ script that acts only if the job is still where the
  plan expects it (``reprocessJob`` needs it in ``failed``; ``removeJob`` + add is one script
  for a redrive; ``promote`` needs it in ``delayed``). Repeating a move is therefore harmless:
  the second attempt finds the job gone and does nothing.
* The target set is fixed by ``before_ms``: a job we retried that fails again has a newer
  finish time and is not matched again.
* Jobs are taken oldest first, one batch at a time, from a ``Cursor`` that is saved with the
  counts *after* the batch. Before the batch, its ids are saved as ``in_flight``. After a crash,
  ``run_bulk`` resumes from the saved cursor: in-flight jobs that are no longer where they were
  are counted as moved (they left their state between the journal write and the crash); the
  others are simply met again by the scan and processed. Nothing behind the cursor is skipped,
  because only jobs that stay (filter mismatches, refusals) remain behind it.

Counts after a crash are exact except in one case: a job of the in-flight batch that another
actor moved during that same batch is counted as moved rather than skipped.

Retrying a whole finished set (the redrive of the failed set: no filter that reads the jobs)
takes a faster road: the batch script picks the next batch itself, so ids never travel to
Python and back, and writes a receipt (``<batch number>:<moved>``, our own key
``queuewatch:bulk-receipt:<uuid>`` in the monitored Redis, expiring after a day, deleted when
the task ends) in the same atomic step. The journal is then just the batch numbers: after a
crash the receipt says which batch ran last and how many it moved, so the counts stay exact.
Unpaced, up to four batches are in flight, each running only if the one before moved a full
batch (``head.py``).

Pacing: ``rate`` jobs per second (default 100; ``None`` = as fast as Redis allows), in batches
small enough for several progress updates per second. Memory holds one batch, whatever the
number of jobs.
"""

from __future__ import annotations

from .batches import MOVED, execute_batch
from .engine import LEFT_STATE, run_bulk
from .head import RECEIPT_NAMESPACE, head_mode
from .lock import BulkLock, LockLost
from .store import RedisStore
from .totals import plan_total

__all__ = [
    "LEFT_STATE",
    "MOVED",
    "RECEIPT_NAMESPACE",
    "BulkLock",
    "LockLost",
    "RedisStore",
    "execute_batch",
    "head_mode",
    "plan_total",
    "run_bulk",
]
