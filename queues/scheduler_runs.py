"""A job scheduler's runs, the same for every source kind: the runs it would make (the preview
shown before saving), the iterations to link to (its pending one and its last one), and the
one-off job "run now" adds from its template.

* **Preview**: the times BullMQ 6.7 would run the scheduler if it were saved now: a cron
  pattern's as cron-parser computes them (``queues.cron.bullmq_next_millis``, in the zone
  ``queues.scheduler_zone`` says), an ``every`` scheduler's as ``addJobScheduler`` aligns its
  first run (``getJobSchedulerEveryNextMillis``: the start date, else the offset's slot, else
  now) and then one interval apart; both stop at the ``limit`` and the ``endDate``.
* **Iterations**: BullMQ names each iteration ``repeat:<scheduler id>:<its time>``; the pending
  one is the scheduler's score, the last one the slot before it (or the score itself once the
  scheduler has finished).
* **Run now**: ``Queue.add(template.name, template.data, template.opts)``, as bull-board's
  "run now" does: a plain job, not an iteration, so the scheduler's next run is untouched.

Framework-free."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from . import cron
from .job_options import InvalidJob, NewJob
from .messages import _
from .scheduler_edit import SchedulerSpec
from .schedulers import Scheduler
from .stored_opts import encode_opts

PREVIEW_RUNS = 5
# Options that tie a job to a scheduler's iteration: the one-off is a job of its own.
ITERATION_ONLY = ("repeat", "repeatJobKey", "prevMillis", "timestamp", "jobId", "delay")


def preview_runs(
    *,
    pattern: str,
    every: int | None,
    zone_name: str,
    start_date: int | None,
    end_date: int | None,
    limit: int | None,
    offset: int | None,
    immediately: bool,
    now_ms: int,
    count: int = PREVIEW_RUNS,
    stored: tuple[int | None, int] | None = None,
) -> list[int]:
    """The first ``count`` runs (ms since 1970) a scheduler saved at ``now_ms`` would make.
    ``stored``: (``every``, next run) of the scheduler an edit saves over: ``addJobScheduler``
    continues an unchanged interval from it rather than starting afresh."""
    runs: list[int] = []
    if end_date is not None and now_ms > end_date:
        return runs
    wanted = min(count, limit) if limit is not None else count
    if pattern:
        at: int | None = now_ms if immediately else None
        if at is not None:
            runs.append(at)
        cursor = now_ms
        while len(runs) < wanted:
            at = cron.bullmq_next_millis(pattern=pattern, tz=zone_name or "UTC", now_ms=cursor, start_ms=start_date)
            if at is None or (end_date is not None and at > end_date):
                break
            runs.append(at)
            cursor = at
        return runs
    if not every:
        return runs
    if stored is not None and stored[0] == every:
        first = stored[1] + every
        if first < now_ms:  # missed slots: the next one on the offset's phase
            aligned = now_ms // every * every + (offset or 0)
            first = aligned + every if aligned <= now_ms else aligned
    elif start_date:
        first = max(start_date, now_ms)
    elif offset:
        first = now_ms // every * every + offset
        first = first + every if first <= now_ms else first
    else:
        first = now_ms
    for k in range(wanted):
        at = first + k * every
        if end_date is not None and at > end_date:
            break
        runs.append(at)
    return runs


def iteration_id(scheduler_id: str, millis: int) -> str:
    """BullMQ's job id of the scheduler's iteration due at ``millis``."""
    return f"repeat:{scheduler_id}:{millis}"


def iteration_millis(scheduler_id: str, job_id: str) -> int | None:
    """The due time in an iteration's job id (``None`` if the id is not one of this scheduler's)."""
    head = f"repeat:{scheduler_id}:"
    tail = job_id[len(head) :] if job_id.startswith(head) else ""
    return int(tail) if tail.isdigit() else None


def previous_slot(scheduler: Scheduler, score: int) -> int | None:
    """The slot before the iteration due at ``score``: where the last run is looked for first
    (an edit or a catch-up may have moved it; readers then look through the finished jobs)."""
    if scheduler.every:
        return score - scheduler.every
    if scheduler.pattern:
        try:
            before = cron.cron_prev(
                expr=scheduler.pattern,
                tz=scheduler.pattern_tz or "UTC",
                at=dt.datetime.fromtimestamp((score - 1) / 1000, dt.UTC),
            )
        except (cron.CronError, ValueError, KeyError):
            return None
        return int(before.timestamp() * 1000) if before else None
    return None


@dataclass(frozen=True)
class Iteration:
    """One of a scheduler's iteration jobs, as stored now."""

    job_id: str
    due: int  # ms since 1970, from its id
    state: str  # BullMQ's state name, "" if the job is gone


@dataclass(frozen=True)
class SchedulerDetail:
    """A scheduler as its page shows it: the listed entry, its definition and template (``None``
    where the kind does not read them), its pending iteration and its last run."""

    scheduler: Scheduler
    spec: SchedulerSpec | None
    pending: Iteration | None
    last_run: Iteration | None


def one_off(spec: SchedulerSpec) -> NewJob:
    """The job "run now" adds: the template's name, data and options (BullMQ's names), without
    what makes a job an iteration. A template with a ``parent`` is refused: an add into a flow
    is not what running a scheduler's job means, and Node's iterations do not carry it either."""
    if spec.opts.get("parent"):
        raise InvalidJob(_("The scheduler's template names a parent job: run it from the scheduler, not as a one-off."))
    opts = {k: v for k, v in spec.opts.items() if k not in ITERATION_ONLY}
    # Stored as Node's ``Job`` stores them (``keepLogs`` as ``kl``…): the add writes them as given.
    return NewJob(name=spec.name, data_json=spec.data_json, opts=encode_opts(opts))


def zoned_ms(text: str, zone_name: str) -> int | None:
    """A date and time typed in a form (``YYYY-MM-DDTHH:MM[:SS[.mmm]]``, as a datetime-local
    input sends it) read in zone ``zone_name``; ``None`` when empty. A time a daylight-saving
    change skips or repeats is read at its first reading (``fold=0``). ``ValueError`` with a
    message for the user otherwise."""
    text = (text or "").strip()
    if not text:
        return None
    try:
        tz = cron.zone(zone_name or "UTC")
        local = dt.datetime.fromisoformat(text)
    except cron.CronError as exc:
        raise ValueError(str(exc)) from None
    except ValueError:
        raise ValueError(_("“{text}” is not a date and time (YYYY-MM-DD HH:MM).", text=text[:40])) from None
    if local.tzinfo is not None:
        return round(local.timestamp() * 1000)
    return round(local.replace(tzinfo=tz, fold=0).timestamp() * 1000)


def local_text(ms: int | None, zone_name: str) -> str:
    """``ms`` as a datetime-local input's value in zone ``zone_name`` (milliseconds kept)."""
    if ms is None:
        return ""
    try:
        at = dt.datetime.fromtimestamp(ms / 1000, dt.UTC).astimezone(cron.zone(zone_name or "UTC"))
    except (OverflowError, OSError, ValueError, cron.CronError):
        return ""  # beyond what a date can show (year 10000 in a zone east of UTC)
    text = at.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{ms % 1000:03d}" if ms % 1000 else text
