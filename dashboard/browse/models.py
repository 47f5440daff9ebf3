"""Background searches by job data: the database rows of a search that goes on with the page
closed (``dashboard.browse.search_runner`` runs them)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from dashboard.core.leased_task import LeasedTask


class SearchTask(LeasedTask):
    """A search by data (``path = value``) over one state of one queue, walked by the leading
    monitor in bounded steps (``QUEUEWATCH_SCAN_SAMPLE`` jobs each, paced by
    ``QUEUEWATCH_SEARCH_PACE_MS``). The row is the task's whole state, as a bulk task's is: who
    runs it under the lease of ``dashboard.core.leased_runner``, where the next step starts
    (``offset``), how far it got, and the matches found so far (at most ``MAX_KEPT``). Only its
    owner sees it."""

    MAX_KEPT = 200  # matches kept: the search ends there (narrow the query to see others)

    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    connection = models.CharField(max_length=40)
    prefix = models.CharField(max_length=200)
    queue = models.CharField(max_length=200)
    job_state = models.CharField(max_length=20)
    where = models.CharField(max_length=500)
    offset = models.PositiveIntegerField(default=0)  # where the next step starts
    examined = models.PositiveIntegerField(default=0)
    in_state = models.PositiveIntegerField(null=True, blank=True)  # the state's size at the last step
    steps = models.PositiveIntegerField(default=0)
    too_large = models.PositiveIntegerField(default=0)
    matches = models.JSONField(default=list, blank=True)  # light fields of each match, in list order
    error = models.TextField(blank=True)

    class Meta:
        indexes = [models.Index(fields=["state"]), models.Index(fields=["created_by", "state"])]

    @property
    def finished(self) -> bool:
        return self.state not in self.ACTIVE_STATES

    @property
    def capped(self) -> bool:
        return len(self.matches or []) >= self.MAX_KEPT

    @property
    def percent(self) -> int:
        if self.state == self.DONE and not self.capped:
            return 100
        if not self.in_state:
            return 0
        return min(100, int(100 * self.examined / self.in_state))
