"""Alerting rows shared by the rule engine and the notifiers.

The contract between them is the outbox: evaluation writes ``Notification`` rows (one per
channel and state change, unique per idempotency key, so a second monitor after a failover
cannot enqueue the same change twice); the sender claims due rows with compare-and-swap
updates and delivers them, at least once, with the idempotency key as a header.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class Channel(models.Model):
    """Where notifications go. ``config`` holds the kind's settings (email: ``to`` list;
    webhook: ``url``, ``shape``, ``headers``, ``template``, ``timeout_s``); ``secret`` signs
    webhook bodies and is never rendered back to anyone."""

    EMAIL, WEBHOOK = "email", "webhook"
    KINDS = [(EMAIL, "Email"), (WEBHOOK, "Webhook")]

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=20, choices=KINDS)
    config = models.JSONField(default=dict, blank=True)
    secret = models.CharField(max_length=200, blank=True)
    enabled = models.BooleanField(default=True)
    last_error = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    last_sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return f"{self.name} ({self.kind})"

    @property
    def failing(self) -> bool:
        """The last delivery attempt failed (an error newer than the last success)."""
        return self.last_error_at is not None and (self.last_sent_at is None or self.last_error_at > self.last_sent_at)


class Notification(models.Model):
    """One message to one channel, in the outbox until delivered or given up.

    ``payload`` is the structured content every notifier renders from:
    ``{"status": "firing"|"resolved", "kind": <Notification.kind>, "group_key": str,
       "rule": {"id", "name", "kind"},
       "alerts": [{"fingerprint", "target": {"connection", "prefix", "queue"}, "state",
                   "value", "threshold", "summary", "url", "started_at", "ended_at",
                   "silenced"}]}``
    (times as ISO-8601 UTC strings; ``url`` absolute when QUEUEWATCH_BASE_URL is set).
    """

    FIRING, RESOLVED, REPEAT, TEST, DIGEST = "firing", "resolved", "repeat", "test", "digest"
    KINDS = [(k, k) for k in (FIRING, RESOLVED, REPEAT, TEST, DIGEST)]
    PENDING, SENDING, SENT, FAILED = "pending", "sending", "sent", "failed"
    STATES = [(s, s) for s in (PENDING, SENDING, SENT, FAILED)]

    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="notifications")
    idempotency_key = models.CharField(max_length=200)
    kind = models.CharField(max_length=20, choices=KINDS)
    subject = models.CharField(max_length=300)
    payload = models.JSONField(default=dict)
    state = models.CharField(max_length=20, choices=STATES, default=PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    claimed_until = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["channel", "idempotency_key"], name="uniq_notification_key")]
        indexes = [models.Index(fields=["state", "next_attempt_at"])]

    def __str__(self):
        return f"{self.kind} → {self.channel}: {self.subject}"


class DeliveryAttempt(models.Model):
    """One try at delivering one notification: the channel's delivery log. Written for every
    attempt, successful or not, so an admin can see what a receiver answered and when."""

    notification = models.ForeignKey(Notification, on_delete=models.CASCADE, related_name="attempt_log")
    # Denormalised from the notification so the per-channel log is one indexed query.
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    at = models.DateTimeField()
    ok = models.BooleanField()
    # For failures: whether the sender will try again (False for permanent errors and give-ups).
    will_retry = models.BooleanField(default=False)
    detail = models.TextField(blank=True)  # "HTTP 202", "250 OK", or the error message
    duration_ms = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [models.Index(fields=["channel", "-at"])]
        ordering = ["-at", "-id"]

    def __str__(self):
        return f"attempt {self.number} of {self.notification_id}: {'ok' if self.ok else 'failed'}"
