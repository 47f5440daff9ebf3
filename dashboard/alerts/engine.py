"""The alert state machine: observations in, alert rows and outbox notifications out.

``evaluate_rules(*, facts, now)`` runs every enabled rule (``queues.alert_rules``, pure) and
applies what it observed to the rule's open ``Alert`` rows:

    (none) ──above──► pending ──for elapsed──► firing ──clear (+ keep-firing)──► resolved
                         └──not above──► dropped (a pending alert that never fired is deleted)

Every step is a compare-and-swap on ``Alert.version`` (``filter(pk, version=v).update(…)``),
and at most one open alert per fingerprint exists (a partial unique index), so a second
monitor working from a stale view after a failover takes no step twice. Notifications are
written in the same transaction as the steps that caused them, one per channel, grouped per
rule and kind (several targets firing together → one notification), with an idempotency key
built from the steps' (alert, version) pairs — the outbox's unique key is the last guard.

Silenced alerts (an active ``Silence`` or an open ``MaintenanceWindow``) still go through
every state; only their notifications are held back. When the silence ends while the alert is
still firing, the firing notification goes out then.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F

from dashboard.alerts import wording
from dashboard.alerts.models import Alert, AlertEvent, AlertRule, MaintenanceWindow, Notification, Silence
from dashboard.alerts.scoped import firing_summary  # noqa: F401  (the banner's, with the other reads of alerts)
from queues import alert_rules
from queues.alert_rules import Facts, Matcher, Observation
from queues.cron import CronError, window_open_at

log = logging.getLogger("queuewatch.alerts")

VALUE_REFRESH = dt.timedelta(minutes=1)


@dataclass
class Step:
    """One CAS-claimed transition that may need a notification."""

    alert: Alert
    notify: str  # Notification.FIRING / REPEAT / RESOLVED, or "" for none


@dataclass
class RuleRun:
    """What one rule's evaluation did (for logs, tests and the live banner)."""

    rule: AlertRule
    steps: list[Step] = field(default_factory=list)
    notifications: int = 0  # rows offered to the outbox


# --- silences ---------------------------------------------------------------------------------


def active_silences(now: dt.datetime) -> list[tuple[Matcher, str]]:
    """Matchers of every silence in force and every maintenance window open at ``now``."""
    out = [
        (s.matcher(), wording.SILENCE.format(author=s.author, comment=s.comment))
        for s in Silence.objects.filter(starts_at__lte=now, ends_at__gt=now)
    ]
    for w in MaintenanceWindow.objects.filter(enabled=True):
        try:
            window = window_open_at(
                expr=w.cron, tz=w.time_zone, duration=dt.timedelta(minutes=w.duration_minutes), at=now
            )
        except CronError:
            log.warning("maintenance window %s has an unusable schedule; ignored", w.pk)
            continue
        if window is not None:
            out.append((w.matcher(), wording.WINDOW.format(name=w.name, until=f"{window[1]:%Y-%m-%d %H:%M}")))
    return out


# --- evaluation -------------------------------------------------------------------------------


def evaluate_rules(*, facts: Facts, now: dt.datetime, rules: list[AlertRule] | None = None) -> list[RuleRun]:
    """Evaluate every enabled rule against ``facts``. A failing rule is logged and skipped."""
    rules = rules if rules is not None else list(AlertRule.objects.filter(enabled=True).prefetch_related("channels"))
    silences = active_silences(now)
    runs = []
    for rule in rules:
        try:
            observations = alert_rules.rule_evaluate(rule=rule, facts=facts, now=now)
            open_alerts = load_open_alerts(rule)
            observed = {o.target for o in observations}
            observations += [
                gone
                for a in open_alerts.values()
                if (gone := alert_rules.vanished(rule=rule, facts=facts, target=a.target, observed=observed))
            ]
            runs.append(
                apply_observations(
                    rule=rule, observations=observations, open_alerts=open_alerts, silences=silences, now=now
                )
            )
        except Exception:
            log.exception("alert rule %s (%s) failed; skipped this time", rule.pk, rule.name)
    return runs


def load_open_alerts(rule: AlertRule) -> dict[str, Alert]:
    alerts = list(Alert.objects.filter(rule=rule, state__in=Alert.OPEN))
    for a in alerts:
        a.rule = rule  # the payloads read it: no query per alert
    return {a.fingerprint: a for a in alerts}


def apply_observations(
    *,
    rule: AlertRule,
    observations: list[Observation],
    open_alerts: dict[str, Alert],
    silences: list[tuple[Matcher, str]],
    now: dt.datetime,
) -> RuleRun:
    """Take the steps the observations call for, and write their notifications, in one
    transaction. ``open_alerts`` is this caller's view of the rule's open alerts; it may be
    stale (another monitor moved on): steps are then refused by the CAS and skipped."""
    run = RuleRun(rule)
    by_target = {a.target: a for a in open_alerts.values()}
    to_open: list[tuple[Observation, str]] = []
    with transaction.atomic():
        for obs in observations:
            if obs.value is None:
                continue
            alert = by_target.get(obs.target)
            if alert is None:
                # The common case, every queue that is fine: decided without any further work.
                if alert_rules.next_step(rule=rule, phase=None, obs=obs, now=now) == alert_rules.OPEN:
                    to_open.append((obs, alert_rules.silenced_by(silences, rule_id=rule.pk, target=obs.target)))
                continue
            step = _advance(
                rule, alert, obs, alert_rules.silenced_by(silences, rule_id=rule.pk, target=obs.target), now
            )
            if step is not None:
                run.steps.append(step)
        run.steps += _open_alerts(rule, to_open, now)
        run.notifications = _write_notifications(rule, [s for s in run.steps if s.notify], now)
    return run


def _new_alert(rule: AlertRule, obs: Observation, silenced: str, now: dt.datetime) -> Alert:
    """An alert as it is once opened: pending, or firing at once when the rule has nothing to
    wait for (so a mass incident costs a few bulk inserts, not a CAS per alert)."""
    t = obs.target
    fire = (
        alert_rules.next_step(rule=rule, phase=alert_rules.Phase(alert_rules.PENDING, now), obs=obs, now=now)
        == alert_rules.FIRE
    )
    notify = fire and not silenced
    return Alert(
        rule=rule,
        fingerprint=alert_rules.fingerprint(rule_id=rule.pk, target=t),
        connection=t.connection,
        prefix=t.prefix,
        queue=t.queue,
        item=t.item,
        state=Alert.FIRING if fire else Alert.PENDING,
        version=1 if fire else 0,
        pending_since=now,
        started_at=now if fire else None,
        value_start=obs.value,
        value_last=obs.value,
        summary=obs.summary,
        observed_at=now,
        silenced_by=silenced if fire else "",
        notified=notify,
        last_notified_at=now if notify else None,
    )


def _opening_events(alert: Alert, now: dt.datetime) -> list[AlertEvent]:
    events = [
        AlertEvent(alert=alert, seq=0, state=Alert.PENDING, at=now, value=alert.value_start, summary=alert.summary)
    ]
    if alert.state == Alert.FIRING:
        events.append(
            AlertEvent(alert=alert, seq=1, state=Alert.FIRING, at=now, value=alert.value_start, summary=alert.summary)
        )
    return events


def _open_alerts(rule: AlertRule, items: list[tuple[Observation, str]], now: dt.datetime) -> list[Step]:
    """Open new alerts in bulk. The unique index on open fingerprints refuses an alert another
    monitor opened meanwhile; then each is opened on its own and the refused ones skipped."""
    alerts = [_new_alert(rule, obs, silenced, now) for obs, silenced in items]
    if not alerts:
        return []
    try:
        with transaction.atomic():  # a savepoint, so a refusal leaves the outer transaction usable
            Alert.objects.bulk_create(alerts)
            AlertEvent.objects.bulk_create([e for a in alerts for e in _opening_events(a, now)])
        opened = alerts
    except IntegrityError:
        opened = [a for a in (_new_alert(rule, obs, silenced, now) for obs, silenced in items) if _open_one(a, now)]
    return [Step(a, Notification.FIRING if a.notified else "") for a in opened if a.state == Alert.FIRING]


def _open_one(alert: Alert, now: dt.datetime) -> bool:
    try:
        with transaction.atomic():
            alert.save()
            AlertEvent.objects.bulk_create(_opening_events(alert, now))
    except IntegrityError:
        log.info("alert %s was opened by another monitor; skipped", alert.fingerprint)
        return False
    return True


def _cas(alert: Alert, *, event: str, value: float | None, note: str, now: dt.datetime, **changes) -> bool:
    """Move ``alert`` on if nobody else did since we read it; record the step as an event."""
    done = Alert.objects.filter(pk=alert.pk, version=alert.version).update(version=F("version") + 1, **changes)
    if not done:
        log.info("alert %s moved on elsewhere (another monitor); step skipped", alert.pk)
        return False
    alert.version += 1
    for name, v in changes.items():
        setattr(alert, name, v)
    AlertEvent.objects.create(alert=alert, seq=alert.version, state=event, at=now, value=value, summary=note)
    return True


def _advance(rule: AlertRule, alert: Alert, obs: Observation, silenced: str, now: dt.datetime) -> Step | None:
    phase = alert_rules.Phase(alert.state, alert.pending_since, alert.clear_since)
    step = alert_rules.next_step(rule=rule, phase=phase, obs=obs, now=now)
    if step == alert_rules.DROP:
        Alert.objects.filter(pk=alert.pk, version=alert.version).delete()  # only if still as we saw it
        return None
    if step == alert_rules.FIRE:
        notify = "" if silenced else Notification.FIRING
        ok = _cas(
            alert,
            event=Alert.FIRING,
            value=obs.value,
            note=obs.summary,
            now=now,
            state=Alert.FIRING,
            started_at=now,
            value_start=obs.value,
            value_last=obs.value,
            summary=obs.summary,
            observed_at=now,
            silenced_by=silenced,
            notified=bool(notify),
            last_notified_at=now if notify else None,
        )
        return Step(alert, notify) if ok else None
    if step == alert_rules.START_CLEAR:
        Alert.objects.filter(pk=alert.pk, version=alert.version).update(clear_since=now)
        alert.clear_since = now
        return None
    if step == alert_rules.RESOLVE:
        notify = Notification.RESOLVED if rule.notify_resolved and alert.notified else ""
        ok = _cas(
            alert,
            event=Alert.RESOLVED,
            value=obs.value,
            note=obs.summary,
            now=now,
            state=Alert.RESOLVED,
            resolved_at=now,
            value_end=obs.value,
            value_last=obs.value,
            summary=obs.summary,
            observed_at=now,
        )
        return Step(alert, notify) if ok else None
    if alert.state == Alert.FIRING and not obs.clear:
        return _still_firing(rule, alert, obs, silenced, now)
    return None


def _still_firing(rule: AlertRule, alert: Alert, obs: Observation, silenced: str, now: dt.datetime) -> Step | None:
    """Bookkeeping of a firing alert, and its notification if one is due: the first one when
    it fired while silenced and the silence is over, or a repeat."""
    changes = {}
    if alert.clear_since is not None:
        changes["clear_since"] = None  # bad again within keep-firing: the clock starts over
    if silenced != alert.silenced_by:
        changes["silenced_by"] = silenced
    moved = obs.value != alert.value_last or obs.summary != alert.summary
    # Values of a firing alert (an age, a rate) change on every evaluation: store them at most
    # once a minute unless something else changes, not one UPDATE per alert every few seconds.
    if moved and (changes or alert.observed_at is None or now - alert.observed_at >= VALUE_REFRESH):
        changes.update(value_last=obs.value, summary=obs.summary, observed_at=now)
    notify = ""
    if not silenced:
        if not alert.notified:
            notify = Notification.FIRING
        elif alert_rules.repeat_due(rule=rule, last_notified=alert.last_notified_at, now=now):
            notify = Notification.REPEAT
    if notify:
        changes.update(value_last=obs.value, summary=obs.summary, observed_at=now)  # the notification shows them
        ok = _cas(
            alert,
            event=notify if notify == Notification.REPEAT else "notified",
            value=obs.value,
            note=obs.summary,
            now=now,
            notified=True,
            last_notified_at=now,
            **changes,
        )
        return Step(alert, notify) if ok else None
    if changes:
        # Plain bookkeeping, no step: no version bump, so it never races a real transition.
        Alert.objects.filter(pk=alert.pk, version=alert.version).update(**changes)
        for name, v in changes.items():
            setattr(alert, name, v)
    return None


# --- notifications ----------------------------------------------------------------------------


def _iso(t: dt.datetime | None) -> str | None:
    return t.astimezone(dt.UTC).isoformat().replace("+00:00", "Z") if t else None


def alert_url(alert: Alert) -> str:
    return getattr(settings, "QUEUEWATCH_BASE_URL", "").rstrip("/") + alert.get_absolute_url()


def alert_payload(alert: Alert) -> dict:
    return {
        "fingerprint": alert.fingerprint,
        "target": alert.target.as_dict(),
        "state": alert.state,
        "value": alert.value_last,
        "threshold": alert.rule.threshold,
        "summary": alert.summary,
        "url": alert_url(alert),
        "started_at": _iso(alert.started_at),
        "ended_at": _iso(alert.resolved_at),
        "silenced": bool(alert.silenced_by),
    }


def _subject(rule: AlertRule, kind: str, alerts: list[Alert]) -> str:
    status = "RESOLVED" if kind == Notification.RESOLVED else "FIRING"
    targets = ", ".join(a.target_label for a in alerts[:3]) + (
        f" and {len(alerts) - 3} more" if len(alerts) > 3 else ""
    )
    return f"[{status}:{len(alerts)}] {rule.name} — {targets}"[:300]


def _write_notifications(rule: AlertRule, steps: list[Step], now: dt.datetime) -> int:
    """One notification per channel and kind, grouping every target of this evaluation."""
    channels = [c for c in rule.channels.all() if c.enabled]
    if not steps or not channels:
        return 0
    by_kind: dict[str, list[Alert]] = {}
    for s in steps:
        by_kind.setdefault(s.notify, []).append(s.alert)
    rows = []
    for kind, alerts in by_kind.items():
        alerts.sort(key=lambda a: a.fingerprint)
        steps_key = ",".join(f"{a.fingerprint}:{a.pk}:{a.version}" for a in alerts)
        key = steps_key if len(alerts) == 1 else f"{rule.pk}:{kind}:{hashlib.sha1(steps_key.encode()).hexdigest()[:24]}"
        payload = {
            "status": "resolved" if kind == Notification.RESOLVED else "firing",
            "kind": kind,
            "group_key": f"rule:{rule.pk}",
            "rule": {
                "id": rule.pk,
                "name": rule.name,
                "kind": rule.kind,
                "severity": rule.severity,
                "condition": rule.condition,
            },
            "alerts": [alert_payload(a) for a in alerts],
        }
        rows += [
            Notification(
                channel=c,
                idempotency_key=key[:200],
                kind=kind,
                subject=_subject(rule, kind, alerts),
                payload=payload,
                next_attempt_at=now,
                created_at=now,
            )
            for c in channels
        ]
    # A row whose key is already there (written by another monitor) is skipped by the database.
    Notification.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)
