"""The columns every task row run under a lease has (``dashboard.core.leased_runner``): its
state, a cancel request, who claimed it and when it last said it is alive, when it started and
ended. Bulk tasks and background searches are such rows."""

from __future__ import annotations

from django.db import models


class LeasedTask(models.Model):
    PENDING, RUNNING, DONE, CANCELLED, FAILED = "pending", "running", "done", "cancelled", "failed"
    STATES = [(s, s) for s in (PENDING, RUNNING, DONE, CANCELLED, FAILED)]
    ACTIVE_STATES = (PENDING, RUNNING)

    state = models.CharField(max_length=10, choices=STATES, default=PENDING)
    cancel_requested = models.BooleanField(default=False)
    claimed_by = models.CharField(max_length=100, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
