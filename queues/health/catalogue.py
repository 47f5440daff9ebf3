"""The catalogue of health checks: one ``Check`` per condition, keyed by a stable ``kind`` id.

Kept apart from the code that runs the checks so the words a user reads (the failure a
condition causes and its fix) live in one place. The alert rule kinds reuse these kinds, and
/metrics labels results with them, so a ``kind`` id and its ``severity`` must stay stable.

Two parts: the checks every source kind shares (per queue, retry advice, and
``connection.reachable``), listed here; and each source kind's own connection-level checks,
which the kind's module declares with ``register_checks`` (Redis: ``redis_catalogue.py``
here; the ``redis.*`` ids predate the other kinds and stay as they are).

Reachability: every connection gets one result saying whether it answers
(``reachability_kind``). A kind may declare its own ``<kind>.reachable`` (Redis has
``redis.reachable``); a kind that declares none reports the shared ``connection.reachable``, so a
new kind can be judged before it declares anything, and never under another kind's name.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..messages import _

CONNECTION_REACHABLE = "connection.reachable"


@dataclass(frozen=True)
class Check:
    kind: str
    scope: str  # "connection", "queue" or "advice" (retry-policy advice, queues/retry_advice.py)
    title: str
    severity: str  # the severity of a failure unless the result says otherwise
    explanation: str  # the failure this condition causes
    fix: str
    source: str = ""  # the source kind that reports it ("redis"); "" for a check every kind shares
    # What the alert rule kinds keep of a connection-level result (``queues.alert_kinds.base.
    # ConnectionFacts``): pairs of (ConnectionFacts field, key of the result's ``details``).
    alert_facts: tuple[tuple[str, str], ...] = ()


def _checks(*items: Check) -> dict[str, Check]:
    return {c.kind: c for c in items}


CHECKS: dict[str, Check] = _checks(
    Check(
        CONNECTION_REACHABLE,
        "connection",
        _("Connection reachable"),
        "critical",
        _(
            "Queuewatch could not read this connection. If workers cannot either, no job is added, "
            "processed or finished."
        ),
        _("Check that the store is up and that the connection's URL and credentials are right."),
    ),
    Check(
        "queue.finished_retention",
        "queue",
        _("Finished-job retention"),
        "warning",
        _(
            "Without removeOnComplete / removeOnFail, every finished job stays in Redis forever: "
            "the completed and failed sets grow without bound until memory runs out, and a re-add "
            "with the same custom jobId is silently ignored for as long as the old job is kept."
        ),
        _(
            "Add `removeOnComplete: {age: 3600, count: 1000}` and `removeOnFail: {age: 7 * 24 * "
            "3600}` (or counts) to the job options (Queue `defaultJobOptions`). Old jobs can be "
            "cleaned once with `queue.clean(grace, limit, 'completed')`."
        ),
    ),
    Check(
        "queue.legacy_repeat",
        "queue",
        _("Legacy repeat metadata"),
        "warning",
        _(
            "Legacy repeatable-job metadata blocks the upgrade to BullMQ 6: for the old key shape "
            "(`name:jobId:endDate:tz:pattern`) BullMQ 6 throws in getJobSchedulers() and workers "
            "stop scheduling the next run; v5 hashes without `ic` are silently adopted and should "
            "be migrated too."
        ),
        _(
            "1. While still on BullMQ v5, create an equivalent job scheduler for each entry with "
            "`queue.upsertJobScheduler(id, {pattern | every, tz}, template)`. "
            "2. Remove the legacy entry with `queue.removeRepeatableByKey(key)`. "
            "3. Then upgrade the workers and producers to BullMQ 6."
        ),
    ),
    Check(
        "queue.repeated_stalls",
        "queue",
        _("Repeated stalls"),
        "warning",
        _(
            "A job stalls when its worker stops renewing the job lock (lockDuration, 30 s by "
            "default): a crashed process, or a processor that blocks Node's event loop with CPU-bound "
            "or synchronous work, so the renewal timer cannot fire. BullMQ then moves the job back "
            "to wait and another worker runs it again — the job runs twice, with its side effects "
            'twice — and after maxStalledCount stalls it fails with "job stalled more than '
            'allowable limit".'
        ),
        _(
            "Run CPU-heavy processors sandboxed (give the Worker a processor file path, optionally "
            "with useWorkerThreads) so the main event loop keeps renewing locks. A longer "
            "lockDuration is not the fix: it only delays the detection of real crashes. Make "
            "processors idempotent, since a stalled job runs again."
        ),
    ),
    Check(
        "queue.duplicated_adds",
        "queue",
        _("Adds dropped as duplicates"),
        "warning",
        _(
            "An add with a custom jobId does nothing while a job with that id still exists in any "
            "state — including completed and failed jobs that are kept (removeOnComplete / "
            "removeOnFail). BullMQ returns the existing job id and emits `duplicated`; no new job "
            'runs. Code that uses jobId for "one at a time" silently loses work. (A job scheduler '
            "whose next iteration already exists, and a flow that re-adds a child with its custom id, "
            "emit `duplicated` too: those are counted apart and are not dropped work.)"
        ),
        _(
            'For "at most one pending job per key" use the `deduplication: {id, ttl?}` option: '
            "its window ends when the job finishes (or after ttl), and duplicates are reported as "
            "`deduplicated`. If you keep custom ids, make them unique per intended run, or prune "
            "finished jobs so old ids are freed."
        ),
    ),
    Check(
        "queue.events_trimmed",
        "queue",
        _("Events stream trimmed before read"),
        "warning",
        _(
            "Each queue's events stream is capped (`maxLenEvents`, about 10000 entries by default; "
            "QueueEventsProducer trims to 1000). It was trimmed past what the monitor had read: "
            "QueueEvents listeners and Queuewatch missed those events. Queuewatch rebuilt completed "
            "and failed counts from the sets, but stalls, adds and duplicates in the gap are lost."
        ),
        _(
            "Raise the cap with the Queue option `streams: {events: {maxLen: 50000}}`, avoid custom "
            "publishers that trim to 1000, and make sure a monitor is always leading."
        ),
    ),
    Check(
        "queue.no_workers",
        "queue",
        _("Workers connected"),
        "critical",
        _(
            "Jobs are waiting and no worker is connected to this queue, so nothing will process "
            "them: the backlog grows and delayed jobs are never promoted."
        ),
        _(
            "Start (or fix the crash loop of) the workers for this queue, and check they use the "
            "same prefix and Redis database as the producers."
        ),
    ),
    Check(
        "queue.paused",
        "queue",
        _("Paused queue"),
        "warning",
        _("The queue is paused: workers take no new jobs from it until it is resumed; waiting jobs pile up."),
        _("Resume it with `queue.resume()` if the pause was not intended."),
    ),
    Check(
        "queue.rate_limited",
        "queue",
        _("Global rate limit"),
        "info",
        _(
            "The queue's global rate limit (`setGlobalRateLimit(max, duration)`) or a manual "
            "`queue.rateLimit(ms)` is in force: workers take no job until the window ends, so jobs "
            "wait even though workers are idle."
        ),
        _(
            "If the backlog keeps growing, raise the limit (`queue.setGlobalRateLimit(max, "
            "duration)`) or remove it (`queue.removeGlobalRateLimit()`); end a manual limit with "
            "`queue.removeRateLimitKey()`."
        ),
    ),
    # Retry-policy advice (queues/retry_advice.py): judged from a sample of a queue's jobs on the
    # queue page, not by the health runner; scope "advice" keeps them out of the health page.
    Check(
        "retry.no_attempts",
        "advice",
        _("Jobs without retries"),
        "warning",
        _(
            "Without `attempts`, a job's first failure is final: a network blip or a deploy fails "
            "it for good, and someone has to retry it by hand."
        ),
        _(
            "Add `attempts: 3` with `backoff: {type: 'exponential', delay: 1000, jitter: 0.5}` to the "
            "job options (or the Queue's `defaultJobOptions`); make permanent errors throw "
            "`UnrecoverableError` so they are not retried."
        ),
    ),
    Check(
        "retry.fixed_backoff_herd",
        "advice",
        _("Fixed backoff without jitter"),
        "warning",
        _(
            "With a fixed backoff and no jitter, jobs that failed together (a dependency went down) "
            "are all retried at the same moment by every worker: the retries hit the recovering "
            "dependency in one wave and fail again together (a thundering herd)."
        ),
        _(
            "Use `backoff: {type: 'exponential', delay: 1000, jitter: 0.5}` (or add `jitter: 0.5` to "
            "the fixed backoff) so retries spread out."
        ),
    ),
    Check(
        "retry.remove_on_fail",
        "advice",
        _("Failed jobs kept forever"),
        "warning",
        _(
            "Without `removeOnFail`, every failed job stays in Redis: a failed set that keeps growing "
            "fills memory, and under `noeviction` Redis then refuses every write — adds and job moves "
            "of every queue on that server fail."
        ),
        _(
            "Set `removeOnFail: {age: 7 * 24 * 3600, count: 10000}` (keep a week, at most ten "
            "thousand) in the job options or `defaultJobOptions`; redrive or export what you need first."
        ),
    ),
    Check(
        "retry.jobid_not_deduplication",
        "advice",
        _("jobId used to deduplicate"),
        "warning",
        _(
            "A custom `jobId` only refuses an add while a job with that id exists, finished or not: "
            "a completed or failed job kept in Redis silently blocks every new job with the same id, "
            "forever. That is rarely what was meant."
        ),
        _(
            "To drop duplicates while one is pending, use `deduplication: {id, ttl}` instead of "
            "`jobId`; if the id must stay, remove finished jobs (`removeOnComplete: true`, "
            "`removeOnFail: true`) so the id is free again."
        ),
    ),
    Check(
        "retry.attempts_vs_observed",
        "advice",
        _("More attempts than jobs need"),
        "info",
        _(
            "Jobs are configured with far more attempts than they ever need to succeed: a job that "
            "fails for a permanent reason is retried many times, holding a worker and delaying the "
            "failure alert."
        ),
        _(
            "Lower `attempts` to about twice what succeeding jobs need, and throw `UnrecoverableError` "
            "for errors that retrying cannot fix."
        ),
    ),
)

QUEUE_KINDS = tuple(k for k, c in CHECKS.items() if c.scope == "queue")
ADVICE_KINDS = tuple(k for k, c in CHECKS.items() if c.scope == "advice")
STATE_KINDS = ("queue.repeated_stalls", "queue.duplicated_adds", "queue.events_trimmed")


def register_checks(*checks: Check) -> tuple[Check, ...]:
    """Add a source kind's connection-level checks to the catalogue (called once, by the module
    that declares them); returns them. A kind id belongs to one definition: registering another
    check under a known id is refused, registering the same one again changes nothing."""
    for check in checks:
        if check.scope != "connection" or not check.source:
            raise ValueError(f"{check.kind}: a source kind registers connection checks naming their source")
        known = CHECKS.get(check.kind)
        if known is not None and known != check:
            raise ValueError(f"health check kind {check.kind!r} is already registered")
    CHECKS.update(_checks(*checks))
    return checks


def connection_kinds(source: str) -> tuple[str, ...]:
    """The connection-level check kinds a connection of source kind ``source`` reports, its
    reachability check first."""
    own = tuple(k for k, c in CHECKS.items() if c.scope == "connection" and c.source == source)
    reach = reachability_kind(source)
    return (reach, *(k for k in own if k != reach))


def reachability_kind(source: str) -> str:
    """The check that says whether a connection of source kind ``source`` answers: the kind's
    own ``<kind>.reachable`` when it declared one, else the shared ``connection.reachable``."""
    own = f"{source}.reachable"
    check = CHECKS.get(own)
    return own if check is not None and check.source == source else CONNECTION_REACHABLE
