""" "What would this rule have done in the last 24 hours": the rule replayed, minute by minute,
over stored history (``QueuePoint`` minute rows), through the same pure evaluation and the
same state-machine decisions the monitor uses — only in memory, writing nothing.

History has per-minute counters and gauges, so queue kinds can be replayed; connection kinds
(reachability, eviction policy, memory) and missed schedules are not in history and are
reported as such. Stalled-now counts come from the stored gauge (how many, not which).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.utils.translation import gettext as _

from dashboard.alerts.preview_chart import Chart, preview_chart
from dashboard.live.models import QueuePoint
from dashboard.live.rates import build_signals
from queues import alert_kinds, alert_rules
from queues.keys import QueueRef
from queues.rates import COUNTERS, MINUTE_MS, Minute, QueueSeries
from queues.snapshot import COUNT_STATES, QueueSnapshot

HOURS = 24
MAX_QUEUES = 20  # a replay costs ~0.2 s of CPU per queue (a day of minutes); enough to judge a rule


@dataclass
class Incident:
    target: alert_rules.Target
    pending_at: dt.datetime
    fired_at: dt.datetime | None = None
    resolved_at: dt.datetime | None = None
    peak: float | None = None
    notifications: int = 0
    last_notified: dt.datetime | None = None


@dataclass
class Preview:
    replayable: bool
    minutes: int = 0
    queues: int = 0
    incidents: list[Incident] = field(default_factory=list)
    note: str = ""
    # What the rule measured each minute, per target (None: not measurable then), for the chart.
    series: dict[alert_rules.Target, list[tuple[dt.datetime, float | None]]] = field(default_factory=dict)
    start: dt.datetime | None = None
    end: dt.datetime | None = None
    chart: Chart | None = None  # the series drawn with the threshold (``preview_chart``)

    @property
    def fired(self) -> list[Incident]:
        return [i for i in self.incidents if i.fired_at]

    @property
    def notifications(self) -> int:
        return sum(i.notifications for i in self.incidents)


def _snapshot(q: QueueRef, row: QueuePoint, at_ms: int) -> QueueSnapshot:
    counts = dict.fromkeys(COUNT_STATES, 0)
    counts.update(
        waiting=row.waiting,
        active=row.active,
        delayed=row.delayed,
        prioritized=row.prioritized,
        failed=row.failed_depth,
    )
    oldest = None if row.oldest_age_ms is None else at_ms - row.oldest_age_ms
    # History does not keep the paused flag; a replay never sees a queue as paused.
    return QueueSnapshot(q, counts, False, 0, oldest_waiting_ts=oldest, taken_at=at_ms)


def rule_preview(*, rule, now: dt.datetime) -> Preview:
    kind = alert_kinds.KINDS.get(rule.kind)
    if kind is None or not kind.replayable:
        return Preview(
            False,
            note=_(
                "This kind of rule is about the connection itself or job schedulers, which stored history does "
                "not record."
            ),
        )
    start = now.replace(second=0, microsecond=0) - dt.timedelta(hours=HOURS)
    recent = QueuePoint.objects.filter(
        resolution=QueuePoint.MINUTE, start__gte=start - dt.timedelta(minutes=15), start__lte=now
    )
    # Which queues first (a small distinct list), then only their rows: a wide scope over many
    # queues must not load a day of every queue's minutes.
    names = sorted(
        {
            QueueRef(*k)
            for k in recent.values_list("connection", "prefix", "queue").distinct()
            if alert_rules.in_scope(rule, connection=k[0], queue=k[2])
        },
        key=lambda q: (q.connection, q.prefix, q.name),
    )
    chosen = names[:MAX_QUEUES]
    by_queue: dict[QueueRef, dict[int, QueuePoint]] = {q: {} for q in chosen}
    for row in recent.filter(queue__in={q.name for q in chosen}).order_by("start"):
        q = QueueRef(row.connection, row.prefix, row.queue)
        if q in by_queue:
            by_queue[q][int(row.start.timestamp() * 1000)] = row
    preview = Preview(True, minutes=HOURS * 60, queues=len(by_queue), start=start, end=now)
    for q, points in by_queue.items():
        preview.incidents += _replay(rule, q, points, start=start, now=now, measured=preview.series)
    preview.incidents.sort(key=lambda i: i.pending_at)
    if not by_queue:
        preview.note = _("No stored history for the queues this rule covers (the monitor stores it while it runs).")
    elif len(names) > MAX_QUEUES:
        preview.note = _("Replayed on the first %(shown)s of the %(total)s queues this rule covers.") % {
            "shown": MAX_QUEUES,
            "total": len(names),
        }
    preview.chart = preview_chart(preview, rule)
    return preview


KEEP_MS = 16 * MINUTE_MS  # the widest rate window, plus the current minute


def _put(series: QueueSeries, m: int, row: QueuePoint) -> None:
    """Add a minute and drop those no window reaches any more (a day of minutes in the series
    made every rate a scan of all of them)."""
    series.minutes[m] = Minute(**{c: getattr(row, c) for c in COUNTERS})
    for old in [k for k in series.minutes if k <= m - KEEP_MS]:
        del series.minutes[old]


def _replay(
    rule,
    q: QueueRef,
    points: dict[int, QueuePoint],
    *,
    start: dt.datetime,
    now: dt.datetime,
    measured: dict | None = None,
) -> list[Incident]:
    series = QueueSeries()
    for m, row in sorted(points.items()):
        if m < start.timestamp() * 1000:
            _put(series, m, row)
    incidents: list[Incident] = []
    phase: alert_rules.Phase | None = None
    current: Incident | None = None
    last_row = None
    t = start
    while t <= now:
        m = int(t.timestamp() * 1000)
        row = points.get(m)
        if row is not None:
            _put(series, m, row)
            last_row = row
        if last_row is None:
            t += dt.timedelta(minutes=1)
            continue
        end_ms = m + MINUTE_MS - 1  # as the monitor saw it at the end of the minute
        sig = build_signals(
            _snapshot(q, last_row, end_ms), series, now_ms=end_ms, stalled_now=[""] * last_row.stalled_now
        )
        (obs,) = alert_rules.rule_evaluate(rule=rule, facts=alert_rules.Facts(queues=[sig]), now=t) or (None,)
        if obs is not None and measured is not None:
            measured.setdefault(obs.target, []).append((t, obs.value))
        if obs is not None:
            phase, current = _step(rule, phase, current, obs, t, incidents)
        t += dt.timedelta(minutes=1)
    return incidents


def _step(rule, phase, current, obs, t, incidents):
    step = alert_rules.next_step(rule=rule, phase=phase, obs=obs, now=t)
    if step == alert_rules.OPEN:
        phase, current = alert_rules.Phase(alert_rules.PENDING, t), Incident(obs.target, t, peak=obs.value)
        incidents.append(current)
        step = alert_rules.next_step(rule=rule, phase=phase, obs=obs, now=t)
    if current is not None and obs.value is not None:
        current.peak = max(current.peak or 0, obs.value)
    if step == alert_rules.DROP:
        incidents.remove(current)
        return None, None
    if step == alert_rules.FIRE:
        phase.state, current.fired_at = alert_rules.FIRING, t
        current.notifications += 1
        current.last_notified = t
    elif step == alert_rules.START_CLEAR:
        phase.clear_since = t
    elif step == alert_rules.RESOLVE:
        current.resolved_at = t
        current.notifications += 1 if rule.notify_resolved else 0
        return None, None
    elif phase is not None and phase.state == alert_rules.FIRING and not obs.clear:
        phase.clear_since = None
        if alert_rules.repeat_due(rule=rule, last_notified=current.last_notified, now=t):
            current.notifications += 1
            current.last_notified = t
    return phase, current
