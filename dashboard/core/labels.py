"""How the codes the data carries are named on pages, in the active language: job states,
task and alert states, audit outcomes, severities, check statuses, action names. The code
itself stays what the data, the API, CSS classes and /metrics use; only its display is
translated. Templates use it through ``{{ code|label }}`` (``templatetags/translated.py``).
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy, pgettext_lazy

LABELS = {
    # job states (queues.keys.BROWSABLE_STATES, plus what a job page can show)
    "waiting": pgettext_lazy("job state", "waiting"),
    "active": pgettext_lazy("job state", "active"),
    "prioritized": pgettext_lazy("job state", "prioritized"),
    "delayed": pgettext_lazy("job state", "delayed"),
    "waiting-children": pgettext_lazy("job state", "waiting-children"),
    "completed": pgettext_lazy("job state", "completed"),
    "failed": pgettext_lazy("job state", "failed"),
    "paused": pgettext_lazy("job state", "paused"),
    "schedulers": pgettext_lazy("count", "schedulers"),  # queue settings: jobs per state, and job schedulers
    "unknown": pgettext_lazy("status", "unknown"),
    # bulk task states
    "pending": pgettext_lazy("status", "pending"),
    "running": pgettext_lazy("status", "running"),
    "done": pgettext_lazy("status", "done"),
    "cancelled": pgettext_lazy("status", "cancelled"),
    # alert states
    "firing": pgettext_lazy("alert state", "firing"),
    "resolved": pgettext_lazy("alert state", "resolved"),
    # notification states
    "sending": pgettext_lazy("status", "sending"),
    "sent": pgettext_lazy("status", "sent"),
    # audit outcomes
    "ok": pgettext_lazy("outcome", "ok"),
    "partial": pgettext_lazy("outcome", "partial"),
    "refused": pgettext_lazy("outcome", "refused"),
    "error": pgettext_lazy("outcome", "error"),
    "started": pgettext_lazy("outcome", "started"),
    # audit "via"
    "page": pgettext_lazy("via", "page"),
    "api": pgettext_lazy("via", "API"),
    "task": pgettext_lazy("via", "task"),
    "admin": pgettext_lazy("via", "admin"),
    "cli": pgettext_lazy("via", "cli"),
    # severities
    "info": pgettext_lazy("severity", "info"),
    "warning": pgettext_lazy("severity", "warning"),
    "critical": pgettext_lazy("severity", "critical"),
    # health check statuses
    "pass": pgettext_lazy("status", "pass"),
    "fail": pgettext_lazy("status", "fail"),
    # actions
    "retry": pgettext_lazy("action", "retry"),
    "discard": pgettext_lazy("action", "discard"),
    "promote": pgettext_lazy("action", "promote"),
    "redrive": pgettext_lazy("action", "redrive"),
    "edit-retry": pgettext_lazy("action", "edit and retry"),
    "clean": pgettext_lazy("action", "clean"),
    # periods of the per-job-name timings (dashboard.live.timing_points WINDOWS and RANGES)
    "1m": gettext_lazy("1m"),
    "5m": gettext_lazy("5m"),
    "15m": gettext_lazy("15m"),
    "1h": pgettext_lazy("period", "1h"),
    "24h": pgettext_lazy("period", "24h"),
    "7d": pgettext_lazy("period", "7d"),
    "90d": pgettext_lazy("period", "90d"),
    # children of a flow job
    "processed": pgettext_lazy("children", "processed"),
    "ignored": pgettext_lazy("children", "ignored"),
    # why a bulk task left a job as it was (the outcomes of queues.actions, edit_retry, job_schema,
    # bulk and redrive; a task's skipped_by)
    "missing": pgettext_lazy("left as it was", "no longer exists"),
    "locked": pgettext_lazy("left as it was", "held by a worker"),
    "wrong_state": pgettext_lazy("left as it was", "moved meanwhile"),
    "gone": pgettext_lazy("left as it was", "moved before the task reached it"),
    "scheduler_iteration": pgettext_lazy("left as it was", "a job scheduler's current run"),
    "not_a_job": pgettext_lazy("left as it was", "not a job"),
    "changed": pgettext_lazy("left as it was", "changed meanwhile"),
    "unchanged": pgettext_lazy("left as it was", "the patch changes nothing"),
    "invalid_data": pgettext_lazy("left as it was", "refused by the queue's schema"),
    "bad_data": pgettext_lazy("left as it was", "its data is not JSON"),
    "too_big": pgettext_lazy("left as it was", "its data would grow too much"),
    "target_exists": pgettext_lazy("left as it was", "an earlier copy is still in the source queue"),
    "deduplicated": pgettext_lazy("left as it was", "deduplicated in the source queue"),
    "no_source": pgettext_lazy("left as it was", "no source queue known"),
    "unknown_target": pgettext_lazy("left as it was", "the source queue does not exist"),
    "not_enveloped": pgettext_lazy("left as it was", "not in the dead-letter queue's envelope"),
    # what the copies of a redrive kept (queues.redis.redrive.kept_items; a task's kept_by)
    "job_id": pgettext_lazy("kept", "their id"),
    "new_id": pgettext_lazy("kept", "a new id"),
    "unwrapped": pgettext_lazy("kept", "the original data, unwrapped from the dead letter"),
    "deduplication": pgettext_lazy("kept", "their deduplication id"),
    "priority": pgettext_lazy("kept", "their priority"),
    "delay": pgettext_lazy("kept", "their delay"),
    "lifo": pgettext_lazy("kept", "lifo"),
}


def in_label_order(counts: dict) -> list[tuple]:
    """The ``(code, n)`` of counts by code in the order their labels are listed above, codes
    without a label last (by code): the stored order is not kept (PostgreSQL's jsonb orders
    an object's keys its own way)."""
    order = {code: at for at, code in enumerate(LABELS)}
    return sorted(counts.items(), key=lambda item: (order.get(item[0], len(order)), str(item[0])))


def label(code) -> str:
    """The display name of ``code``; the code itself when it has none (data we do not know)."""
    found = LABELS.get(code) if isinstance(code, str) else None
    return str(found) if found is not None else code
