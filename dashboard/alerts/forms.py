"""Forms for rules, silences and maintenance windows: every bad value gets a message that
says what is wrong and what would be right."""

from __future__ import annotations

import datetime as dt

from django import forms
from django.utils.translation import gettext_lazy as _

from dashboard.alerts.models import AlertRule, Channel, MaintenanceWindow, Silence
from dashboard.connections.registry import get_registry
from dashboard.core.i18n import translate
from queues import alert_kinds

# Labels and help of the model fields, in the viewer's language (set here rather than on the
# models, so translating them needs no migration).
LABELS = {
    "name": _("Name"),
    "kind": _("Kind"),
    "enabled": _("Enabled"),
    "severity": _("Severity"),
    "connection": _("Connection"),
    "queue_glob": _("Queues"),
    "threshold": _("Threshold"),
    "resolve_threshold": _("Resolve threshold"),
    "window_minutes": _("Window"),
    "min_volume": _("Minimum volume"),
    "include_due_delayed": _("Include due delayed jobs"),
    "job_name": _("Job name"),
    "for_seconds": _("Pending for (seconds)"),
    "keep_firing_seconds": _("Keep firing for (seconds)"),
    "repeat_minutes": _("Repeat every (minutes)"),
    "notify_resolved": _("Notify when resolved"),
    "channels": _("Channels"),
    "cron": _("Schedule (cron)"),
    "time_zone": _("Time zone"),
    "duration_minutes": _("Duration (minutes)"),
    "rule": _("Rule"),
    "comment": _("Comment"),
    "starts_at": _("Starts at"),
    "ends_at": _("Ends at"),
}
HELP = {
    "connection": _("Empty: every connection."),
    "queue_glob": _("Queue name or glob, e.g. orders-*. Empty: every queue."),
    "resolve_threshold": _("Resolve only at or below this value (hysteresis). Empty: the threshold."),
    "min_volume": _("Failure ratio: finished jobs needed in the window; p95 times: timed jobs needed in the window."),
    "job_name": _("p95 wait/processing time: a job name or glob, one alert per matching name. Empty: the whole queue."),
    "include_due_delayed": _("Backlog: also count delayed jobs that are already due."),
    "for_seconds": _("Pending this long before firing."),
    "keep_firing_seconds": _("Keep firing this long after the condition clears."),
    "repeat_minutes": _("Notify again every this many minutes while firing; 0: never."),
    "cron": _("When each window starts, e.g. 0 2 * * 0 (Sundays 02:00)."),
}


def _connection_choices():
    return [("", _("every connection"))] + [(n, n) for n in get_registry().names]


class RuleForm(forms.ModelForm):
    class Meta:
        model = AlertRule
        fields = [
            "name",
            "kind",
            "enabled",
            "severity",
            "connection",
            "queue_glob",
            "threshold",
            "resolve_threshold",
            "window_minutes",
            "min_volume",
            "include_due_delayed",
            "job_name",
            "for_seconds",
            "keep_firing_seconds",
            "repeat_minutes",
            "notify_resolved",
            "channels",
        ]
        widgets = {"channels": forms.CheckboxSelectMultiple, "queue_glob": forms.TextInput(attrs={"dir": "ltr"})}
        labels, help_texts = LABELS, HELP
        error_messages = {
            "threshold": {
                "invalid": _("The threshold must be a number, e.g. 100 or 2.5."),
                "min_value": _("The threshold cannot be negative."),
            },
            "resolve_threshold": {"invalid": _("The resolve threshold must be a number, or empty.")},
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The registry's kinds, as they are now, named in the viewer's language.
        self.fields["kind"] = forms.ChoiceField(
            label=LABELS["kind"], choices=[(k, translate(t)) for k, t in alert_kinds.choices()]
        )
        self.fields["connection"] = forms.ChoiceField(
            label=LABELS["connection"], help_text=HELP["connection"], choices=_connection_choices(), required=False
        )
        self.fields["severity"].choices = [(k, _severity(k)) for k, _label in self.fields["severity"].choices]
        self.fields["window_minutes"].choices = [
            (w, _("%(n)s min") % {"n": w}) for w, _label in self.fields["window_minutes"].choices
        ]
        self.fields["channels"].queryset = Channel.objects.order_by("name")


class MaintenanceWindowForm(forms.ModelForm):
    class Meta:
        model = MaintenanceWindow
        fields = [
            "name",
            "cron",
            "time_zone",
            "duration_minutes",
            "rule",
            "connection",
            "queue_glob",
            "enabled",
            "comment",
        ]
        labels, help_texts = LABELS, HELP
        widgets = {
            "cron": forms.TextInput(attrs={"dir": "ltr"}),
            "time_zone": forms.TextInput(attrs={"dir": "ltr"}),
            "queue_glob": forms.TextInput(attrs={"dir": "ltr"}),
        }
        error_messages = {"duration_minutes": {"min_value": _("A window lasts at least one minute.")}}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["connection"] = forms.ChoiceField(
            label=LABELS["connection"], help_text=HELP["connection"], choices=_connection_choices(), required=False
        )
        self.fields["rule"].empty_label = _("every rule")


class SilenceForm(forms.ModelForm):
    hours = forms.FloatField(
        label=_("Hours"), required=False, min_value=0.05, help_text=_("Or a duration from the start, in hours.")
    )

    class Meta:
        model = Silence
        fields = ["rule", "connection", "queue_glob", "starts_at", "ends_at", "comment"]
        labels, help_texts = LABELS, HELP
        widgets = {
            "starts_at": forms.DateTimeInput(attrs={"placeholder": _("YYYY-MM-DD HH:MM (UTC)"), "dir": "ltr"}),
            "ends_at": forms.DateTimeInput(attrs={"placeholder": _("YYYY-MM-DD HH:MM (UTC)"), "dir": "ltr"}),
            "queue_glob": forms.TextInput(attrs={"dir": "ltr"}),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["connection"] = forms.ChoiceField(
            label=LABELS["connection"], help_text=HELP["connection"], choices=_connection_choices(), required=False
        )
        self.fields["rule"].empty_label = _("every rule")
        self.fields["ends_at"].required = False

    def clean(self):
        data = super().clean()
        start, end, hours = data.get("starts_at"), data.get("ends_at"), data.get("hours")
        if start and not end and hours:
            data["ends_at"] = end = start + dt.timedelta(hours=hours)
        if start and not end and "ends_at" not in self.errors:
            self.add_error("ends_at", _("Give an end time or a duration in hours."))
        return data


def _severity(code: str) -> str:
    from dashboard.core.labels import label

    return label(code)
