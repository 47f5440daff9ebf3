"""Alerting work the monitor runs on its schedule (see ``Monitor.periodic_jobs``): gather the
facts rules need from what the leader already knows, evaluate, publish the firing-alerts
banner to every page; and the optional daily digest.

Facts come from the leader's state: per-queue signals of its last tick, the connections it
found down, its last health report (the settings its checks read), and — only when an enabled rule's
kind needs it (``RuleKind.needs``) — data read for it, e.g. the job schedulers of queues that
have any (one small pipeline per such queue).
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings

from dashboard.alerts.engine import evaluate_rules, firing_summary
from dashboard.alerts.models import Alert, AlertRule, Channel, Notification
from dashboard.live import channels as live
from dashboard.live import fragments
from queues import alert_kinds, health
from queues.alert_rules import ConnectionFacts, Facts


def connection_facts(
    *, names: list[str], down: dict[str, str], report, sources: dict[str, str] | None = None
) -> dict[str, ConnectionFacts]:
    """Reachability from the monitor (current), server settings from the last health report
    (what each check keeps is its catalogue entry's ``alert_facts``). ``sources``: each
    connection's source kind (Redis when not given)."""
    kinds = sources or {}
    out = {
        n: ConnectionFacts(reachable=n not in down, error=down.get(n, ""), source=kinds.get(n, "redis")) for n in names
    }
    for result in report.results if report is not None else []:
        cf = out.get(result.connection)
        if cf is None or result.status == health.UNKNOWN:
            continue
        for fact, key in result.check.alert_facts:
            setattr(cf, fact, result.details.get(key))
    return out


def evaluate(
    *, signals: list, registry, down: dict[str, str], report, now: dt.datetime, publisher=None, complete: bool = True
) -> list:
    """One evaluation of every enabled rule, then the banner every page shows. ``complete``:
    ``signals`` covers every queue of every reachable connection (see ``Facts.complete``)."""
    rules = list(AlertRule.objects.filter(enabled=True).prefetch_related("channels"))
    sources = {n: registry.source(n).kind for n in registry.names}
    connections = connection_facts(names=registry.names, down=down, report=report, sources=sources)
    facts = Facts(queues=signals, connections=connections, complete=complete)
    for need in alert_kinds.needs_of(rules):
        facts.needs[need.name] = need.gather(signals=signals, source_for=registry.source, down=down, now=now)
    runs = evaluate_rules(facts=facts, now=now, rules=rules)
    if publisher is not None:
        publisher.publish(live.ALL, *fragments.firing_alerts(firing_summary()))
    return runs


def write_digest(*, now: dt.datetime, channel_names: list[str] | None = None) -> int:
    """The last day's alerts as one DIGEST notification per named channel. The idempotency key
    is the digest's day, so a second monitor (or a restart) does not send it twice."""
    names = channel_names if channel_names is not None else settings.QUEUEWATCH_DIGEST_CHANNELS
    channels = list(Channel.objects.filter(name__in=names, enabled=True))
    if not channels:
        return 0
    since = now - dt.timedelta(days=1)
    alerts = list(Alert.objects.filter(started_at__gte=since).select_related("rule").order_by("started_at"))
    still = Alert.objects.filter(state=Alert.FIRING).count()
    payload = {
        "status": "digest",
        "kind": Notification.DIGEST,
        "group_key": "digest",
        "since": since.isoformat(),
        "until": now.isoformat(),
        "firing_now": still,
        "alerts": [
            {
                "rule": a.rule.name,
                "target": a.target.as_dict(),
                "state": a.state,
                "summary": a.summary,
                "started_at": a.started_at.isoformat(),
                "ended_at": a.resolved_at.isoformat() if a.resolved_at else None,
            }
            for a in alerts
        ],
    }
    subject = (
        f"Queuewatch digest: {len(alerts)} alert{'s' if len(alerts) != 1 else ''} in the last 24 h, {still} firing now"
    )
    key = f"digest:{now:%Y-%m-%d}"
    rows = [
        Notification(
            channel=c,
            idempotency_key=key,
            kind=Notification.DIGEST,
            subject=subject,
            payload=payload,
            next_attempt_at=now,
            created_at=now,
        )
        for c in channels
    ]
    Notification.objects.bulk_create(rows, ignore_conflicts=True)
    return Notification.objects.filter(idempotency_key=key).count()
