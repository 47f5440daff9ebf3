"""Retry-policy advice per queue, from what the jobs' own ``opts`` say.

Judged from a **sample**, never a scan: the newest ``SAMPLE_PER_STATE`` jobs of the waiting,
completed and failed jobs, their options (BullMQ's names: ``jobId`` when the producer chose the
id, ``de`` for ``deduplication``, ``backoff`` always as ``{type, delay[, jitter]}``) and attempts
made, and how many jobs failed in the last 15 minutes. A Redis node reads it with
``queues.redis.retry_advice.read_sample``.

Each piece of advice is judged by a pure function and comes back as a health ``CheckResult``
(its title, explanation and fix are ``advice``-scoped entries of ``queues.health.CHECKS``; the
summary is the evidence in plain words, ``details["sample_job"]`` one job it holds for), so the
queue page shows it like a health check."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .health import ADVICE_KINDS, FAIL, PASS, UNKNOWN, CheckResult
from .keys import QueueRef
from .messages import _
from .quantities import duration_message
from .text import to_int

SAMPLE_PER_STATE = 50  # newest jobs read per state (wait, completed, failed)
HERD_WORKERS = 4  # fixed backoff without jitter retries in lockstep from this many workers on
ATTEMPTS_FACTOR = 3  # configured attempts at least this many times the p99 attempts-to-success
MIN_SUCCESSES = 20  # completed jobs needed before attempts-to-success is judged


@dataclass(frozen=True)
class SampledJob:
    id: str
    state: str  # wait, completed or failed
    name: str
    opts: dict
    attempts_made: int

    @property
    def attempts(self) -> int:
        """Configured attempts (BullMQ treats 0 or a missing value as 1)."""
        return max(1, to_int(self.opts.get("attempts"), 1) or 1)

    @property
    def backoff(self) -> dict:
        b = self.opts.get("backoff")
        if isinstance(b, (int, float)) and not isinstance(b, bool):
            return {"type": "fixed", "delay": b}  # Node stores a number as {type: fixed}; older data may not
        return b if isinstance(b, dict) else {}


@dataclass
class Sample:
    queue: QueueRef
    jobs: list[SampledJob] = field(default_factory=list)
    failed_recent: int = 0  # jobs that entered the failed set in the last 15 minutes (still there)
    failed_count: int = 0  # jobs in the failed set

    def as_dict(self) -> dict:
        return {
            "jobs": [[j.id, j.state, j.name, j.opts, j.attempts_made] for j in self.jobs],
            "failed_recent": self.failed_recent,
            "failed_count": self.failed_count,
        }

    @classmethod
    def from_dict(cls, queue: QueueRef, d: dict) -> Sample:
        return cls(queue, [SampledJob(*j) for j in d["jobs"]], d["failed_recent"], d["failed_count"])


def _result(kind: str, status: str, sample: Sample, summary: str, sample_job: str = "", details: dict | None = None):
    """One piece of advice in the health checks' shape; ``details["sample_job"]`` is the job the
    evidence holds for (the page links it)."""
    q = sample.queue
    return CheckResult(
        kind,
        status,
        q.connection if q else "",
        summary,
        prefix=q.prefix if q else "",
        queue=q.name if q else "",
        details={**(details or {}), "sample_job": sample_job},
    )


def _no_sample() -> str:
    return _("No job to sample (the wait list and the completed and failed sets are empty).")


def advise_attempts(sample: Sample) -> CheckResult:
    kind, m = "retry.no_attempts", len(sample.jobs)
    bare = [j for j in sample.jobs if j.attempts <= 1]
    if bare:
        found = _("{n} of {m} sampled jobs have no `attempts` (one try only).", n=len(bare), m=m)
        return _result(kind, FAIL, sample, found, bare[0].id, {"without": len(bare), "sampled": m})
    return _result(kind, PASS, sample, _("All {m} sampled jobs retry (attempts ≥ 2).", m=m), details={"sampled": m})


def _fixed_no_jitter(j: SampledJob) -> bool:
    b = j.backoff
    jitter = b.get("jitter")
    jittered = isinstance(jitter, (int, float)) and not isinstance(jitter, bool) and jitter > 0
    return j.attempts > 1 and b.get("type") == "fixed" and not jittered


def advise_backoff(sample: Sample, workers: int | None) -> CheckResult:
    kind, m = "retry.fixed_backoff_herd", len(sample.jobs)
    herd = [j for j in sample.jobs if _fixed_no_jitter(j)]
    n = len(herd)
    if not herd:
        return _result(
            kind, PASS, sample, _("No sampled job retries with a fixed backoff without jitter ({m} sampled).", m=m)
        )
    if workers is None:
        return _result(
            kind,
            UNKNOWN,
            sample,
            _(
                "{n} of {m} sampled jobs use a fixed backoff without jitter; the number "
                "of workers is unknown (the monitor reads it).",
                n=n,
                m=m,
            ),
        )
    if workers < HERD_WORKERS:
        return _result(
            kind,
            PASS,
            sample,
            _(
                "{n} of {m} sampled jobs use a fixed backoff without jitter, with {w} "
                "worker(s): fewer than {limit}, no herd to speak of.",
                n=n,
                m=m,
                w=workers,
                limit=HERD_WORKERS,
            ),
        )
    delay = to_int(herd[0].backoff.get("delay"), 0)
    found = _(
        "{n} of {m} sampled jobs retry after a fixed {delay} without jitter, with {w} workers.",
        n=n,
        m=m,
        delay=duration_message(delay / 1000),
        w=workers,
    )
    return _result(kind, FAIL, sample, found, herd[0].id, {"fixed": n, "sampled": m, "workers": workers})


def _keeps_failed(j: SampledJob) -> bool:
    return j.opts.get("removeOnFail") in (None, False)


def advise_remove_on_fail(sample: Sample) -> CheckResult:
    kind, m, failed = "retry.remove_on_fail", len(sample.jobs), sample.failed_count
    keeping = [j for j in sample.jobs if _keeps_failed(j)]
    n, recent = len(keeping), sample.failed_recent
    if not keeping:
        return _result(kind, PASS, sample, _("All {m} sampled jobs set `removeOnFail`.", m=m))
    if not recent:
        return _result(
            kind,
            PASS,
            sample,
            _(
                "{n} of {m} sampled jobs set no `removeOnFail`, but the failed set did not "
                "grow in the last 15 minutes ({failed} jobs in it).",
                n=n,
                m=m,
                failed=failed,
            ),
        )
    example = next((j for j in keeping if j.state == "failed"), keeping[0])
    found = _(
        "{n} of {m} sampled jobs set no `removeOnFail`, and the failed set grew by {recent} in the last 15 "
        "minutes ({failed} jobs in it).",
        n=n,
        m=m,
        recent=recent,
        failed=failed,
    )
    return _result(
        kind, FAIL, sample, found, example.id, {"without": n, "sampled": m, "failed_recent": recent, "failed": failed}
    )


def _blocks_new_adds(j: SampledJob) -> bool:
    """A finished job added with its own ``jobId``, without deduplication, that stays in Redis."""
    if j.state not in ("completed", "failed") or "jobId" not in j.opts or j.opts.get("de"):
        return False
    return j.opts.get("removeOnComplete" if j.state == "completed" else "removeOnFail") in (None, False)


def advise_job_id(sample: Sample) -> CheckResult:
    kind = "retry.jobid_not_deduplication"
    finished = [j for j in sample.jobs if j.state in ("completed", "failed")]
    if not finished:
        return _result(kind, UNKNOWN, sample, _("No finished job kept to sample."))
    blocking = [j for j in finished if _blocks_new_adds(j)]
    m = len(finished)
    if not blocking:
        return _result(kind, PASS, sample, _("No sampled finished job blocks new adds with its id ({m} sampled).", m=m))
    found = _(
        "{n} of {m} sampled finished jobs were added with their own `jobId` and are kept: a new job with the "
        "same id is ignored while they exist (e.g. `{id}`).",
        n=len(blocking),
        m=m,
        id=blocking[0].id,
    )
    return _result(kind, FAIL, sample, found, blocking[0].id, {"blocking": len(blocking), "sampled_finished": m})


def nearest_rank(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


def advise_attempts_observed(sample: Sample) -> CheckResult:
    kind = "retry.attempts_vs_observed"
    done = [j for j in sample.jobs if j.state == "completed" and j.attempts > 1]
    n = len(done)
    if n < MIN_SUCCESSES:
        return _result(
            kind,
            UNKNOWN,
            sample,
            _("{n} completed jobs with retries sampled; {min} are needed to judge.", n=n, min=MIN_SUCCESSES),
        )
    p99 = max(1, nearest_rank([j.attempts_made for j in done], 0.99))
    configured = nearest_rank([j.attempts for j in done], 0.5)  # the typical configuration
    if configured < ATTEMPTS_FACTOR * p99:
        return _result(
            kind,
            PASS,
            sample,
            _(
                "`attempts: {configured}` configured; the p99 of attempts to success over "
                "{n} sampled completed jobs is {p99}.",
                configured=configured,
                n=n,
                p99=p99,
            ),
        )
    example = next(j for j in done if j.attempts == configured)
    found = _(
        "`attempts: {configured}` configured, but the p99 of attempts to success over {n} sampled completed "
        "jobs is {p99}.",
        configured=configured,
        n=n,
        p99=p99,
    )
    return _result(
        kind, FAIL, sample, found, example.id, {"configured": configured, "p99_attempts_to_success": p99, "sampled": n}
    )


def advise(sample: Sample, *, workers: int | None) -> list[CheckResult]:
    """Every piece of advice for one queue, failures first (catalogue order within a status)."""
    if not sample.jobs:
        return [_result(kind, UNKNOWN, sample, _no_sample()) for kind in ADVICE_KINDS]
    results = [
        advise_attempts(sample),
        advise_backoff(sample, workers),
        advise_remove_on_fail(sample),
        advise_job_id(sample),
        advise_attempts_observed(sample),
    ]
    rank = {FAIL: 0, UNKNOWN: 1, PASS: 2}
    return sorted(results, key=lambda a: rank[a.status])
