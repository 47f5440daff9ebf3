"""Django admin for alerting: rules, alerts, silences and maintenance windows (alerts and their
steps are written by the monitor only: read-only here), channels and the outbox. The signing
secret is write-only here too: never shown, replaced by typing a new one. A channel's settings
(``config``) are shown with header values hidden and edited on the Channels page, which
validates them."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.utils import timezone

from dashboard.alerts import notifiers
from dashboard.alerts.models import (
    Alert,
    AlertEvent,
    AlertRule,
    Channel,
    DeliveryAttempt,
    MaintenanceWindow,
    Notification,
    Silence,
)
from queues import alert_kinds


class ChannelAdminForm(forms.ModelForm):
    new_secret = forms.CharField(
        label="Signing secret",
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Never shown. Type a value to replace the stored one; leave empty to keep it.",
    )
    clear_secret = forms.BooleanField(label="Remove the stored secret", required=False)

    class Meta:
        model = Channel
        fields = ["name", "kind", "enabled"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["kind"] = forms.ChoiceField(choices=notifiers.choices())  # the registry's kinds

    def save(self, commit=True):
        channel = super().save(commit=False)
        if self.cleaned_data.get("clear_secret"):
            channel.secret = ""
        elif self.cleaned_data.get("new_secret"):
            channel.secret = self.cleaned_data["new_secret"]
        if commit:
            channel.save()
        return channel


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    form = ChannelAdminForm
    list_display = ["name", "kind", "enabled", "has_secret", "last_sent_at", "last_error_at"]
    list_filter = ["kind", "enabled"]
    search_fields = ["name"]
    readonly_fields = ["settings", "last_error", "last_error_at", "last_sent_at", "created_at"]

    @admin.display(boolean=True, description="secret set")
    def has_secret(self, channel):
        return bool(channel.secret)

    @admin.display(description="settings")
    def settings(self, channel):
        config = dict(channel.config or {})
        if config.get("headers"):
            config["headers"] = {name: "(hidden)" for name in config["headers"]}
        return config


class AttemptInline(admin.TabularInline):
    model = DeliveryAttempt
    fk_name = "notification"
    fields = readonly_fields = ["number", "at", "ok", "will_retry", "detail", "duration_ms"]
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Notification)
class NotificationAdmin(admin.ModelAdmin):
    list_display = ["id", "channel", "kind", "state", "attempts", "next_attempt_at", "created_at", "subject"]
    list_filter = ["state", "kind", "channel"]
    search_fields = ["subject", "idempotency_key"]
    readonly_fields = [
        "channel",
        "idempotency_key",
        "kind",
        "subject",
        "payload",
        "attempts",
        "claimed_until",
        "last_error",
        "created_at",
        "sent_at",
    ]
    fields = readonly_fields[:4] + ["state", "next_attempt_at"] + readonly_fields[4:]
    inlines = [AttemptInline]
    actions = ["send_again"]

    @admin.action(description="Send again (back to pending, due now)")
    def send_again(self, request, queryset):
        # Pending rows are left alone: a sender may be about to claim them with their attempt count.
        count = queryset.filter(state__in=[Notification.FAILED, Notification.SENT]).update(
            state=Notification.PENDING, next_attempt_at=timezone.now(), claimed_until=None
        )
        self.message_user(request, f"{count} notification(s) queued again; the monitor sends them on its next run.")


class AlertRuleAdminForm(forms.ModelForm):
    class Meta:
        model = AlertRule
        fields = "__all__"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["kind"] = forms.ChoiceField(choices=alert_kinds.choices())  # the registry's kinds


@admin.register(AlertRule)
class AlertRuleAdmin(admin.ModelAdmin):
    form = AlertRuleAdminForm
    list_display = ["name", "kind", "severity", "enabled", "connection", "queue_glob", "threshold", "for_seconds"]
    list_filter = ["kind", "severity", "enabled"]
    search_fields = ["name", "queue_glob"]
    filter_horizontal = ["channels"]


class AlertEventInline(admin.TabularInline):
    model = AlertEvent
    extra = 0
    can_delete = False
    readonly_fields = ["seq", "state", "at", "value", "summary"]


@admin.register(Alert)
class AlertAdmin(admin.ModelAdmin):
    list_display = [
        "rule",
        "state",
        "connection",
        "queue",
        "item",
        "pending_since",
        "started_at",
        "resolved_at",
        "silenced_by",
    ]
    list_filter = ["state", "rule"]
    search_fields = ["queue", "item", "fingerprint"]
    inlines = [AlertEventInline]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Silence)
class SilenceAdmin(admin.ModelAdmin):
    list_display = ["author", "comment", "rule", "connection", "queue_glob", "starts_at", "ends_at"]


@admin.register(MaintenanceWindow)
class MaintenanceWindowAdmin(admin.ModelAdmin):
    list_display = ["name", "cron", "time_zone", "duration_minutes", "rule", "connection", "queue_glob", "enabled"]
