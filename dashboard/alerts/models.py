"""Alerting rows shared by the rule engine and the notifiers.

The contract between them is the outbox: evaluation writes ``Notification`` rows (one per
channel and state change, unique per idempotency key, so a second monitor after a failover
cannot enqueue the same change twice); the sender claims due rows with compare-and-swap
updates and delivers them, at least once, with the idempotency key as a header.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext

from dashboard.alerts import notifiers
from dashboard.connections.registry import get_registry
from dashboard.core.crypto import EncryptedTextField
from dashboard.core.i18n import translate
from queues import alert_kinds, alert_rules
from queues.cron import CronError, cron_validate


class Channel(models.Model):
    """Where notifications go. ``config`` holds the kind's settings (email: ``to`` list;
    webhook: ``url``, ``shape``, ``headers``, ``template``, ``timeout_s``); ``secret`` signs
    webhook bodies and is never rendered back to anyone."""

    EMAIL, WEBHOOK = "email", "webhook"

    name = models.CharField(max_length=100, unique=True)
    # One of the notifier registry's kinds (``dashboard.alerts.notifiers``), validated against
    # it rather than fixed as ``choices``, so that a new kind needs no migration.
    kind = models.CharField(max_length=20)
    config = models.JSONField(default=dict, blank=True)
    secret = EncryptedTextField(blank=True)  # encrypted at rest (dashboard/core/crypto.py)
    enabled = models.BooleanField(default=True)
    last_error = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    last_sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return f"{self.name} ({self.kind})"

    def clean(self):
        if self.kind not in notifiers.NOTIFIERS:
            raise ValidationError({"kind": f"Choose one of: {', '.join(notifiers.NOTIFIERS)}."})

    @property
    def kind_label(self) -> str:
        notifier = notifiers.NOTIFIERS.get(self.kind)
        return notifier.label if notifier else self.kind

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


# --- Rules, alert states and silences ---------------------------------------------------------
# Owned by the rule engine (dashboard/alerts/engine.py). Evaluation itself is the pure
# ``queues.alert_rules.rule_evaluate``; these rows are what it decided, over time.


SEVERITIES = [("warning", "warning"), ("critical", "critical")]
WINDOW_CHOICES = [(w, f"{w} min") for w in alert_rules.WINDOWS]


class AlertRule(models.Model):
    """One condition to watch, scoped to a connection and/or a glob of queue names (empty
    means every one). ``for_seconds`` is the pending period before firing; a resolve threshold
    or ``keep_firing_seconds`` stop flapping; ``repeat_minutes`` re-notifies while firing."""

    name = models.CharField(max_length=100, unique=True)
    # One of the rule kinds registry's ids (``queues.alert_kinds``), validated against it rather
    # than fixed as ``choices``, so that a new kind needs no migration.
    kind = models.CharField(max_length=30)
    enabled = models.BooleanField(default=True)
    severity = models.CharField(max_length=10, choices=SEVERITIES, default="warning")
    connection = models.CharField(max_length=40, blank=True, help_text="Empty: every connection.")
    queue_glob = models.CharField(
        max_length=200, blank=True, help_text="Queue name or glob, e.g. orders-*. Empty: every queue."
    )
    threshold = models.FloatField(default=0, validators=[MinValueValidator(0)])
    resolve_threshold = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
        help_text="Resolve only at or below this value (hysteresis). Empty: the threshold.",
    )
    window_minutes = models.PositiveIntegerField(choices=WINDOW_CHOICES, default=5)
    min_volume = models.PositiveIntegerField(
        default=0,
        help_text="Failure ratio: finished jobs needed in the window; p95 times: timed jobs needed in the window.",
    )
    include_due_delayed = models.BooleanField(
        default=False, help_text="Backlog: also count delayed jobs that are already due."
    )
    job_name = models.CharField(
        max_length=200,
        blank=True,
        help_text="p95 wait/processing time: a job name or glob, one alert per matching name. Empty: the whole queue.",
    )
    for_seconds = models.PositiveIntegerField(default=0, help_text="Pending this long before firing.")
    keep_firing_seconds = models.PositiveIntegerField(
        default=0, help_text="Keep firing this long after the condition clears."
    )
    repeat_minutes = models.PositiveIntegerField(
        default=240, help_text="Notify again every this many minutes while firing; 0: never."
    )
    notify_resolved = models.BooleanField(default=True)
    channels = models.ManyToManyField(Channel, blank=True, related_name="rules")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    @property
    def condition(self) -> str:
        return alert_rules.describe_threshold(self)

    def clean(self):
        """What the rule's kind says about its fields, and the optional fields only some kinds
        read (each kind lists them): set on another kind, they would silently do nothing."""
        kind = alert_kinds.KINDS.get(self.kind)
        if kind is None:
            raise ValidationError({"kind": gettext("Choose one of the rule kinds.")})
        errors = {field: translate(message) for field, message in kind.validate(self).items()}
        unused = {
            "min_volume": gettext("The minimum volume only applies to {} rules."),
            "include_due_delayed": gettext("Only {} rules can count due delayed jobs."),
            "job_name": gettext("Only {} rules can be limited to job names."),
        }
        for name, message in unused.items():
            if getattr(self, name) and name not in kind.params and name not in errors:
                users = [k.id.replace("_", "-") for k in alert_kinds.KINDS.values() if name in k.params]
                errors[name] = message.format(gettext(" or ").join(users) or gettext("no"))
        registry = get_registry()
        if self.connection and self.connection in registry.names and "connection" not in errors:
            source = registry.source(self.connection)
            if not kind.applies_to(source.kind):
                errors["connection"] = gettext(
                    "“{rule}” does not apply to connection “{connection}”: it judges a Redis server's "
                    "settings, and this is a {kind} connection."
                ).format(rule=translate(kind.title), connection=self.connection, kind=source.label)
        if errors:
            raise ValidationError(errors)


class Alert(models.Model):
    """One incident of one rule on one target: pending → firing → resolved, with the times and
    values that caused each step. At most one open (pending or firing) incident per fingerprint,
    enforced by the database, and every step is a compare-and-swap on ``version``: two monitors
    after a failover cannot both take the same step."""

    PENDING, FIRING, RESOLVED = "pending", "firing", "resolved"
    STATES = [(s, s) for s in (PENDING, FIRING, RESOLVED)]
    OPEN = (PENDING, FIRING)

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="alerts")
    fingerprint = models.CharField(max_length=40, db_index=True)
    connection = models.CharField(max_length=40)
    prefix = models.CharField(max_length=200, blank=True)
    queue = models.CharField(max_length=200, blank=True)
    item = models.CharField(max_length=300, blank=True)
    state = models.CharField(max_length=10, choices=STATES, default=PENDING)
    version = models.PositiveIntegerField(default=0)
    pending_since = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)  # when it started firing
    resolved_at = models.DateTimeField(null=True, blank=True)
    clear_since = models.DateTimeField(null=True, blank=True)  # condition cleared, keep-firing running
    value_start = models.FloatField(null=True)
    value_last = models.FloatField(null=True)
    observed_at = models.DateTimeField(null=True, blank=True)  # when value_last was measured
    value_end = models.FloatField(null=True)
    summary = models.TextField(blank=True)
    silenced_by = models.CharField(max_length=300, blank=True)
    notified = models.BooleanField(default=False)  # a firing notification was written
    last_notified_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["fingerprint"],
                condition=models.Q(state__in=["pending", "firing"]),
                name="one_open_alert_per_fingerprint",
            )
        ]
        indexes = [models.Index(fields=["state", "rule"])]
        ordering = ["-pending_since"]

    def __str__(self):
        return f"{self.rule} on {self.target_label} ({self.state})"

    @property
    def target(self) -> alert_rules.Target:
        return alert_rules.Target(self.connection, self.prefix, self.queue, self.item)

    @property
    def target_label(self) -> str:
        """The target in words; its item named as the rule's kind names it (scheduler, job name)."""
        kind = alert_kinds.KINDS.get(self.rule.kind)
        return self.target.label(kind.item_noun) if kind else self.target.label()

    def get_absolute_url(self) -> str:
        """The queue's page; the rule's history for connection alerts and for queue names no
        URL can hold (e.g. with a slash)."""
        from django.urls import NoReverseMatch, reverse

        if self.queue:
            try:
                return reverse("queue", args=[self.connection, self.prefix, self.queue])
            except NoReverseMatch:
                pass
        return reverse("alert_history") + f"?rule={self.rule_id}"

    def silence_url(self) -> str:
        """The new-silence form with this alert's matchers filled in (its Silence button)."""
        from urllib.parse import urlencode

        from django.urls import reverse

        m = alert_rules.matcher_for(rule_id=self.rule_id, target=self.target)
        query = {"rule": m.rule_id, "connection": m.connection, "queue_glob": m.queue_glob}
        return reverse("silences") + "?" + urlencode({k: v for k, v in query.items() if v}) + "#silence-form"


class AlertEvent(models.Model):
    """One step of an alert, as it happened: the alert's ``version`` after the step is ``seq``."""

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    state = models.CharField(max_length=20)  # pending, firing, resolved, or notified (repeat)
    at = models.DateTimeField()
    value = models.FloatField(null=True)
    summary = models.TextField(blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["alert", "seq"], name="uniq_alert_event_seq")]
        ordering = ["alert", "seq"]


class Silence(models.Model):
    """Mute matching alerts from ``starts_at`` to ``ends_at``. They are still recorded and shown
    as silenced; only notifications are held back. Empty matchers match everything."""

    rule = models.ForeignKey(AlertRule, null=True, blank=True, on_delete=models.CASCADE, related_name="silences")
    connection = models.CharField(max_length=40, blank=True)
    queue_glob = models.CharField(max_length=200, blank=True)
    starts_at = models.DateTimeField(default=timezone.now)
    ends_at = models.DateTimeField()
    author = models.CharField(max_length=150)
    comment = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-ends_at"]

    def __str__(self):
        return f"Silence by {self.author}: {self.comment[:60]}"

    def clean(self):
        if self.starts_at and self.ends_at and self.ends_at <= self.starts_at:
            raise ValidationError({"ends_at": "The silence must end after it starts."})

    def matcher(self) -> alert_rules.Matcher:
        return alert_rules.Matcher(rule_id=self.rule_id, connection=self.connection, queue_glob=self.queue_glob)


class MaintenanceWindow(models.Model):
    """A recurring silence: starts on a cron schedule in ``time_zone`` and lasts
    ``duration_minutes`` of wall-clock time there (see ``queues.cron.window_open_at``)."""

    name = models.CharField(max_length=100)
    cron = models.CharField(max_length=100, help_text="When each window starts, e.g. 0 2 * * 0 (Sundays 02:00).")
    time_zone = models.CharField(max_length=64, default="UTC")
    duration_minutes = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    rule = models.ForeignKey(AlertRule, null=True, blank=True, on_delete=models.CASCADE, related_name="windows")
    connection = models.CharField(max_length=40, blank=True)
    queue_glob = models.CharField(max_length=200, blank=True)
    enabled = models.BooleanField(default=True)
    author = models.CharField(max_length=150)
    comment = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def clean(self):
        try:
            cron_validate(self.cron or "", self.time_zone or "UTC")
        except CronError as exc:
            raise ValidationError({"time_zone" if "time zone" in str(exc) else "cron": str(exc)}) from None

    def matcher(self) -> alert_rules.Matcher:
        return alert_rules.Matcher(rule_id=self.rule_id, connection=self.connection, queue_glob=self.queue_glob)
