"""Rule kinds about BullMQ job schedulers: one alert per scheduler."""

from __future__ import annotations

import datetime as dt

from ..cron import CronError, cron_next
from ..messages import _
from ..scheduler_zone import OWN
from .base import SCHEDULER, Observation, RuleKind, Target, in_scope
from .needs import SCHEDULERS

MAX_COUNTED_RUNS = 100


def missed_runs(scheduler, *, now: dt.datetime, grace: dt.timedelta) -> tuple[dt.datetime, int] | None:
    """(first missed run, how many runs were missed) or None when the scheduler is on time.

    BullMQ keeps the next iteration's time as the scheduler's score and moves it on only when
    a worker takes that iteration's job: a score more than ``grace`` in the past is a run not
    taken. How many runs have been missed since comes from the cron pattern (croniter, in the
    zone it runs in: ``Scheduler.zone``, the workers' for a pattern without ``tz``) or the
    interval. A finished scheduler (limit reached, end date
    passed) keeps its last run as its score: nothing is due, nothing is missed."""
    if scheduler.finished or scheduler.next_run is None:
        return None
    first = dt.datetime.fromtimestamp(scheduler.next_run / 1000, tz=dt.UTC)
    deadline = now - grace
    if first > deadline:
        return None
    count = 1
    if scheduler.pattern:
        try:
            later = cron_next(expr=scheduler.pattern, tz=scheduler.pattern_tz, after=first, count=MAX_COUNTED_RUNS)
            count += sum(1 for t in later if t <= deadline)
        except CronError:
            pass  # BullMQ accepted a pattern croniter does not: count the one we know of
    elif scheduler.every:
        count += min(MAX_COUNTED_RUNS, int((deadline - first).total_seconds() * 1000 // scheduler.every))
    return first, count


def _zone_text(zone) -> str:
    """The zone, and how it is known when the scheduler does not name it itself."""
    return zone.name if zone.source == OWN else f"{zone.name} ({zone.source})"


class SchedulerMissed(RuleKind):
    id, title, scope, unit = "scheduler_missed", _("A job scheduler missed its run"), SCHEDULER, _("seconds of grace")
    help = _(
        "The iteration due by the scheduler's cron pattern or interval was not taken by a worker "
        "within the grace period."
    )

    def needs(self, rule):
        return (SCHEDULERS,)

    def observe(self, *, rule, facts, now):
        grace = dt.timedelta(seconds=max(0.0, rule.threshold))
        out = []
        for queue, schedulers in facts.of(SCHEDULERS).items():
            if not in_scope(rule, connection=queue.connection, queue=queue.name):
                continue
            for s in schedulers:
                out.append(self._observe_one(s, Target(queue.connection, queue.prefix, queue.name, s.id), now, grace))
        return out

    @staticmethod
    def _observe_one(s, target: Target, now: dt.datetime, grace: dt.timedelta) -> Observation:
        how = f"cron “{s.pattern}” in {_zone_text(s.zone)}" if s.pattern else f"every {s.every} ms"
        if s.finished:
            return Observation(target, 0.0, False, True, f"finished: BullMQ schedules no further run ({how})")
        if "next_run" in s.unreadable:  # scored ``inf`` by a producer: nothing to measure, only this one
            return Observation(target, None, False, True, f"next run stored as no time we can read ({how})")
        missed = missed_runs(s, now=now, grace=grace)
        if missed is None:
            return Observation(target, 0.0, False, True, f"on time ({how})")
        first, count = missed
        late = (now - first).total_seconds()
        summary = (
            f"{count} run{'s' if count != 1 else ''} not taken by a worker ({how}); "
            f"the first was due at {first:%Y-%m-%d %H:%M:%S} UTC, {late:.0f} s ago"
        )
        return Observation(target, round(late, 1), True, False, summary)
