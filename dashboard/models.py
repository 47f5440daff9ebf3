"""Database rows owned by the web edge."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

TOKEN_PREFIX = "qw_"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class ApiToken(models.Model):
    """A per-user bearer token for the JSON API. Only the SHA-256 of the token is stored, so
    a leaked database does not leak usable tokens; the token itself is shown once."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    token_hash = models.CharField(max_length=64, unique=True)
    hint = models.CharField(max_length=12, help_text="First characters of the token, to tell tokens apart.")
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"{self.user} {self.hint}…"

    @classmethod
    def issue(cls, user) -> tuple["ApiToken", str]:
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        row = cls.objects.create(user=user, token_hash=hash_token(token), hint=token[:10])
        return row, token

    @classmethod
    def user_for(cls, token: str):
        row = cls.objects.select_related("user").filter(token_hash=hash_token(token)).first()
        if row is None or not row.user.is_active:
            return None
        # Record use at most once a minute to keep API reads from writing on every call.
        now = timezone.now()
        if row.last_used_at is None or (now - row.last_used_at).total_seconds() > 60:
            cls.objects.filter(pk=row.pk).update(last_used_at=now)
        return row.user


class QueuePoint(models.Model):
    """One queue's signals over one minute (``resolution=60``) or one hour (``3600``).

    Counters (completed, failed, stalled, added, stall_failed) are totals over the period;
    gauges (waiting … oldest_age_ms) are the last value seen in it. Written by the monitor in
    the same transaction as its stream cursors, so a takeover resumes without double counting.
    """

    MINUTE, HOUR = 60, 3600

    connection = models.CharField(max_length=40)
    prefix = models.CharField(max_length=200)
    queue = models.CharField(max_length=200)
    resolution = models.PositiveIntegerField()
    start = models.DateTimeField()
    completed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    stalled = models.PositiveIntegerField(default=0)
    added = models.PositiveIntegerField(default=0)
    stall_failed = models.PositiveIntegerField(default=0)
    waiting = models.PositiveIntegerField(default=0)
    active = models.PositiveIntegerField(default=0)
    delayed = models.PositiveIntegerField(default=0)
    prioritized = models.PositiveIntegerField(default=0)
    failed_depth = models.PositiveIntegerField(default=0)
    stalled_now = models.PositiveIntegerField(default=0)
    oldest_age_ms = models.BigIntegerField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["connection", "prefix", "queue", "resolution", "start"], name="uniq_queue_point"),
        ]
        indexes = [models.Index(fields=["resolution", "start"])]


class StreamCursor(models.Model):
    """The last events-stream id the monitor has counted, per queue."""

    connection = models.CharField(max_length=40)
    prefix = models.CharField(max_length=200)
    queue = models.CharField(max_length=200)
    last_id = models.CharField(max_length=40)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["connection", "prefix", "queue"], name="uniq_stream_cursor")]


class BulkTask(models.Model):
    """A bulk action (retry, discard, promote, redrive…) over a fixed set of jobs, run in the
    background by the monitor. The row is the task's whole state: who claimed it (compare-and-
    swap on ``state``), its progress, and the domain runner's resumable cursor (``progress``),
    so a monitor killed half-way is replaced by one that resumes where the last save left off.
    At most one pending or running task per queue (a database constraint, not a check-then-act).
    """

    PENDING, RUNNING, DONE, CANCELLED, FAILED = "pending", "running", "done", "cancelled", "failed"
    STATES = [(s, s) for s in (PENDING, RUNNING, DONE, CANCELLED, FAILED)]
    ACTIVE_STATES = (PENDING, RUNNING)

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
    reason = models.TextField()
    state = models.CharField(max_length=10, choices=STATES, default=PENDING)
    cancel_requested = models.BooleanField(default=False)
    claimed_by = models.CharField(max_length=100, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    total = models.PositiveIntegerField(null=True, blank=True)
    moved = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    rate_now = models.FloatField(default=0.0)
    progress = models.JSONField(default=dict, blank=True)  # the domain runner's resumable state
    error = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["connection", "prefix", "queue"], condition=models.Q(state__in=("pending", "running")),
                                    name="one_active_bulk_task_per_queue"),
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
    task = models.ForeignKey(BulkTask, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_entries")

    class Meta:
        ordering = ["-at", "-id"]
