"""What a bulk edit-and-retry preview shows of its sample: each job's diff and the bytes the
patch adds to the jobs' stored data, with the task's estimated total against its bounds."""

from __future__ import annotations

from dataclasses import dataclass

from dashboard.connections.registry import get_redactor
from dashboard.core.i18n import translate
from queues import edit_growth, edit_retry
from queues.keys import QueueRef
from queues.sources.facets import JobsFacet


@dataclass
class Growth:
    """What an edit adds to the jobs' stored data in Redis: bytes per sample job, the largest of
    them, the estimated total for every job the task would edit (the largest times their number:
    the sample may not hold the job that grows most, and the task checks each job as it goes),
    the bounds, and why the task is refused, if it is."""

    per_job: dict  # job id -> bytes added to its data (negative: it shrinks)
    largest: int
    jobs: int
    total: int
    bounds: edit_growth.GrowthBounds
    refusal: str | None = None

    def as_dict(self) -> dict:
        return {
            "per_job": self.per_job,
            "largest": self.largest,
            "jobs": self.jobs,
            "total": self.total,
            "max_per_job": self.bounds.per_job,
            "max_total": self.bounds.per_task,
            "refusal": self.refusal,
        }


def growth_of(found, per_job: dict, bounds: edit_growth.GrowthBounds) -> Growth:
    jobs = found.count
    if not found.complete and found.examined and found.in_state:  # the matches among all the state's jobs
        jobs = -(-found.count * found.in_state // found.examined)
    largest = max(per_job.values(), default=0)
    total = max(0, largest) * jobs
    refusal = edit_growth.task_refusal(total, bounds)
    return Growth(per_job, largest, jobs, total, bounds, translate(refusal) if refusal else None)


def sample_diffs(
    jobs: JobsFacet,
    queue: QueueRef,
    ids: list[str],
    patch: dict,
    schema: dict | None = None,
    bounds: edit_growth.GrowthBounds | None = None,
) -> tuple[list[tuple[str, list[str]]], dict]:
    """What the patch does to each job's stored data, redacted (a job whose data is not JSON
    says so instead; one whose patched data the queue's schema refuses, or grows more than a job
    may, says why after its diff, as "! …" lines: the task will leave it failed); and the bytes
    it adds to each job's data."""
    redact, out, growth = get_redactor().value, [], {}
    for job_id in ids:
        try:
            plan = jobs.edit_plan(queue, job_id=job_id, patch=patch, schema=schema)
        except edit_retry.PatchError as exc:
            out.append((job_id, [str(exc)]))
            continue
        if plan is not None:
            growth[job_id] = plan.growth
            why = [*plan.refusals]
            too_big = edit_growth.job_refusal(plan.growth, bounds, job_id=job_id) if bounds else None
            if too_big is not None:
                why.append(too_big)
            out.append((job_id, plan.diff(redact)[:200] + [f"! {translate(r)}" for r in why]))
    return out, growth
