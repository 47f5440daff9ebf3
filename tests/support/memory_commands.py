"""The commands, schedulers, bulk and server facets of ``FullMemorySource``
(``tests/support/memory_backend.py``): the same signatures, outcomes and messages as the Redis
facets (``queues/redis/*_facet.py``), with BullMQ's plain semantics applied to the in-memory
store: retry moves failed→waiting, discard removes, promote moves delayed→waiting, and so on."""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Mapping

from queues import actions, edit_retry, flow_actions, job_schema
from queues.actions import ActionResult, gone
from queues.bulk import DONE_STATE, BulkPlan, Progress, ProgressStore
from queues.cron import bullmq_next_millis
from queues.health import FAIL, PASS, CheckResult, Thresholds
from queues.job_add import CREATED, DEDUPLICATED, DUPLICATED, AddOutcome, check_data
from queues.job_options import InvalidJob, NewJob
from queues.keys import QueueRef
from queues.messages import _
from queues.queue_settings import QueueSettings, SettingRefused
from queues.redis.actions import promote_outcome, remove_outcome, retry_outcome
from queues.redis.job_add import add_kind
from queues.safe_json import loads_or
from queues.scheduler_edit import SchedulerError, SchedulerResult, SchedulerSpec
from queues.scheduler_migration import MigrationPlan
from queues.scheduler_runs import Iteration, SchedulerDetail
from queues.scheduler_zone import PatternZone
from queues.schedulers import Scheduler
from queues.snapshot import QueueSnapshot
from queues.workers import Worker
from tests.support.memory_backend import (
    FINISHED,
    REACHABLE,
    MemJob,
    MemQueue,
    MemScheduler,
    MemStore,
    now_ms,
    translated,
)
from tests.support.memory_jobs import selected


class _Facet:
    def __init__(self, *, store: MemStore, connection: str):
        self.store, self.connection = store, connection

    def _queue(self, ref: QueueRef) -> MemQueue:
        self.store.check()
        return self.store.queue(ref) or MemQueue(ref.name)


def _to_waiting(job: MemJob) -> None:
    job.state = "prioritized" if job.priority else "waiting"
    job.finished_on = job.processed_on = None
    job.failed_reason, job.stacktrace, job.returnvalue = "", [], None


class MemCommands(_Facet):
    def retry(self, queue: QueueRef, *, job_id: str, reset_counters: bool) -> ActionResult:
        with translated(self.connection), self.store.lock:
            job = self._queue(queue).jobs.get(job_id)
            if job is None:
                return retry_outcome(job_id, -1, state="failed")
            if job.state not in FINISHED:
                return ActionResult(job_id, actions.WRONG_STATE, f"Job {job_id} is neither failed nor completed.")
            state = job.state
            if reset_counters:
                job.attempts_made = job.attempts_started = job.stalled = 0
            _to_waiting(job)
            return retry_outcome(job_id, 1, state=state)

    def discard(self, queue: QueueRef, *, job_id: str) -> ActionResult:
        with translated(self.connection), self.store.lock:
            q = self._queue(queue)
            job = q.jobs.get(job_id)
            if job is None:
                return ActionResult(job_id, actions.MISSING, gone(job_id))
            if job.locked:
                return remove_outcome(job_id, 0)
            del q.jobs[job_id]
            return remove_outcome(job_id, 1)

    def promote(self, queue: QueueRef, *, job_id: str) -> ActionResult:
        with translated(self.connection), self.store.lock:
            job = self._queue(queue).jobs.get(job_id)
            if job is None:
                return ActionResult(job_id, actions.MISSING, gone(job_id))
            if job.state != "delayed":
                return promote_outcome(job_id, -3)
            job.opts.pop("delay", None)
            job.state = "waiting"
            return promote_outcome(job_id, 0)

    def redrive(
        self, dlq: QueueRef, *, job_id: str, source: QueueRef, payload_field: str | None = None
    ) -> ActionResult:
        with translated(self.connection), self.store.lock:
            q, target = self._queue(dlq), self.store.queue(source)
            job = q.jobs.pop(job_id, None)
            if job is None or target is None:
                return ActionResult(job_id, actions.MISSING, gone(job_id))
            data, parsed = job.data, loads_or(job.data, None)
            if payload_field and isinstance(parsed, dict) and payload_field in parsed:
                data = json.dumps(parsed[payload_field])
            copy = target.put(MemJob(id=target.new_id(), name=job.name, state="waiting", data=data))
            return ActionResult(
                job_id,
                actions.DONE,
                f"Job {job_id} redriven to {source.name} as {copy.id}.",
                moved_to=(source, copy.id),
            )

    def pause(self, queue: QueueRef, *, paused: bool) -> None:
        with translated(self.connection), self.store.lock:
            self._queue(queue).paused = paused

    def clean(self, queue: QueueRef, *, state: str, older_than_ms: int, limit: int) -> int:
        with translated(self.connection), self.store.lock:
            q = self._queue(queue)
            cutoff = now_ms() - older_than_ms

            def age(j: MemJob) -> int:
                return (j.finished_on if state in FINISHED else j.processed_on or j.timestamp) or 0

            old = [j for j in q.in_state(state) if age(j) <= cutoff and not j.scheduler_id]
            for j in old[: limit or None]:
                del q.jobs[j.id]
            return len(old[: limit or None])

    def add(self, queue: QueueRef, *, job: NewJob, schema: dict | None) -> AddOutcome:
        check_data(schema, job.data_json)
        with translated(self.connection), self.store.lock:
            q = self.store.queue(queue)
            self.store.check()
            if q is None:
                raise InvalidJob(f"There is no queue '{queue.name}'; Queuewatch never creates a queue.")
            if job.job_id and job.job_id in q.jobs:
                return AddOutcome(job.job_id, DUPLICATED)
            dedup = next(
                (
                    j
                    for j in q.jobs.values()
                    if job.deduplication_id and (j.opts.get("de") or {}).get("id") == job.deduplication_id
                ),
                None,
            )
            if dedup is not None:
                return AddOutcome(dedup.id, DEDUPLICATED)
            state = {"delayed": "delayed", "prioritized": "prioritized"}.get(add_kind(job.opts), "waiting")
            added = q.put(
                MemJob(
                    id=job.job_id or q.new_id(), name=job.name, state=state, data=job.data_json, opts=job.stored_opts()
                )
            )
            return AddOutcome(added.id, CREATED)

    def edit_and_retry(self, queue: QueueRef, *, plan: edit_retry.EditPlan, reset_counters: bool) -> ActionResult:
        if plan.state != "failed" or not plan.changes or plan.refusals:
            outcome = (
                actions.WRONG_STATE
                if plan.state != "failed"
                else edit_retry.UNCHANGED
                if not plan.changes
                else job_schema.INVALID_DATA
            )
            return ActionResult(plan.job_id, outcome, f"Job {plan.job_id} was left as it is ({outcome}).")
        with translated(self.connection), self.store.lock:
            job = self._queue(queue).jobs.get(plan.job_id)
            if job is None:
                return ActionResult(plan.job_id, actions.MISSING, gone(plan.job_id))
            if job.data != plan.before_raw:
                return ActionResult(plan.job_id, edit_retry.CHANGED, f"Job {plan.job_id}'s data changed.")
            job.data = plan.after_raw
        result = self.retry(queue, job_id=plan.job_id, reset_counters=reset_counters)
        return ActionResult(
            plan.job_id, result.outcome, f"Job {plan.job_id}'s data was edited and the job moved back to waiting."
        )

    def settings(self, queue: QueueRef) -> QueueSettings:
        with translated(self.connection), self.store.lock:
            q = self._queue(queue)
            limited = max(0, q.limited_until_ms - now_ms())
            return QueueSettings(
                concurrency=q.concurrency,
                rate_max=q.rate_max,
                rate_duration_ms=q.rate_duration_ms,
                limited_for_ms=limited,
                paused=q.paused,
                counts={**q.counts(), "paused": 0, "schedulers": len(q.schedulers)},
            )

    def set_concurrency(self, queue: QueueRef, *, concurrency: int | None) -> None:
        with translated(self.connection), self.store.lock:
            self._queue(queue).concurrency = concurrency

    def set_rate_limit(self, queue: QueueRef, *, max_jobs: int | None, duration_ms: int | None) -> None:
        with translated(self.connection), self.store.lock:
            q = self._queue(queue)
            q.rate_max, q.rate_duration_ms = max_jobs, duration_ms

    def rate_limit_for(self, queue: QueueRef, *, ms: int) -> None:
        with translated(self.connection), self.store.lock:
            self._queue(queue).limited_until_ms = now_ms() + ms

    def remove_rate_limit_key(self, queue: QueueRef) -> bool:
        with translated(self.connection), self.store.lock:
            q = self._queue(queue)
            was = q.limited_until_ms > now_ms()
            q.limited_until_ms = 0
            return was

    def drain(self, queue: QueueRef, *, delayed: bool) -> int:
        with translated(self.connection), self.store.lock:
            q = self._queue(queue)
            states = ("waiting", "prioritized", "delayed") if delayed else ("waiting", "prioritized")
            gone_ids = [i for i, j in q.jobs.items() if j.state in states and not j.scheduler_id]
            for i in gone_ids:
                del q.jobs[i]
            return len(gone_ids)

    def obliterate(self, queue: QueueRef) -> None:
        with translated(self.connection), self.store.lock:
            q = self._queue(queue)
            if not q.paused:
                raise SettingRefused(f"Queue {queue.name} is not paused: pause it first.")
            if q.counts()["active"]:
                raise SettingRefused(f"Queue {queue.name} has active jobs.")
            self.store.queues.pop((queue.prefix, queue.name), None)

    # The store keeps no flows: no job has a parent or children.
    def remove_child_dependency(self, queue: QueueRef, *, job_id: str) -> ActionResult:
        with translated(self.connection), self.store.lock:
            if self._queue(queue).jobs.get(job_id) is None:
                return ActionResult(job_id, actions.MISSING, gone(job_id))
            return flow_actions.no_parent(job_id)

    def remove_unprocessed_children(self, queue: QueueRef, *, job_id: str) -> ActionResult:
        with translated(self.connection), self.store.lock:
            if self._queue(queue).jobs.get(job_id) is None:
                return ActionResult(job_id, actions.MISSING, gone(job_id))
            return flow_actions.no_unprocessed_children(job_id)


def _next_run(spec: SchedulerSpec, at: int) -> int:
    if spec.pattern:
        return bullmq_next_millis(pattern=spec.pattern, tz=spec.tz or "UTC", now_ms=at) or at
    return at + (spec.every or 0)


class MemSchedulers(_Facet):
    def list(self, queue: QueueRef) -> list[Scheduler]:
        with translated(self.connection), self.store.lock:
            return [
                Scheduler(
                    id=s.spec.scheduler_id,
                    name=s.spec.name,
                    pattern=s.spec.pattern,
                    every=s.spec.every,
                    tz=s.spec.tz,
                    next_run=s.next_run,
                    iterations=s.iterations,
                    limit=s.spec.limit,
                    start_date=s.spec.start_date,
                    end_date=s.spec.end_date,
                )
                for s in sorted(self._queue(queue).schedulers.values(), key=lambda s: s.next_run)
            ]

    def page(self, queue: QueueRef, *, start: int, count: int) -> tuple[builtins.list[Scheduler], int]:
        every = self.list(queue)
        return every[start : start + count], len(every)

    def spec(self, queue: QueueRef, *, scheduler_id: str) -> SchedulerSpec | None:
        with translated(self.connection), self.store.lock:
            found = self._queue(queue).schedulers.get(scheduler_id)
            return found.spec if found else None

    def edit(self, queue: QueueRef, *, spec: SchedulerSpec) -> SchedulerResult:
        """An upsert, as ``upsertJobScheduler``: the definition replaced, its next iteration
        (a delayed job ``repeat:<id>:<due>``) replaced by one at the new next run."""
        with translated(self.connection), self.store.lock:
            q, at = self._queue(queue), now_ms()
            self._drop_iteration(q, spec.scheduler_id)
            due = _next_run(spec, at)
            q.schedulers[spec.scheduler_id] = MemScheduler(spec=spec, next_run=due, iterations=1)
            job = q.put(
                MemJob(
                    id=f"repeat:{spec.scheduler_id}:{due}",
                    name=spec.name,
                    state="delayed",
                    data=spec.data_json,
                    opts={**spec.opts, "delay": due - at},
                    timestamp=at,
                    scheduler_id=spec.scheduler_id,
                )
            )
            return SchedulerResult(
                "done", f"Scheduler {spec.scheduler_id} updated; its next job is {job.id}.", job.id, due - at
            )

    def create(self, queue: QueueRef, *, spec: SchedulerSpec) -> SchedulerResult:
        if self.spec(queue, scheduler_id=spec.scheduler_id) is not None:
            return SchedulerResult("not_editable", f"There is already a job scheduler {spec.scheduler_id}.")
        return self.edit(queue, spec=spec)

    def detail(self, queue: QueueRef, *, scheduler_id: str) -> SchedulerDetail | None:
        found = next((s for s in self.list(queue) if s.id == scheduler_id), None)
        if found is None:
            return None
        due = found.next_run
        pending = Iteration(f"repeat:{found.id}:{due}", due, "delayed") if due else None
        return SchedulerDetail(found, self.spec(queue, scheduler_id=scheduler_id), pending, None)

    def workers_zone(self, queue: QueueRef, *, scheduler_id: str = "") -> PatternZone:
        return PatternZone("UTC", "assumed")

    def remove(self, queue: QueueRef, *, scheduler_id: str) -> SchedulerResult:
        with translated(self.connection), self.store.lock:
            q = self._queue(queue)
            if q.schedulers.pop(scheduler_id, None) is None:
                return SchedulerResult("missing", f"There is no job scheduler {scheduler_id}; nothing was removed.")
            self._drop_iteration(q, scheduler_id)
            return SchedulerResult("done", f"Scheduler {scheduler_id} removed, with its next delayed job.")

    @staticmethod
    def _drop_iteration(q: MemQueue, scheduler_id: str) -> None:
        for job_id in [i for i, j in q.jobs.items() if j.scheduler_id == scheduler_id and j.state == "delayed"]:
            del q.jobs[job_id]

    def migration_plan(self, queue: QueueRef, *, member: str, scheduler_id: str) -> MigrationPlan:
        raise SchedulerError(f"{member} is not a legacy repeatable entry of this queue (this store has none).")

    def migrate(self, queue: QueueRef, *, plan: MigrationPlan) -> SchedulerResult:
        return SchedulerResult("not_legacy", f"{plan.member} is not a legacy entry; nothing was changed.")


class MemBulk(_Facet):
    """Runs a plan over the jobs it selects, one job at a time through the commands facet."""

    def __init__(self, *, commands: MemCommands, store: MemStore, connection: str):
        super().__init__(store=store, connection=connection)
        self.commands = commands

    def run(
        self,
        *,
        plan: BulkPlan,
        store: ProgressStore,
        should_cancel: Callable[[], bool],
        on_progress: Callable[[Progress], None],
        count_limit: int | None,
    ) -> Progress:
        with translated(self.connection), self.store.lock:
            q = self._queue(plan.queue)
            if plan.job_ids is not None:
                ids = list(plan.job_ids)
            else:
                assert plan.filt is not None  # a plan has ids or a filter (BulkPlan checks it)
                ids = [j.id for j in selected(q, plan.filt, plan.before_ms)]
        progress = store.load() or Progress(total=len(ids))
        for job_id in ids[progress.position :]:
            if should_cancel():
                progress.state = "cancelled"
                break
            result = self._act(plan, job_id)
            if result.ok:
                progress.moved += 1
            else:
                progress.skipped += 1
                progress.skipped_by[result.outcome] = progress.skipped_by.get(result.outcome, 0) + 1
            progress.position += 1
            progress.examined += 1
            store.save(progress)
            on_progress(progress)
        else:
            progress.state = DONE_STATE
        store.save(progress)
        on_progress(progress)
        return progress

    def _act(self, plan: BulkPlan, job_id: str) -> ActionResult:
        c, q = self.commands, plan.queue
        if plan.action == "retry":
            return c.retry(q, job_id=job_id, reset_counters=plan.reset_counters)
        if plan.action == "discard":
            return c.discard(q, job_id=job_id)
        if plan.action == "promote":
            return c.promote(q, job_id=job_id)
        if plan.action == "redrive":
            return c.redrive(q, job_id=job_id, source=QueueRef(q.connection, q.prefix, plan.source or ""))
        from tests.support.memory_jobs import MemJobs

        edit = MemJobs(store=self.store, connection=self.connection).edit_plan(
            q, job_id=job_id, patch=plan.patch, schema=plan.schema
        )
        return (
            c.edit_and_retry(q, plan=edit, reset_counters=plan.reset_counters)
            if edit
            else ActionResult(job_id, actions.MISSING, gone(job_id))
        )


class MemServer(_Facet):
    def health_checks(
        self,
        queues: list[QueueRef],
        *,
        state: dict | None,
        now: int,
        thresholds: Thresholds,
        is_dead_letter: Callable[[str], bool],
        snapshots: Mapping[QueueRef, QueueSnapshot] | None,
        workers: Mapping[QueueRef, list[Worker]] | None,
        workers_at: int | None,
    ) -> list[CheckResult]:
        # The kind's own reachability check (declared with the kind, memory_backend.py), in its own words.
        if self.store.offline:
            return [CheckResult(REACHABLE, FAIL, self.connection, _("The in-memory store is offline."))]
        results = [CheckResult(REACHABLE, PASS, self.connection, _("The in-memory store answers."))]
        with self.store.lock:
            for ref in queues:
                q = self._queue(ref)
                results.append(
                    CheckResult(
                        "queue.paused",
                        FAIL if q.paused else PASS,
                        self.connection,
                        f"Queue {ref.name} is {'paused' if q.paused else 'running'}.",
                        prefix=ref.prefix,
                        queue=ref.name,
                    )
                )
        return sorted(results, key=lambda r: r.status != FAIL)
