from django import template
from django.utils.translation import gettext_lazy as _

from dashboard.actions import registry
from dashboard.actions.models import BulkTask
from dashboard.connections.dead_letters import is_dead_letter_queue
from queues.states import CLEANABLE_STATES, FINISHED_STATES, state_allows

register = template.Library()

# The queue page previews a clean with the bulk filter's "finished before", so it offers the
# cleanable states that are finished; the API cleans every cleanable state (queues.states).
PAGE_CLEAN_STATES = tuple(s for s in CLEANABLE_STATES if s in FINISHED_STATES)


@register.filter
def allows(state, operation):
    """Whether ``operation`` takes jobs from ``state`` (``queues.states``): ``state|allows:"retry"``."""
    return state_allows(str(state), operation)


@register.filter
def finished_state(state) -> bool:
    """Whether jobs in ``state`` have finished (scored by finish time: failure reason, "finished between")."""
    return state in FINISHED_STATES


@register.simple_tag
def page_clean_states():
    return PAGE_CLEAN_STATES


@register.filter
def has_jobs_in(counts, states) -> bool:
    """Whether a snapshot's ``counts`` has a job in any of ``states``."""
    return any((counts or {}).get(s) for s in states)


@register.simple_tag
def active_task(queue):
    """The pending or running bulk task of a queue (at most one), for a link to its progress."""
    return BulkTask.objects.filter(
        connection=queue.connection, prefix=queue.prefix, queue=queue.name, state__in=BulkTask.ACTIVE_STATES
    ).first()


@register.simple_tag(takes_context=True)
def offered_actions(context, scope, *, queue, job=None, snap=None, role=None):
    """The registered actions of ``scope`` ("job" or "queue") to offer on this page to this
    user (or, for a live fragment, to anyone with ``role``), in registration order
    (``dashboard.actions.registry``)."""
    where = registry.Offer(queue=queue, is_dlq=is_dead_letter_queue(queue.name), job=job, snap=snap)
    return registry.offered(scope, where, user=context.get("user"), role=role or None, queue=queue)


@register.simple_tag(takes_context=True)
def offered_node_actions(context, *, queue, node, names):
    """The job actions among ``names`` to offer this user on a node of a flow tree."""
    return [a for a in offered_actions(context, "job", queue=queue, job=node) if a.name in names]


# How the audit log names the keys of an entry's details (``AuditEntry.selection``). A key not
# listed is shown as its code. Times (``*_ms``) are shown in the product's time zone.
DETAIL_LABELS = {
    "ids": _("jobs"),
    "state": _("state"),
    "name": _("job name"),
    "reason_contains": _("failure reason contains"),
    "fingerprint": _("error group"),
    "finished_from_ms": _("finished from"),
    "finished_to_ms": _("finished until"),
    "before_ms": _("jobs from before"),
    "rate": _("paced at (jobs/s)"),
    "older_than_ms": _("older than"),
    "reset_counters": _("counters reset"),
    "job_id": _("job id"),
    "delayed": _("delayed too"),
    "skipped_by": _("skipped, by reason"),
    "kept_by": _("the copies kept"),
    "object": _("object"),
    "from": _("from"),
    "to": _("to"),
    "scopes": _("scopes"),
    "expires": _("expires"),
    "counts": _("counts"),
    "ids_total": _("jobs selected"),
    "concurrency": _("concurrency"),
    "limit": _("limit"),
    "max": _("at most"),
    "duration": _("per"),
    "scheduler": _("scheduler"),
    "next_job_id": _("next job id"),
    "opts": _("options"),
    "patch_keys": _("patched keys"),
    "schema_bytes": _("schema size (bytes)"),
    "patch": _("patch"),
    "growth": _("data added (bytes)"),
    "legacy": _("legacy entry"),
    "priority": _("priority"),
    "delay_ms": _("ready in"),
    "dedup_id": _("Deduplication id"),
}
# Details in milliseconds that are spans of time, not moments (shown as durations).
DURATIONS = ("older_than_ms", "delay_ms")
SHOWN_IDS = 20  # ids listed in a row; the rest counted


@register.simple_tag
def audit_details(selection) -> list[dict]:
    """An audit entry's details as (label, kind, value) for the log page: ids as a list, times
    and durations readable, the rest as written. "change" has its own view (audit_change.html)."""
    out = []
    for key, value in (selection or {}).items():
        if key in ("change", "after"):
            continue
        kind = "text"
        if key == "ids" and isinstance(value, list):
            kind, value = "ids", {"shown": value[:SHOWN_IDS], "more": max(0, len(value) - SHOWN_IDS)}
        elif key.endswith("_ms") and isinstance(value, int):
            kind = "duration" if key in DURATIONS else "time"
        elif isinstance(value, bool):
            kind = "flag"
        # A key without a label (data we do not know) is shown as the code it is.
        out.append(
            {"label": DETAIL_LABELS.get(key, key), "code": key not in DETAIL_LABELS, "kind": kind, "value": value}
        )
    return out
