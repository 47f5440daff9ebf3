"""The audit log's row: one per mutation attempt, refusal or change (written by
``dashboard.audit.log``). Part of the ``dashboard`` app: its table is ``dashboard_auditentry``."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class AuditEntry(models.Model):
    """One row per mutation attempt that reached the monitored Redis (or was refused by it):
    who, when, what, why, how many and how it went. Written for pages, the API and tasks."""

    OK, PARTIAL, REFUSED, ERROR, STARTED = "ok", "partial", "refused", "error", "started"
    OUTCOMES = [(s, s) for s in (OK, PARTIAL, REFUSED, ERROR, STARTED)]

    at = models.DateTimeField(default=timezone.now, db_index=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    username = models.CharField(max_length=150, help_text="Kept if the user is deleted.")
    via = models.CharField(max_length=10)  # "page", "api" or "task"
    action = models.CharField(max_length=30, db_index=True)
    connection = models.CharField(max_length=40)
    prefix = models.CharField(max_length=200)
    queue = models.CharField(max_length=200, db_index=True)
    job_ids = models.JSONField(default=list, blank=True)
    selection = models.JSONField(default=dict, blank=True)
    reason = models.TextField(blank=True)
    affected = models.IntegerField(default=0)
    outcome = models.CharField(max_length=10, choices=OUTCOMES)
    message = models.TextField(blank=True)
    # The message's id and parameters (``queues.messages.as_data``) where it was marked for
    # translation: the log shows it in the reader's language; ``message`` keeps the English text
    # for the CSV export, search and older rows.
    message_data = models.JSONField(null=True, blank=True)
    task = models.ForeignKey(
        "dashboard.BulkTask", null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_entries"
    )

    class Meta:
        ordering = ["-at", "-id"]
