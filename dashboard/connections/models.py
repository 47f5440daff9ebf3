"""An admin's confirmation of a dead-letter queue's envelope (``queues.dead_letters.Envelope``):
the database side of the dead-letter settings, read only by ``dashboard.connections.dead_letters``."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class DeadLetterEnvelope(models.Model):
    """Which field of a dead letter's data holds the original job's data (empty: none, the data
    is the original), and which hold its id and source queue; per dead-letter queue name, as
    ``QUEUEWATCH_DLQ_MAP``, which it overrides."""

    queue = models.CharField(max_length=200, unique=True)
    data_field = models.CharField(max_length=200, blank=True)
    id_field = models.CharField(max_length=200, blank=True)
    source_field = models.CharField(max_length=200, blank=True)
    confirmed_at = models.DateTimeField(default=timezone.now)
    confirmed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
