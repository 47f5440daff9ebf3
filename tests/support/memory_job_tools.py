"""The job tools and deduplication facets of ``FullMemorySource`` (``tests/support/memory_backend.py``):
the signatures and outcomes of the Redis facets (``queues/redis/job_tools_facet.py``) on the
in-memory store. The store keeps no deduplication keys: the listing is empty and a release finds
nothing to release."""

from __future__ import annotations

from queues import job_tools
from queues.actions import ActionResult
from queues.dedup import DedupPage, release_outcome
from queues.keys import QueueRef
from queues.redact import Redactor
from tests.support.memory_backend import MemStore, now_ms, translated


class _Facet:
    def __init__(self, *, store: MemStore, connection: str):
        self.store, self.connection = store, connection

    def _job(self, queue: QueueRef, job_id: str):
        self.store.check()
        found = self.store.queue(queue)
        return found.jobs.get(job_id) if found else None


class MemJobTools(_Facet):
    def change_priority(self, queue: QueueRef, *, job_id: str, priority: int) -> ActionResult:
        with translated(self.connection), self.store.lock:
            job = self._job(queue, job_id)
            if job is None or job.state not in job_tools.PRIORITY_STATES:
                return job_tools.priority_outcome(job_id, -1 if job is None else -3, priority=priority)
            job.opts["priority"] = priority
            if job.state in ("waiting", "prioritized"):
                job.state = "prioritized" if priority else "waiting"
            return job_tools.priority_outcome(job_id, 0, priority=priority)

    def change_delay(self, queue: QueueRef, *, job_id: str, delay_ms: int) -> ActionResult:
        now = now_ms()
        with translated(self.connection), self.store.lock:
            job = self._job(queue, job_id)
            if job is None or job.state != "delayed":
                return job_tools.delay_outcome(job_id, -1 if job is None else -3, run_at_ms=now + delay_ms)
            job.opts["delay"] = now - job.timestamp + delay_ms
            return job_tools.delay_outcome(job_id, 0, run_at_ms=now + delay_ms)

    def move_to_failed(self, queue: QueueRef, *, job_id: str, reason: str) -> ActionResult:
        with translated(self.connection), self.store.lock:
            job = self._job(queue, job_id)
            if job is None or job.state not in job_tools.FAIL_STATES:
                return job_tools.failed_outcome(job_id, -1 if job is None else -3)
            if job.locked:
                return job_tools.failed_outcome(job_id, -6)
            job.state, job.failed_reason, job.finished_on = "failed", reason, now_ms()
            job.attempts_made += 1
            return job_tools.failed_outcome(job_id, 0)


class MemDedup(_Facet):
    def page(self, queue: QueueRef, *, cursor: str, redactor: Redactor) -> DedupPage:
        with translated(self.connection):
            self.store.check()
            return DedupPage(keys=[], cursor="0", examined_calls=1)

    def release(self, queue: QueueRef, *, dedup_id: str, owner: str) -> ActionResult:
        with translated(self.connection):
            self.store.check()
            return release_outcome(dedup_id, owner, 0)
