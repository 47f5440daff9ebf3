"""Per-queue checks: pure functions of a queue's facts (snapshot, limiter, schedulers) and of
its entry in the monitor's state document."""

from __future__ import annotations

from ..keys import QueueRef
from ..messages import Joined, _
from ..snapshot import QueueSnapshot, ready_jobs
from .facts import QueueFacts, WorkerFacts
from .results import DEFAULT_THRESHOLDS, FAIL, PASS, UNKNOWN, CheckResult, Thresholds
from .wording import count_jobs, format_age

MAX_SAFE_INTEGER = 2**53 - 1  # Queue.rateLimit(ms) sets the limiter to this


def _qr(kind: str, status: str, q: QueueRef, summary: str, **kw) -> CheckResult:
    return CheckResult(kind, status, q.connection, summary, prefix=q.prefix, queue=q.name, **kw)


def check_finished_retention(facts: QueueFacts, now: int, th: Thresholds = DEFAULT_THRESHOLDS) -> CheckResult:
    q, counts = facts.snapshot.queue, facts.snapshot.counts
    found = []
    details = {}
    for state, oldest in (("completed", facts.oldest_completed_ms), ("failed", facts.oldest_failed_ms)):
        age = None if oldest is None else max(0, now - oldest)
        details[state] = {"count": counts[state], "oldest_age_ms": age}
        if counts[state] >= th.finished_count and age is not None and age >= th.finished_age_ms:
            found.append(
                _("{n} completed jobs, the oldest finished {age} ago", n=counts[state], age=format_age(age))
                if state == "completed"
                else _("{n} failed jobs, the oldest finished {age} ago", n=counts[state], age=format_age(age))
            )
    details["thresholds"] = {"count": th.finished_count, "age_ms": th.finished_age_ms}
    if found:
        return _qr(
            "queue.finished_retention",
            FAIL,
            q,
            _("Finished jobs look kept forever: {found}.", found=Joined(found, "; ")),
            details=details,
        )
    return _qr(
        "queue.finished_retention",
        PASS,
        q,
        _(
            "{completed} completed and {failed} failed jobs kept.",
            completed=counts["completed"],
            failed=counts["failed"],
        ),
        details=details,
    )


def check_legacy_repeat(facts: QueueFacts) -> CheckResult:
    q = facts.snapshot.queue
    legacy = [s for s in facts.schedulers if s.legacy]
    if not legacy:
        n = len(facts.schedulers)
        return _qr(
            "queue.legacy_repeat",
            PASS,
            q,
            _("1 job scheduler, none legacy.") if n == 1 else _("{n} job schedulers, none legacy.", n=n),
        )
    shapes = sorted({s.legacy for s in legacy})
    entries = [
        {"id": s.id, "layout": s.legacy, "name": s.name, "pattern": s.pattern or None, "every": s.every} for s in legacy
    ]
    severity = "critical" if "key-shape" in shapes else "warning"
    listed = ", ".join(f"`{s.id}` ({s.legacy})" for s in legacy[:5]) + (" …" if len(legacy) > 5 else "")
    found = (
        _("1 legacy repeatable entry: {listed}.", listed=listed)
        if len(legacy) == 1
        else _("{n} legacy repeatable entries: {listed}.", n=len(legacy), listed=listed)
    )
    return _qr("queue.legacy_repeat", FAIL, q, found, severity=severity, details={"entries": entries})


def _state_missing(kind: str, q: QueueRef, state_note: str) -> CheckResult:
    """The result of a check that needs the monitor's state for a queue not in it."""
    reason = state_note or _("This queue is not in the monitor's state yet.")
    return _qr(
        kind,
        UNKNOWN,
        q,
        _("{reason} This check needs the monitor's event counts, so the result is unknown.", reason=reason),
        details={"state": None},
    )


def _events_total(entry: dict, name: str) -> int:
    return int((entry.get("events_total") or {}).get(name) or 0)


def stalls_last_15m(entry: dict) -> int:
    """Stalls in the last 15 minutes, from the 15-minute stall rate (per minute over a sliding
    15-minute window; see ``QueueSeries.per_minute``)."""
    rate = float(((entry.get("rates_per_min") or {}).get("stalled") or {}).get("15") or 0)
    return int(round(rate * 15))


def check_repeated_stalls(
    q: QueueRef, state_entry: dict | None, th: Thresholds = DEFAULT_THRESHOLDS, state_note: str = ""
) -> CheckResult:
    if state_entry is None:
        return _state_missing("queue.repeated_stalls", q, state_note)
    recent = stalls_last_15m(state_entry)
    stall_failed = int(state_entry.get("stall_failed_15m") or 0)
    total = _events_total(state_entry, "stalled")
    details = {
        "stalls_15m": recent,
        "stall_failed_15m": stall_failed,
        "stalled_total": total,
        "stalled_now": int(state_entry.get("stalled_now") or 0),
    }
    if recent >= th.stalls_15m or stall_failed:
        found = (
            _(
                "{recent} stalls in the last 15 minutes, and {failed} failed for stalling more than allowed "
                "({total} since the monitor started leading): these jobs ran more than once.",
                recent=recent,
                failed=stall_failed,
                total=total,
            )
            if stall_failed
            else _(
                "{recent} stalls in the last 15 minutes ({total} since the monitor started leading): "
                "these jobs ran more than once.",
                recent=recent,
                total=total,
            )
        )
        return _qr("queue.repeated_stalls", FAIL, q, found, details=details)
    return _qr(
        "queue.repeated_stalls",
        PASS,
        q,
        _(
            "{recent} stalls in the last 15 minutes ({total} since the monitor started leading).",
            recent=recent,
            total=total,
        ),
        details=details,
    )


def check_duplicated_adds(q: QueueRef, state_entry: dict | None, state_note: str = "") -> CheckResult:
    """Only the ``duplicated`` events of custom jobIds are adds that were dropped: a scheduler's
    next iteration already there and a flow child attached to its parent are BullMQ working as
    meant (``queues.duplicates``)."""
    if state_entry is None:
        return _state_missing("queue.duplicated_adds", q, state_note)
    dup, added = _events_total(state_entry, "duplicated"), _events_total(state_entry, "added")
    causes = state_entry.get("duplicated_by_cause") or {}
    dropped, scheduler, flow = (int(causes.get(k) or 0) for k in ("custom_id", "scheduler", "flow"))
    details = {
        "duplicated_total": dup,
        "custom_id": dropped,
        "scheduler": scheduler,
        "flow": flow,
        "added_total": added,
    }
    others = []
    if scheduler or flow:
        others.append(
            _(
                "Not counted as dropped: {scheduler} scheduler iterations that already existed and {flow} "
                "flow children attached to their parent instead of being added again.",
                scheduler=scheduler,
                flow=flow,
            )
        )
    if dropped:
        found = _(
            "{dup} adds were dropped because a job with the same custom jobId still existed "
            "({added} jobs were added) since the monitor started leading.",
            dup=dropped,
            added=added,
        )
        return _qr("queue.duplicated_adds", FAIL, q, Joined([found, *others], " "), details=details)
    fine = _("No add was dropped as a duplicate since the monitor started leading.")
    return _qr("queue.duplicated_adds", PASS, q, Joined([fine, *others], " "), details=details)


def check_events_trimmed(q: QueueRef, state_entry: dict | None, state_note: str = "") -> CheckResult:
    if state_entry is None:
        return _state_missing("queue.events_trimmed", q, state_note)
    gaps = int(state_entry.get("stream_gaps") or 0)
    if gaps:
        return _qr(
            "queue.events_trimmed",
            FAIL,
            q,
            _(
                "The events stream was trimmed past the monitor's position {gaps} time(s) since it started leading.",
                gaps=gaps,
            ),
            details={"stream_gaps": gaps},
        )
    return _qr(
        "queue.events_trimmed",
        PASS,
        q,
        _("The monitor has read every event before it was trimmed."),
        details={"stream_gaps": 0},
    )


def check_workers(
    snapshot: QueueSnapshot,
    workers: WorkerFacts,
    state_entry: dict | None,
    th: Thresholds = DEFAULT_THRESHOLDS,
    *,
    is_dead_letter: bool = False,
) -> CheckResult:
    q, counts = snapshot.queue, snapshot.counts
    backlog = ready_jobs(counts)
    details = {"backlog": backlog, "source": workers.source if workers.by_queue is not None else "activity"}
    if workers.taken_at is not None:
        details["workers_taken_at"] = workers.taken_at
    if is_dead_letter:
        return _qr("queue.no_workers", PASS, q, _("Dead-letter queue: no workers expected."), details=details)
    if workers.by_queue is not None:
        # The connection names BullMQ gave them (an older monitor's document has only addresses).
        names = [w.client or w.addr for w in workers.by_queue.get(q, [])]
        details.update(workers=len(names), names=names[:5])
        if names:
            return _qr("queue.no_workers", PASS, q, _("{n} worker connection(s).", n=len(names)), details=details)
        if backlog:
            return _qr(
                "queue.no_workers",
                FAIL,
                q,
                _("{jobs} waiting and no worker is connected.", jobs=count_jobs(backlog)),
                details=details,
            )
        return _qr(
            "queue.no_workers", PASS, q, _("No worker is connected, but no job is waiting either."), details=details
        )

    # CLIENT LIST refused (some managed services): judge from activity.
    def judged(finding):
        return _(
            "CLIENT LIST is not allowed ({error}), so this is judged from activity: {finding}",
            error=workers.error or _("refused"),
            finding=finding,
        )

    active = int(counts.get("active", 0))
    if active:
        return _qr("queue.no_workers", PASS, q, judged(_("{jobs} active.", jobs=count_jobs(active))), details=details)
    if not backlog:
        return _qr("queue.no_workers", PASS, q, judged(_("no job is waiting.")), details=details)
    if state_entry is None:
        return _qr(
            "queue.no_workers",
            UNKNOWN,
            q,
            judged(
                _(
                    "{jobs} waiting, and without the monitor's rates it cannot tell whether "
                    "workers are processing them.",
                    jobs=count_jobs(backlog),
                )
            ),
            details=details,
        )
    rates = state_entry.get("rates_per_min") or {}
    recent = sum(float((rates.get(k) or {}).get("5") or 0) for k in ("completed", "failed"))
    age = snapshot.oldest_waiting_age_ms
    details.update(
        finished_per_min_5m=recent, oldest_waiting_age_ms=age, oldest_waiting_is_bound=snapshot.oldest_waiting_bound
    )
    if recent == 0 and age is not None and age >= th.idle_ms:
        return _qr(
            "queue.no_workers",
            FAIL,
            q,
            judged(
                _(
                    "{jobs} waiting, the oldest for at least {age}, and none finished in 5 minutes.",
                    jobs=count_jobs(backlog),
                    age=format_age(age),
                )
                if snapshot.oldest_waiting_bound
                else _(
                    "{jobs} waiting, the oldest for {age}, and none finished in 5 minutes.",
                    jobs=count_jobs(backlog),
                    age=format_age(age),
                )
            ),
            details=details,
        )
    return _qr(
        "queue.no_workers",
        PASS,
        q,
        judged(_("jobs are finishing ({rate}/min over 5 minutes).", rate=f"{recent:.1f}")),
        details=details,
    )


def check_paused(snapshot: QueueSnapshot) -> CheckResult:
    q = snapshot.queue
    backlog = ready_jobs(snapshot.counts)
    details = {"paused": snapshot.paused, "backlog": backlog, "legacy_paused_jobs": snapshot.legacy_paused_jobs}
    if not snapshot.paused:
        return _qr("queue.paused", PASS, q, _("Not paused."), details=details)
    if backlog:
        return _qr(
            "queue.paused",
            FAIL,
            q,
            _("The queue is paused with {jobs} waiting.", jobs=count_jobs(backlog)),
            details=details,
        )
    return _qr(
        "queue.paused", FAIL, q, _("The queue is paused (no job is waiting yet)."), severity="info", details=details
    )


def check_rate_limit(facts: QueueFacts) -> CheckResult:
    q = facts.snapshot.queue
    count, pttl = facts.limiter_count, facts.limiter_pttl_ms
    details = {
        "limiter_count": count,
        "limiter_pttl_ms": pttl,
        "max": facts.rate_max,
        "duration_ms": facts.rate_duration_ms,
    }
    backlog = ready_jobs(facts.snapshot.counts)
    severity = "warning" if backlog else "info"
    if count is not None and pttl is not None and pttl > 0:
        if count >= MAX_SAFE_INTEGER:
            return _qr(
                "queue.rate_limited",
                FAIL,
                q,
                _(
                    "The queue was rate-limited by hand (queue.rateLimit) for another {age}; {jobs} waiting.",
                    age=format_age(pttl),
                    jobs=count_jobs(backlog),
                ),
                severity=severity,
                details=details,
            )
        if facts.rate_max is not None and count >= facts.rate_max:
            return _qr(
                "queue.rate_limited",
                FAIL,
                q,
                _(
                    "The global rate limit ({max} jobs per {duration}) is hit: no job starts for another {age}; "
                    "{jobs} waiting.",
                    max=facts.rate_max,
                    duration=format_age(facts.rate_duration_ms),
                    age=format_age(pttl),
                    jobs=count_jobs(backlog),
                ),
                severity=severity,
                details=details,
            )
    if facts.rate_max is None:
        return _qr("queue.rate_limited", PASS, q, _("No global rate limit is set."), details=details)
    return _qr(
        "queue.rate_limited",
        PASS,
        q,
        _(
            "Global rate limit {max} per {duration}, not hit ({count} in the current window).",
            max=facts.rate_max,
            duration=format_age(facts.rate_duration_ms),
            count=count or 0,
        ),
        details=details,
    )
