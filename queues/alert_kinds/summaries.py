"""What an alert measured, in words: the summary each rule kind writes with its value.

An alert's summary is recorded as English text (webhooks, Slack and Alertmanager read it as
such) and translated where a person reads it: ``recognised`` finds which of these messages
wrote a stored text and rebuilds it, values and all, so a page or an email shows it in the
reader's language — rows recorded before the summaries were marked too, since the English is
the same. A duration is written by the one rule (``queues.quantities``); older rows' "184 s" is
recognised as well. Keep a summary's English unchanged, or add the new one beside it.
"""

from __future__ import annotations

from ..messages import Message, Recogniser, _
from ..quantities import duration_from_text, duration_message

# Queue kinds.
DLQ_DEPTH = _("{n} jobs in the dead-letter set")
DLQ_GROWTH = _("dead letters growing by {rate}/min over {w} min")
ATTEMPT_FAILURES = _("{rate} failed attempts/min (to be retried) over {w} min")
TOO_FEW_FINISHED = _("{n} jobs finished in {w} min (below the minimum volume of {min})")
# xgettext:no-python-format
FAILURE_RATIO = _("{pct}% of {n} jobs failed over {w} min")
STALL_EVENTS = _("{n} stall events in {w} min")
STALLED_NOW = _("{n} jobs stalled now")
WAITING_WITH_DUE = _("{n} jobs waiting (incl. {due} delayed jobs already due)")
WAITING = _("{n} jobs waiting")
NONE_WAITING = _("no job waiting")
OLDEST_AT_LEAST = _("oldest waiting job is at least {age} old")
OLDEST = _("oldest waiting job is {age} old")
NOTHING_COMPLETING = _("{n} jobs waiting, {done} completed in the last minute")
WORKERS_UNKNOWN = _("workers unknown")
WAITING_WORKERS_PAUSED = _("{n} jobs waiting, {workers} workers (paused)")
WAITING_WORKERS = _("{n} jobs waiting, {workers} workers")
NO_WORKER = _("{n} jobs waiting and no worker connected")
PAUSED = _("queue paused")
RUNNING = _("queue running")
# Connection kinds.
UNREACHABLE = _("unreachable: {error}")
REACHABLE = _("reachable")
EVICTION = _("maxmemory-policy is {policy}")
NO_MAXMEMORY = _("no maxmemory set")
# xgettext:no-python-format
MEMORY = _("memory at {pct}% of maxmemory")
# Job schedulers: how the scheduler runs, then what happened.
CRON_IN_ZONE = _("cron “{pattern}” in {zone}")
EVERY = _("every {every}")
EVERY_MS = _("every {every} ms")  # as rows before durations were written in words read
SCHEDULER_FINISHED = _("finished: BullMQ schedules no further run ({how})")
NEXT_RUN_UNREADABLE = _("next run stored as no time we can read ({how})")
ON_TIME = _("on time ({how})")
ONE_RUN_MISSED = _("1 run not taken by a worker ({how}); the first was due at {due} UTC, {late} ago")
RUNS_MISSED = _("{count} runs not taken by a worker ({how}); the first was due at {due} UTC, {late} ago")
# Any kind: an open alert whose target is gone (``queues.alert_rules.vanished``).
GONE = _("no longer present (the queue or scheduler was removed, or is out of the rule's scope now)")
# Wait and processing times.
TOO_FEW_TIMED = {
    "wait": _("{n} jobs timed in {w} min (below the minimum volume of {min}): no p95 wait"),
    "processing": _("{n} jobs timed in {w} min (below the minimum volume of {min}): no p95 processing time"),
}
P95 = {
    "wait": _("p95 wait {p95} over {n} jobs in {w} min"),
    "processing": _("p95 processing time {p95} over {n} jobs in {w} min"),
}

SUMMARIES: tuple[Message, ...] = (
    tuple(m for name, m in list(globals().items()) if name.isupper() and isinstance(m, Message))
    + tuple(TOO_FEW_TIMED.values())
    + tuple(P95.values())
)


def summary(template: Message, **params) -> Message:
    """``template`` filled in: ``summary(WAITING, n=12)``."""
    return Message(template.msgid, **params)


def duration(seconds: float) -> object:
    """A duration inside a summary, in the one rule's words ("3 min 4 s")."""
    return duration_message(seconds)


recognised = Recogniser([m.msgid for m in SUMMARIES], value=duration_from_text)
