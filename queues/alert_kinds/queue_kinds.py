"""Rule kinds measured on each queue's signals (counts, event totals over windows, stalls)."""

from __future__ import annotations

from .. import health
from ..messages import _
from ..snapshot import ready_jobs, waiting_jobs
from . import summaries as says
from .base import DUE_DELAYED_PARAM, MIN_VOLUME, WINDOW, QueueKind, window_of
from .needs import DUE_DELAYED


class DlqDepth(QueueKind):
    id, title, unit = "dlq_depth", _("Dead-letter depth above N"), _("jobs")
    help = _("Jobs in the failed set (or waiting in a dead-letter queue).")

    def measure(self, rule, sig, facts):
        counts = sig.snapshot.counts
        depth = waiting_jobs(counts) if sig.is_dlq else counts.get("failed", 0)
        return depth, says.summary(says.DLQ_DEPTH, n=depth)


class DlqGrowth(QueueKind):
    id, title, unit = "dlq_growth", _("Dead-letter growth above N per minute"), _("jobs/min")
    help = _("Jobs entering the dead-letter set per minute over the window.")
    params = frozenset({WINDOW})

    def measure(self, rule, sig, facts):
        w = window_of(rule)
        rate = sig.dlq_growth_per_min[w]
        return round(rate, 2), says.summary(says.DLQ_GROWTH, rate=f"{rate:.1f}", w=w)


class AttemptFailures(QueueKind):
    id, title, unit = "attempt_failures", _("Failed attempts above N per minute"), _("attempts/min")
    help = _(
        "Attempts that failed and will be retried, per minute over the window: a flapping dependency "
        "shows here before jobs run out of attempts (final failures are not counted)."
    )
    params = frozenset({WINDOW})

    def measure(self, rule, sig, facts):
        w = window_of(rule)
        rate = sig.attempt_failed_per_min[w]
        return round(rate, 2), says.summary(says.ATTEMPT_FAILURES, rate=f"{rate:.1f}", w=w)


class FailureRatio(QueueKind):
    id, title, unit = "failure_ratio", _("Failure ratio above X %"), _("%")
    help = _("Failed ÷ (completed + failed) over the window; needs at least the minimum volume of finished jobs.")
    params = frozenset({WINDOW, MIN_VOLUME})
    percent = True

    def measure(self, rule, sig, facts):
        w = window_of(rule)
        failed, completed = sig.totals["failed"][w], sig.totals["completed"][w]
        finished = failed + completed
        if finished == 0 or finished < rule.min_volume:
            return 0.0, says.summary(says.TOO_FEW_FINISHED, n=finished, w=w, min=rule.min_volume)
        pct = 100.0 * failed / finished
        return round(pct, 1), says.summary(says.FAILURE_RATIO, pct=f"{pct:.1f}", n=finished, w=w)


class StalledWindow(QueueKind):
    id, title, unit = "stalled_window", _("Stalled jobs above N over a window"), _("jobs")
    help = _("Stall events (a worker lost a job's lock) in the window.")
    params = frozenset({WINDOW})

    def measure(self, rule, sig, facts):
        w = window_of(rule)
        n = sig.totals["stalled"][w]
        return n, says.summary(says.STALL_EVENTS, n=n, w=w)


class StalledNow(QueueKind):
    id, title, unit = "stalled_now", _("Jobs stalled right now above N"), _("jobs")
    help = _("Active jobs whose lock has expired (0 means: any stalled job).")

    def measure(self, rule, sig, facts):
        n = len(sig.stalled_now)
        return n, says.summary(says.STALLED_NOW, n=n)


class Backlog(QueueKind):
    id, title, unit = "backlog", _("Backlog above N"), _("jobs")
    help = _(
        "Waiting plus prioritized jobs; optionally also delayed jobs already due (nobody promoted them: no worker)."
    )
    params = frozenset({DUE_DELAYED_PARAM})

    def needs(self, rule):
        return (DUE_DELAYED,) if getattr(rule, "include_due_delayed", False) else ()

    def measure(self, rule, sig, facts):
        n = ready_jobs(sig.snapshot.counts)
        if getattr(rule, "include_due_delayed", False):
            due = facts.of(DUE_DELAYED).get(sig.snapshot.queue, 0)
            return n + due, says.summary(says.WAITING_WITH_DUE, n=n + due, due=due)
        return n, says.summary(says.WAITING, n=n)


class OldestWaiting(QueueKind):
    id, title, unit = "oldest_waiting", _("Oldest waiting job older than T"), _("seconds")
    help = _("Age of the oldest job still waiting to be picked up.")

    def measure(self, rule, sig, facts):
        age = sig.snapshot.oldest_waiting_age_ms
        if age is None:
            return 0.0, says.NONE_WAITING
        said = says.OLDEST_AT_LEAST if sig.snapshot.oldest_waiting_bound else says.OLDEST
        return round(age / 1000, 1), says.summary(said, age=says.duration(age / 1000))


class NoCompletions(QueueKind):
    id, title, unit = "no_completions", _("Work waiting, nothing completing for T"), _("seconds")
    help = _("Jobs are waiting and none completed for T seconds: workers down or stuck.")
    duration_threshold = True

    def validate(self, rule):
        errors = super().validate(rule)
        if rule.threshold is not None and rule.threshold < 60:
            # Completions are counted per minute: a shorter T would fire between two of them.
            errors["threshold"] = _("“Nothing completing for T” needs T of at least 60 seconds.")
        return errors

    def measure(self, rule, sig, facts):
        snap = sig.snapshot
        n = ready_jobs(snap.counts)
        done = sig.totals["completed"][1]
        stuck = n > 0 and done == 0 and not snap.paused
        return (1.0 if stuck else 0.0), says.summary(says.NOTHING_COMPLETING, n=n, done=done)


class NoWorkers(QueueKind):
    id, title, unit = "no_workers", _("Jobs waiting, no workers"), _("jobs")
    help = _(
        "More than N jobs waiting (plus prioritized) while no worker is connected to the queue (BullMQ names "
        "worker connections; the monitor reads CLIENT LIST every few seconds). A paused queue is not counted; "
        "where the workers cannot be read (the server refuses CLIENT LIST), nothing changes."
    )
    replayable = False  # stored history has no worker counts

    def measure(self, rule, sig, facts):
        if sig.workers is None:
            return None, says.WORKERS_UNKNOWN
        n = ready_jobs(sig.snapshot.counts)
        if sig.workers or sig.snapshot.paused:
            said = says.WAITING_WORKERS_PAUSED if sig.snapshot.paused else says.WAITING_WORKERS
            return 0, says.summary(said, n=n, workers=sig.workers)
        return n, says.summary(says.NO_WORKER, n=n)


class Paused(QueueKind):
    id, title, unit = "paused", _("Queue paused for longer than T"), _("seconds")
    help = _("The queue has been paused for T seconds.")
    duration_threshold = True

    def measure(self, rule, sig, facts):
        paused = health.check_paused(sig.snapshot).failed  # the health check says what "paused" is
        return (1.0 if paused else 0.0), says.PAUSED if paused else says.RUNNING
