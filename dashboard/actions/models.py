"""Bulk tasks and the audit log: the database rows of acting on jobs."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from dashboard.core.leased_task import LeasedTask


class BulkTask(LeasedTask):
    """A bulk action (retry, discard, promote, redrive…) over a fixed set of jobs, run in the
    background by the monitor. The row is the task's whole state: who claimed it (compare-and-
    swap on ``state``), its progress, and the domain runner's resumable cursor (``progress``),
    so a monitor killed half-way is replaced by one that resumes where the last save left off.
    At most one pending or running task per queue (a database constraint, not a check-then-act).
    """

    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=20)
    connection = models.CharField(max_length=40)
    prefix = models.CharField(max_length=200)
    queue = models.CharField(max_length=200)
    # What was chosen: {"ids": [...]} or a filter ({"state", "name", "reason_contains", ...}).
    selection = models.JSONField(default=dict)
    before_ms = models.BigIntegerField(help_text="Only jobs finished before this time (the confirmation).")
    rate = models.FloatField(null=True, blank=True, help_text="Jobs per second; empty means unpaced.")
    reset_counters = models.BooleanField(default=True)
    # edit-retry: the JSON merge patch applied to each job's stored data (fixed at confirmation).
    patch = models.JSONField(null=True, blank=True)
    reason = models.TextField()
    total = models.PositiveIntegerField(null=True, blank=True)
    moved = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    rate_now = models.FloatField(default=0.0)
    progress = models.JSONField(default=dict, blank=True)  # the domain runner's resumable state
    error = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["connection", "prefix", "queue"],
                condition=models.Q(state__in=("pending", "running")),
                name="one_active_bulk_task_per_queue",
            ),
        ]
        indexes = [models.Index(fields=["state"])]

    @property
    def done_count(self) -> int:
        return self.moved + self.skipped + self.failed

    @property
    def remaining(self) -> int | None:
        return None if self.total is None else max(0, self.total - self.done_count)

    @property
    def percent(self) -> int:
        if self.total is None and self.state != self.DONE:  # still counting: the engine's own figure
            return int((self.progress or {}).get("percent") or 0)
        if not self.total:
            return 100 if self.state == self.DONE else 0
        return min(100, int(100 * self.done_count / self.total))

    @property
    def eta_s(self) -> float | None:
        if self.state != self.RUNNING or not self.rate_now or self.remaining is None:
            return None
        return self.remaining / self.rate_now

    @property
    def finished(self) -> bool:
        return self.state not in self.ACTIVE_STATES


class TriageRule(models.Model):
    """An admin's rule for error triage (``queues.error_triage``): failure reasons matching
    ``pattern`` are of ``error_class``. Tried in ``position`` order before the built-in patterns."""

    CLASSES = [
        ("transient", "transient (worth retrying)"),
        ("permanent", "permanent (retrying wastes attempts)"),
        ("unknown", "unknown"),
    ]

    pattern = models.CharField(
        max_length=300,
        help_text="A regular expression, matched anywhere in the error message's first line, case-insensitive.",
    )
    error_class = models.CharField(max_length=10, choices=CLASSES)
    comment = models.CharField(max_length=200, blank=True)
    position = models.PositiveIntegerField(default=0, help_text="Rules are tried from the lowest position up.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["position", "id"]

    def __str__(self):
        return f"/{self.pattern}/ → {self.error_class}"

    def clean(self):
        from django.core.exceptions import ValidationError

        from queues.error_triage import validate_pattern

        problem = validate_pattern(self.pattern)
        if problem:
            raise ValidationError({"pattern": problem})

    def as_rule(self):
        from queues.error_triage import UserRule

        return UserRule(self.pattern, self.error_class, self.comment or self.pattern)


class QueueSchema(models.Model):
    """An admin's JSON Schema for the data of one queue's jobs (``queues.job_schema``): adding,
    duplicating and editing-and-retrying jobs of that queue refuse data that does not pass it.
    Set, replaced and removed through the ``set-schema``/``remove-schema`` actions (audited)."""

    connection = models.CharField(max_length=40)
    prefix = models.CharField(max_length=200)
    queue = models.CharField(max_length=200)
    schema = models.JSONField()
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    updated_by_name = models.CharField(max_length=150, blank=True, help_text="Kept if the user is deleted.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["connection", "prefix", "queue"], name="one_schema_per_queue")]

    def __str__(self):
        return f"{self.connection}/{self.prefix}/{self.queue}"

    @property
    def pretty(self) -> str:
        import json

        return json.dumps(self.schema, indent=2, ensure_ascii=False)
