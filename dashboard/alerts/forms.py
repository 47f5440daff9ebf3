"""Forms for rules, silences and maintenance windows: every bad value gets a message that
says what is wrong and what would be right."""

from __future__ import annotations

import datetime as dt

from django import forms

from dashboard.alerts.models import AlertRule, Channel, MaintenanceWindow, Silence
from dashboard.registry import get_registry
from queues import alert_kinds


def _connection_choices():
    return [("", "every connection")] + [(n, n) for n in get_registry().names]


class RuleForm(forms.ModelForm):
    class Meta:
        model = AlertRule
        fields = ["name", "kind", "enabled", "severity", "connection", "queue_glob", "threshold", "resolve_threshold",
                  "window_minutes", "min_volume", "include_due_delayed", "job_name", "for_seconds", "keep_firing_seconds", "repeat_minutes",
                  "notify_resolved", "channels"]
        widgets = {"channels": forms.CheckboxSelectMultiple}
        error_messages = {"threshold": {"invalid": "The threshold must be a number, e.g. 100 or 2.5.",
                                        "min_value": "The threshold cannot be negative."},
                          "resolve_threshold": {"invalid": "The resolve threshold must be a number, or empty."}}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["kind"] = forms.ChoiceField(choices=alert_kinds.choices())  # the registry's kinds, as they are now
        self.fields["connection"] = forms.ChoiceField(choices=_connection_choices(), required=False)
        self.fields["channels"].queryset = Channel.objects.order_by("name")


class MaintenanceWindowForm(forms.ModelForm):
    class Meta:
        model = MaintenanceWindow
        fields = ["name", "cron", "time_zone", "duration_minutes", "rule", "connection", "queue_glob", "enabled", "comment"]
        error_messages = {"duration_minutes": {"min_value": "A window lasts at least one minute."}}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["connection"] = forms.ChoiceField(choices=_connection_choices(), required=False)
        self.fields["rule"].empty_label = "every rule"


class SilenceForm(forms.ModelForm):
    hours = forms.FloatField(required=False, min_value=0.05, help_text="Or a duration from the start, in hours.")

    class Meta:
        model = Silence
        fields = ["rule", "connection", "queue_glob", "starts_at", "ends_at", "comment"]
        widgets = {"starts_at": forms.DateTimeInput(attrs={"placeholder": "YYYY-MM-DD HH:MM (UTC)"}),
                   "ends_at": forms.DateTimeInput(attrs={"placeholder": "YYYY-MM-DD HH:MM (UTC)"})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["connection"] = forms.ChoiceField(choices=_connection_choices(), required=False)
        self.fields["rule"].empty_label = "every rule"
        self.fields["ends_at"].required = False

    def clean(self):
        data = super().clean()
        start, end, hours = data.get("starts_at"), data.get("ends_at"), data.get("hours")
        if start and not end and hours:
            data["ends_at"] = end = start + dt.timedelta(hours=hours)
        if start and not end and "ends_at" not in self.errors:
            self.add_error("ends_at", "Give an end time or a duration in hours.")
        return data
