"""Rule kinds about BullMQ job schedulers: one alert per scheduler."""

from __future__ import annotations

import datetime as dt

from ..cron import CronError, cron_next
from ..messages import _
from ..scheduler_zone import OWN
from . import summaries as says
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


def _every(every_ms):
    """A scheduler's interval as a duration; as stored when it is not a number."""
    try:
        return says.duration(float(every_ms) / 1000)
    except (TypeError, ValueError, OverflowError):
        return str(every_ms)


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
        if s.pattern:
            how = says.summary(says.CRON_IN_ZONE, pattern=s.pattern, zone=_zone_text(s.zone))
        else:
            how = says.summary(says.EVERY, every=_every(s.every))
        if s.finished:
            return Observation(target, 0.0, False, True, says.summary(says.SCHEDULER_FINISHED, how=how))
        if "next_run" in s.unreadable:  # scored ``inf`` by a producer: nothing to measure, only this one
            return Observation(target, None, False, True, says.summary(says.NEXT_RUN_UNREADABLE, how=how))
        missed = missed_runs(s, now=now, grace=grace)
        if missed is None:
            return Observation(target, 0.0, False, True, says.summary(says.ON_TIME, how=how))
        first, count = missed
        late = (now - first).total_seconds()
        summary = says.summary(
            says.ONE_RUN_MISSED if count == 1 else says.RUNS_MISSED,
            count=count,
            how=how,
            due=f"{first:%Y-%m-%d %H:%M:%S}",
            late=says.duration(late),
        )
        return Observation(target, round(late, 1), True, False, summary)
