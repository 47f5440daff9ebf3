"""Silences take effect on the pages at once: when one is made or expired (or a maintenance
window added or deleted), the firing alerts it matches are marked as the next evaluation would
mark them, with the engine's own matching (``engine.active_silences``,
``queues.alert_rules.silenced_by``)."""

from __future__ import annotations

import datetime as dt

from dashboard.alerts.engine import active_silences
from dashboard.alerts.models import Alert
from queues import alert_rules


def relabel_silenced(now: dt.datetime) -> int:
    """Mark firing alerts silenced (or no longer) as of ``now``, so the chip and the pages tell
    the truth without waiting for the next evaluation. Plain bookkeeping, as the engine's own
    ``silenced_by`` updates: no version bump and no notification (whether one is owed is still
    judged by the evaluation, from ``notified``). How many alerts changed."""
    silences = active_silences(now)
    changed = 0
    fields = ("pk", "rule_id", "connection", "prefix", "queue", "item", "version", "silenced_by")
    for alert in Alert.objects.filter(state=Alert.FIRING).only(*fields):
        label = alert_rules.silenced_by(silences, rule_id=alert.rule_id, target=alert.target)
        if label != alert.silenced_by:
            changed += Alert.objects.filter(pk=alert.pk, version=alert.version).update(silenced_by=label)
    return changed
