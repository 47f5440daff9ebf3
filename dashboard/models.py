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
