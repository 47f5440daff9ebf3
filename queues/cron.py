"""Cron maths and the periodic-work scheduler: the one module that wraps croniter.

Time is UTC everywhere else. A cron expression means wall-clock times in its own time zone, so
the maths happens here, in that zone, and the results go straight back to UTC:

* croniter walks *naive local* wall-clock times (it never sees an offset, so a daylight-saving
  change cannot shift its arithmetic by an hour);
* each local time is then given its zone with ``fold=0``: a time skipped by a spring-forward
  change (02:30 on a night that jumps 02:00 → 03:00) runs at the equivalent instant just after
  the jump, and a time repeated by a fall-back change runs once, at its first occurrence —
  what Vixie cron users expect.

``Periodic`` runs the monitor's whole schedule (discovery steps, ticks, exact snapshots, stall
probes, flushes, rule evaluation, history roll-up, health checks, the outbox sender, a daily
digest): each job every N seconds (after its last run ended, after it started, or on a fixed
grid) or on a cron schedule.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, croniter

from .messages import _

log = logging.getLogger("queuewatch.cron")

UTC = dt.UTC
# Enough steps to cross a fall-back hour in which every result is an already-passed instant.
_MAX_SKIPS = 1000


class CronError(ValueError):
    """A cron expression or time zone that cannot be used; the message says why, for users."""


# The longest IANA zone name has 32 characters (America/Argentina/ComodRivadavia). A name is
# looked up as a file under the zone database: a longer one is refused before the lookup, which
# raises ``OSError`` (file name too long) for a name of a few hundred characters.
MAX_ZONE_NAME = 64


def zone(name: str) -> ZoneInfo:
    """The zone called ``name`` ("" is UTC): every zone name, typed or read from Redis, is
    looked up here; ``CronError`` with a message for one that is not a zone."""
    if len(name) > MAX_ZONE_NAME:
        raise CronError(
            _(
                "A time zone name has at most {max} characters; “{start}…” has {length}. "
                "Use an IANA name such as Europe/Paris or UTC.",
                max=MAX_ZONE_NAME,
                start=name[:20],
                length=len(name),
            )
        )
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise CronError(
            _("Unknown time zone “{name}”. Use an IANA name such as Europe/Paris or UTC.", name=name)
        ) from None


def cron_validate(expr: str, tz: str = "UTC") -> None:
    """Raise ``CronError`` with a message for users if the expression or zone is unusable."""
    zone(tz)
    text = (expr or "").strip()
    if not text:
        raise CronError(_("Enter a cron expression, e.g. “0 2 * * *” (every day at 02:00)."))
    if len(text.split()) not in (5, 6):
        raise CronError(
            _(
                "“{text}” has {fields} fields; a cron expression has 5 (minute hour day-of-month month "
                "day-of-week), optionally 6 with seconds.",
                text=text,
                fields=len(text.split()),
            )
        )
    if not croniter.is_valid(text):
        raise CronError(
            _("“{text}” is not a valid cron expression (minute hour day-of-month month day-of-week).", text=text)
        )
    try:  # valid fields can still name a date that never comes (30 February)
        croniter(text, dt.datetime(2000, 1, 1)).get_next(dt.datetime)
    except CroniterBadDateError:
        raise CronError(
            _(
                "“{text}” never fires: no date matches its day-of-month, month and day-of-week (e.g. 30 February).",
                text=text,
            )
        ) from None


def _local(at: dt.datetime, tz: ZoneInfo) -> dt.datetime:
    if at.tzinfo is None:
        raise ValueError("cron maths needs aware datetimes (UTC)")
    return at.astimezone(tz).replace(tzinfo=None)


def _to_utc(naive_local: dt.datetime, tz: ZoneInfo) -> dt.datetime:
    return naive_local.replace(tzinfo=tz, fold=0).astimezone(UTC)


def cron_next(*, expr: str, tz: str, after: dt.datetime, count: int = 1) -> list[dt.datetime]:
    """The next ``count`` fire times strictly after ``after``, in UTC."""
    cron_validate(expr, tz)
    zi = zone(tz)
    it = croniter(expr.strip(), _local(after, zi) - dt.timedelta(microseconds=1))
    out: list[dt.datetime] = []
    skips = 0
    while len(out) < count and skips < _MAX_SKIPS:
        try:
            at = _to_utc(it.get_next(dt.datetime), zi)
        except CroniterBadDateError:  # no further date matches (saved before validation caught it)
            break
        # After a fall-back change, local times can map to instants we already passed (the
        # first occurrence of the repeated hour); and two local times can map to one instant.
        if at <= after or (out and at <= out[-1]):
            skips += 1
            continue
        out.append(at)
    return out


def bullmq_next_millis(*, pattern: str, tz: str, now_ms: int, start_ms: int | None = None) -> int | None:
    """The next run of a BullMQ job scheduler's cron ``pattern`` after ``now_ms`` (or after
    ``start_ms`` when later), exactly as Node BullMQ's ``defaultRepeatStrategy`` computes it with
    cron-parser 5; ``None`` if it never fires again.

    Not ``cron_next``'s rule. cron-parser walks local wall-clock times; a time skipped by
    spring-forward runs at its standard-time reading (02:30 → 03:30 summer time); in a
    fall-back night a time of the repeated hour runs in its second occurrence when the first has
    passed, and a pattern whose hour is every hour (``*``) runs in *both* occurrences (it steps
    through the night in real time). A 6-field pattern has seconds first. Checked against
    cron-parser over DST nights in several zones (tests/actions/test_toolbox_scheduler_interop.py);
    zones with 30-minute shifts (Lord Howe) are left out: cron-parser itself fails there."""
    zi = zone(tz)
    base_ms = max(now_ms, start_ms or 0)
    six = len(pattern.split()) == 6
    every_hour = len(croniter(pattern.strip(), second_at_beginning=six).expanded[2 if six else 1]) in (
        1,
        24,
    ) and pattern.split()[2 if six else 1] in ("*", "0-23", "*/1")
    local = dt.datetime.fromtimestamp(base_ms / 1000, UTC).astimezone(zi).replace(tzinfo=None)
    # Every-hour patterns may still owe a run in the repeated hour behind the local clock, and
    # need walking through the night; with no clock change in reach their first run after the
    # local clock is the answer, as for any other pattern (walking four hours of a seconds
    # pattern took ~2,000 steps, 30 ms, for nothing).
    every_hour = every_hour and not _steady_offset(zi, base_ms)
    steps = croniter(pattern.strip(), local - dt.timedelta(hours=1 if every_hour else 0), second_at_beginning=six)
    found: int | None = None
    for _skip in range(_MAX_SKIPS * 10):
        try:
            naive = steps.get_next(dt.datetime)
        except CroniterBadDateError:
            return found
        first, second = (int(naive.replace(tzinfo=zi, fold=f).timestamp() * 1000) for f in (0, 1))
        # fold=1 is a second occurrence only when it comes later (in a gap it reads earlier).
        for at in (first, second) if second > first else (first,):
            if at > base_ms and (found is None or at < found):
                found = at
        # Wall-clock candidates only grow, so once one is found, another 3 hours of them cannot
        # map before it.
        if found is not None and (not every_hour or naive - local > dt.timedelta(hours=3)):
            return found
    return found


def _steady_offset(zi: ZoneInfo, at_ms: int) -> bool:
    """Whether ``zi``'s offset from UTC is the same 2 h before and 4 h after ``at_ms``: no clock
    change in reach of ``bullmq_next_millis``'s walk (zones change their clocks at most a few
    times a year, never twice in six hours), so wall-clock times there map to instants one to
    one and in order."""
    before, after = (
        dt.datetime.fromtimestamp(at_ms / 1000 + s, UTC).astimezone(zi).utcoffset() for s in (-7200, 14400)
    )
    return before == after


def cron_prev(*, expr: str, tz: str, at: dt.datetime) -> dt.datetime | None:
    """The latest fire time at or before ``at``, in UTC (None if none in reach)."""
    cron_validate(expr, tz)
    zi = zone(tz)
    it = croniter(expr.strip(), _local(at, zi) + dt.timedelta(microseconds=1))
    for _skip in range(_MAX_SKIPS):
        try:
            fire = _to_utc(it.get_prev(dt.datetime), zi)
        except CroniterBadDateError:  # no earlier date matches (saved before validation caught it)
            return None
        if fire <= at:
            return fire
    return None


def window_open_at(
    *, expr: str, tz: str, duration: dt.timedelta, at: dt.datetime
) -> tuple[dt.datetime, dt.datetime] | None:
    """For a recurring window that starts on the cron schedule and lasts ``duration`` of
    *wall-clock* time in ``tz`` (so "01:00 for 3 h" ends at 04:00 local even on the night the
    clocks change, as the people who planned it expect): the (start, end) in UTC of the window
    containing ``at``, or None. Only the latest start is considered; windows are not meant to
    overlap."""
    start = cron_prev(expr=expr, tz=tz, at=at)
    if start is None:
        return None
    zi = zone(tz)
    end = _to_utc(_local(start, zi) + duration, zi)
    return (start, end) if at < end else None


# ------------------------------------------------------------------------------------------
# Periodic work

# When an interval job runs again, measured from the end of its run (work that must leave a gap,
# such as sending or health checks), from its start (a steady cadence however long the run), or
# on a fixed grid (load that must stay exactly periodic; a run that falls behind restarts the
# grid from its start, so missed runs never come in a burst).
Cadence = Literal["after-end", "after-start", "on-grid"]
AFTER_END: Cadence = "after-end"
AFTER_START: Cadence = "after-start"
ON_GRID: Cadence = "on-grid"


@dataclass
class Job:
    """One piece of periodic work: every ``every`` seconds (its ``cadence``), or on a ``cron``
    schedule in ``tz``. ``first_after`` delays the first run of an interval job (seconds).

    ``only_when``: work that exists only sometimes (changes waiting to be published); the job is
    due only while it says so, and then at most every ``every``. ``stands_in_for``: jobs a run of
    this one does the work of (an exact snapshot is also a tick): they are rescheduled as if they
    had run. ``propagate``: a failure reaches the caller of ``run_due`` (the monitor's own steps:
    a failing step ends the leader's term) instead of being logged and contained."""

    name: str
    run: Callable[[], object]
    every: float | None = None
    cron: str = ""
    tz: str = "UTC"
    first_after: float = 0.0
    cadence: Cadence = AFTER_END
    only_when: Callable[[], bool] | None = None
    stands_in_for: tuple[str, ...] = ()
    propagate: bool = False
    next_at: float = field(default=0.0, init=False)  # monotonic seconds

    def __post_init__(self):
        if (self.every is None) == (not self.cron):
            raise ValueError(f"job {self.name}: give exactly one of every= or cron=")
        if self.cron:
            cron_validate(self.cron, self.tz)
            if self.cadence != AFTER_END:
                raise ValueError(f"job {self.name}: a cron job runs on its cron schedule, not a cadence")

    def wanted(self) -> bool:
        return self.only_when is None or self.only_when()


class Periodic:
    """Runs due jobs when asked (``run_due``), never in a thread of its own: the monitor's
    loop calls it, so periodic work stops the moment leadership is lost. Jobs run in the order
    given. A failing job is logged and rescheduled; it never stops the others."""

    def __init__(
        self,
        jobs: list[Job],
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], dt.datetime] = lambda: dt.datetime.now(UTC),
    ):
        self.jobs = list(jobs)
        self.by_name = {job.name: job for job in self.jobs}
        if len(self.by_name) != len(self.jobs):
            raise ValueError("periodic jobs need distinct names")
        for job in self.jobs:
            unknown = set(job.stands_in_for) - set(self.by_name)
            if unknown:
                raise ValueError(f"job {job.name} stands in for unknown jobs {sorted(unknown)}")
        self.clock, self.wall = clock, wall
        start = self.clock()
        for job in self.jobs:
            job.next_at = start + job.first_after if job.every is not None else self._next_cron(job, start)

    def _next_cron(self, job: Job, mono_now: float) -> float:
        now = self.wall()
        fire = cron_next(expr=job.cron, tz=job.tz, after=now)[0]
        return mono_now + (fire - now).total_seconds()

    def seconds_until_next(self) -> float:
        """How long until a job is due (jobs ``only_when`` nothing is waiting do not count)."""
        return max(0.0, min((j.next_at for j in self.jobs if j.wanted()), default=60.0) - self.clock())

    def run_due(
        self, *, keep_going: Callable[[], bool] = lambda: True, between: Callable[[], object] = lambda: None
    ) -> list[str]:
        """Run every job that is due, in order; returns the names of the jobs run. Stops before
        the next due job once ``keep_going()`` is false (the leader lost its lock): the rest stay
        due. ``between`` runs between two jobs (the monitor serves its viewers there)."""
        ran: list[str] = []
        for job in self.jobs:
            started = self.clock()
            if started < job.next_at or not job.wanted():
                continue
            if not keep_going():
                break
            if ran:
                between()
                started = self.clock()
            try:
                job.run()
            except Exception:  # one failing job must not stop the others or the loop
                if job.propagate:
                    raise
                log.exception("periodic job %s failed; will run again on schedule", job.name)
            ran.append(job.name)
            done = self.clock()
            for rescheduled in (job, *(self.by_name[name] for name in job.stands_in_for)):
                self._reschedule(rescheduled, started=started, done=done)
        return ran

    def _reschedule(self, job: Job, *, started: float, done: float) -> None:
        if job.every is None:
            job.next_at = self._next_cron(job, done)
        elif job.cadence == AFTER_END:
            job.next_at = done + job.every
        elif job.cadence == AFTER_START:
            job.next_at = started + job.every
        else:  # on the grid; a run that fell behind it restarts it from there: never a burst
            job.next_at += job.every
            if job.next_at <= started:
                job.next_at = started + job.every
