"""Which time zone a job scheduler's cron pattern runs in: the one home of that rule.

A pattern with its own ``tz`` runs there. A pattern without one is not UTC: Node BullMQ hands it
to cron-parser without a zone, so it runs in the *local zone of the process* computing the next
run (the worker that takes an iteration, or the producer calling ``upsertJobScheduler``); Python
bullmq computes it in UTC. Queuewatch cannot see that zone, so, per connection:

* ``configured``: the operator said it (``QUEUEWATCH_CRON_TZ_<NAME>`` / ``QUEUEWATCH_CRON_TZ``,
  ``queues.connections``);
* ``inferred``: otherwise the stored next run (the scheduler's score, computed by those
  processes) tells it: the first candidate zone in which the score is a run of the pattern;
* ``assumed``: nothing to infer from (no score, or one no candidate zone explains): UTC, and the
  pages say it is an assumption.

Readers, the edit, the migration, ``is_finished`` and the missed-run alert all take the zone
from ``pattern_zone`` (a listed scheduler carries it as ``Scheduler.zone``)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import lru_cache
from zoneinfo import ZoneInfo

from .cron import CronError, bullmq_next_millis, zone
from .messages import _

OWN, CONFIGURED, INFERRED, ASSUMED = "own", "configured", "inferred", "assumed"
DEFAULT_ZONE = "UTC"

# Tried in this order; the first zone whose reading of the pattern gives the stored next run is
# taken. Zones sharing an offset differ only in their daylight-saving rules, which one stored
# time cannot tell apart: the most used comes first. Configure the zone to be sure.
CANDIDATE_ZONES = (
    "UTC",
    "America/New_York",
    "America/Chicago",
    "America/Denver",
    "America/Phoenix",
    "America/Los_Angeles",
    "America/Anchorage",
    "Pacific/Honolulu",
    "America/Halifax",
    "America/St_Johns",
    "America/Sao_Paulo",
    "America/Argentina/Buenos_Aires",
    "America/Mexico_City",
    "America/Bogota",
    "America/Santiago",
    "Atlantic/Azores",
    "Atlantic/Cape_Verde",
    "Europe/London",
    "Europe/Paris",
    "Africa/Lagos",
    "Europe/Helsinki",
    "Africa/Cairo",
    "Africa/Johannesburg",
    "Europe/Moscow",
    "Europe/Istanbul",
    "Asia/Tehran",
    "Asia/Dubai",
    "Asia/Kabul",
    "Asia/Karachi",
    "Asia/Kolkata",
    "Asia/Kathmandu",
    "Asia/Dhaka",
    "Asia/Yangon",
    "Asia/Bangkok",
    "Asia/Shanghai",
    "Australia/Perth",
    "Australia/Eucla",
    "Asia/Tokyo",
    "Australia/Darwin",
    "Australia/Adelaide",
    "Australia/Brisbane",
    "Australia/Sydney",
    "Pacific/Noumea",
    "Pacific/Auckland",
    "Pacific/Chatham",
    "Pacific/Tongatapu",
    "Pacific/Kiritimati",
    "Pacific/Pago_Pago",
    "Etc/GMT+12",
)


@dataclass(frozen=True)
class PatternZone:
    """The zone a pattern runs in (``name``, an IANA name) and how Queuewatch knows it."""

    name: str
    source: str  # OWN, CONFIGURED, INFERRED or ASSUMED

    @property
    def note(self) -> str:
        """What the pages say about the zone (empty when the scheduler names it itself)."""
        if self.source == CONFIGURED:
            return _("the workers' zone, as configured for this connection")
        if self.source == INFERRED:
            return _(
                "the workers' zone, inferred from the stored next run (no zone is stored with the "
                "pattern; set QUEUEWATCH_CRON_TZ to be sure)"
            )
        if self.source == ASSUMED:
            return _(
                "assumed: no zone is stored with the pattern and none could be inferred from the "
                "stored next run; set QUEUEWATCH_CRON_TZ to the workers' zone"
            )
        return ""

    def as_dict(self) -> dict:
        return {"name": self.name, "source": self.source}


def pattern_zone(*, pattern: str, tz: str, configured: str = "", evidence: tuple[str, int | None] | None = None):
    """The zone ``pattern`` (stored with zone ``tz``, possibly "") runs in; ``None`` for an
    ``every`` scheduler. ``evidence``: a zone-less pattern and a next run the workers computed
    for it (by default ``pattern`` itself has none); an edit passes the stored scheduler's."""
    if not pattern:
        return None
    if tz:
        return PatternZone(tz, OWN)
    if configured:
        return PatternZone(configured, CONFIGURED)
    if evidence is not None and evidence[0] and evidence[1] is not None:
        inferred = infer_zone(evidence[0].strip(), int(evidence[1]))
        if inferred:
            return PatternZone(inferred, INFERRED)
    return PatternZone(DEFAULT_ZONE, ASSUMED)


def stored_zone(*, pattern: str, tz: str, score: int | None, configured: str = "") -> PatternZone | None:
    """``pattern_zone`` of a stored scheduler (or legacy entry): its own score is the evidence."""
    return upsert_zone(pattern=pattern, tz=tz, configured=configured, stored=(pattern, tz, score))


def upsert_zone(
    *, pattern: str, tz: str, configured: str, stored: tuple[str, str, int | None] | None
) -> PatternZone | None:
    """The zone a scheduler upserted with ``pattern`` and ``tz`` will run in, where ``stored``
    (pattern, tz, score) is what the id holds now: a zone-less stored pattern's score tells the
    workers' zone, which a zone-less new pattern will run in too."""
    evidence = (stored[0], stored[2]) if stored and stored[0] and not stored[1] else None
    return pattern_zone(pattern=pattern, tz=tz, configured=configured, evidence=evidence)


def check_configured(name: str) -> str:
    """A configured zone, checked (``CronError`` with a message otherwise)."""
    zone(name)
    return name


@lru_cache(maxsize=4096)
def infer_zone(pattern: str, score: int) -> str:
    """The first candidate zone in which ``score`` is a run of ``pattern`` ("" if none is)."""
    at = dt.datetime.fromtimestamp(score / 1000, dt.UTC)
    tried: set = set()
    for name in CANDIDATE_ZONES:
        # Zones at the same offset at that instant give the same answer about it.
        offset = at.astimezone(ZoneInfo(name)).utcoffset()
        if offset in tried:
            continue
        tried.add(offset)
        try:
            if bullmq_next_millis(pattern=pattern, tz=name, now_ms=score - 1) == score:
                return name
        except (CronError, ValueError, KeyError):
            return ""  # a pattern we cannot read says nothing about any zone
    return ""
