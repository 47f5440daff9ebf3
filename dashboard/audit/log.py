"""The audit log: one function writes it, one query filters it, one generator exports it.

Every mutation of the monitored Redis (pages, API, background tasks) goes through ``record``,
so "who did what, when, why, with what result" has a single shape. Everything else worth a
record — configuration changes (rules, channels, silences, windows, admin edits), send-test,
token issuance and revocation, role changes and refusals (role, CSRF, validation) — goes
through ``record_event``: the same rows, with no queue, and what was acted on in ``selection``
(``{"object": "channel 3 “ops”"}``)."""

from __future__ import annotations

import csv
import datetime as dt
from collections.abc import Iterator

from django.db.models import Q, QuerySet

from dashboard.audit.bounds import bounded
from dashboard.audit.models import AuditEntry
from dashboard.core.db import storable
from queues.keys import QueueRef
from queues.messages import Joined, Message, as_data

CSV_COLUMNS = (
    "at",
    "username",
    "via",
    "action",
    "connection",
    "prefix",
    "queue",
    "job_ids",
    "selection",
    "reason",
    "affected",
    "outcome",
    "message",
    "task",
)
MAX_IDS_STORED = 1000  # a selection of more ids is summarised by its count, not stored whole


def record(
    *,
    user,
    via: str,
    action: str,
    queue: QueueRef,
    outcome: str,
    affected: int = 0,
    job_ids=(),
    selection: dict | None = None,
    reason: str = "",
    message: str = "",
    task=None,
) -> AuditEntry:
    """One row. A ``message`` marked for translation (``queues.messages``) is also kept with its
    id and parameters, so the log shows it in each reader's language."""
    job_ids = list(job_ids)
    selection = bounded(selection or {})  # never megabytes, whatever was acted on
    if len(job_ids) > MAX_IDS_STORED:
        selection["ids_total"] = len(job_ids)
        job_ids = job_ids[:MAX_IDS_STORED]
    message_data = as_data(message, limit=500) if isinstance(message, (Message, Joined)) else None
    return AuditEntry.objects.create(
        user=user if getattr(user, "pk", None) else None,
        username=storable(getattr(user, "username", "") or ""),
        via=via,
        action=storable(action),
        connection=storable(queue.connection),
        prefix=storable(queue.prefix),
        queue=storable(queue.name),
        job_ids=storable(job_ids),
        selection=storable(selection),
        reason=storable(reason),
        affected=affected,
        outcome=outcome,
        message=storable(message[:2000]),
        message_data=storable(message_data),
        task=task,
    )


NO_QUEUE = QueueRef("", "", "")


def record_event(
    *,
    user,
    via: str,
    action: str,
    outcome: str = AuditEntry.OK,
    target: str = "",
    message: str = "",
    details: dict | None = None,
) -> AuditEntry:
    """A non-queue event: ``action`` like ``channel.update``, ``token.issue``, ``refused.role``;
    ``target`` names the object (``channel 3 “ops”``)."""
    selection = {"object": target[:500], **(details or {})} if target or details else {}
    return record(
        user=user, via=via, action=action[:30], queue=NO_QUEUE, outcome=outcome, selection=selection, message=message
    )


def record_refusal(*, user, kind: str, via: str, target: str, message: str) -> AuditEntry:
    """A refused request: ``refused.role``, ``refused.csrf``, ``refused.validation``."""
    return record_event(
        user=user, via=via, action=f"refused.{kind}", outcome=AuditEntry.REFUSED, target=target[:500], message=message
    )


def record_change(
    request, *, action: str, obj, outcome: str = AuditEntry.OK, message: str = "", details: dict | None = None
) -> AuditEntry:
    """A configuration change (or a refused one) made from a page: ``rule.update``, ``channel.delete``…"""
    target = f"{obj._meta.verbose_name} {obj.pk or ''} “{obj}”" if obj is not None else ""
    return record_event(
        user=request.user, via="page", action=action, outcome=outcome, target=target, message=message, details=details
    )


def form_errors(form) -> str:
    """A refused form's errors, for the audit message (field: message; …)."""
    return "; ".join(f"{field}: {' '.join(errors)}" for field, errors in form.errors.items())


def admin_edit(entry) -> AuditEntry:
    """A Django admin ``LogEntry`` (add, change, delete of any model) as an audit row."""
    verb = {1: "add", 2: "change", 3: "delete"}.get(entry.action_flag, "edit")
    kind = entry.content_type.model if entry.content_type_id else "object"
    return record_event(
        user=entry.user,
        via="admin",
        action=f"admin.{verb}",
        target=f"{kind} {entry.object_id or ''} “{entry.object_repr}”",
        message=entry.get_change_message(),
    )


def filtered(params, *, only: Q | None) -> QuerySet:
    """Audit rows matching the page's filters (user, action, queue, outcome, since, until),
    among ``only`` (the reader's: ``dashboard.accounts.scopes.audit_filter``; None: all)."""
    rows = AuditEntry.objects.all() if only is None else AuditEntry.objects.filter(only)
    for field in ("username", "action", "outcome", "via", "connection"):
        value = params.get(field, "").strip()
        if value:
            rows = rows.filter(**{field: value})
    queue = params.get("queue", "").strip()
    if queue:
        rows = rows.filter(queue__icontains=queue)
    for name, lookup in (("since", "at__gte"), ("until", "at__lt")):
        day = _date(params.get(name, ""))
        if day is not None:
            if name == "until":
                day += dt.timedelta(days=1)  # "until" a day includes that day
            rows = rows.filter(**{lookup: day})
    return rows


def _date(value: str) -> dt.datetime | None:
    try:
        return dt.datetime.combine(dt.date.fromisoformat(value.strip()), dt.time(), tzinfo=dt.UTC)
    except ValueError:
        return None


class _Echo:
    def write(self, value):
        return value


CSV_BATCH = 500  # rows read from the database, and sent, at a time


def csv_lines(rows) -> Iterator[str]:
    """The rows as CSV for a streaming response: the header, then one chunk of lines per
    database batch. Cells that a spreadsheet would run as a formula are prefixed with a quote."""
    writer = csv.writer(_Echo())
    yield writer.writerow(CSV_COLUMNS)
    batch: list[str] = []
    for row in rows.iterator(chunk_size=CSV_BATCH):
        batch.append(
            writer.writerow(
                [
                    _cell(v)
                    for v in (
                        row.at.isoformat(),
                        row.username,
                        row.via,
                        row.action,
                        row.connection,
                        row.prefix,
                        row.queue,
                        " ".join(row.job_ids),
                        _selection_text(row.selection),
                        row.reason,
                        row.affected,
                        row.outcome,
                        row.message,
                        row.task_id or "",
                    )
                ]
            )
        )
        if len(batch) == CSV_BATCH:
            yield "".join(batch)
            batch = []
    if batch:
        yield "".join(batch)


def _selection_text(selection: dict) -> str:
    return "; ".join(f"{k}={v}" for k, v in sorted(selection.items()) if v not in (None, "", []))


def _cell(value):
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value
