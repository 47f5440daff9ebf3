"""Django admin for rules, alerts, silences and maintenance windows (imported by the app's
``ready()``; the channels' admin lives in ``admin.py``). Alerts and their steps are written by
the monitor only: read-only here."""

from django.contrib import admin

from dashboard.alerts.models import Alert, AlertEvent, AlertRule, MaintenanceWindow, Silence


@admin.register(AlertRule)
class AlertRuleAdmin(admin.ModelAdmin):
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
    list_display = ["rule", "state", "connection", "queue", "item", "pending_since", "started_at", "resolved_at", "silenced_by"]
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
