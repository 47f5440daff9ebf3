"""Forms for rules, silences and maintenance windows: every bad value gets a message that
says what is wrong and what would be right."""

from __future__ import annotations

import datetime as dt

from django import forms
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from dashboard.alerts.models import AlertRule, Channel, MaintenanceWindow, Silence
from dashboard.connections.registry import get_registry
from dashboard.core.i18n import translate
from queues import alert_kinds
from queues.alert_kinds.base import KIND_FIELDS

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


# Defaults of a new rule that do not flap: a condition must hold for a minute before it fires,
# and a firing alert rides out two minutes of recovery before it resolves (and notifies again).
NEW_RULE_INITIAL = {"for_seconds": 60, "keep_firing_seconds": 120}
# What a field the chosen kind does not read is saved as (the model's defaults).
UNUSED_VALUES = {
    "queue_glob": "",
    "threshold": 0.0,
    "resolve_threshold": None,
    "window_minutes": 5,
    "min_volume": 0,
    "include_due_delayed": False,
    "job_name": "",
}
# The fields whose unit is the kind's threshold unit; the others' units are in their labels.
THRESHOLD_FIELDS = ("threshold", "resolve_threshold")


class RuleForm(forms.ModelForm):
    """A rule of one kind: ``kind_id`` is the kind the form shows the fields of (the submitted
    one, else the rule's, else the first); the fields another kind reads are neither shown nor
    saved (``queues.alert_kinds.base.KIND_FIELDS``, ``RuleKind.shown_fields``)."""

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
        if kwargs.get("instance") is None and "initial" not in kwargs:
            kwargs["initial"] = dict(NEW_RULE_INITIAL)
        super().__init__(*args, **kwargs)
        # The registry's kinds, as they are now, named in the viewer's language.
        self.fields["kind"] = forms.ChoiceField(
            label=LABELS["kind"], choices=[(k, translate(t)) for k, t in alert_kinds.choices()]
        )
        # Choosing another kind swaps in its fields (htmx; without it, the form's "Show this
        # kind's fields" button), keeping what was typed.
        self.fields["kind"].widget.attrs.update(
            {
                "hx-get": reverse("alert_rule_fields"),
                "hx-trigger": "change",
                "hx-target": "#rule-kind-fields",
                "hx-swap": "outerHTML",
                "hx-include": "#rule-form",
                "hx-params": "not csrfmiddlewaretoken",
                "aria-controls": "rule-kind-fields",
            }
        )
        self.fields["connection"] = forms.ChoiceField(
            label=LABELS["connection"], help_text=HELP["connection"], choices=_connection_choices(), required=False
        )
        self.fields["severity"].choices = [(k, _severity(k)) for k, _label in self.fields["severity"].choices]
        self.fields["window_minutes"].choices = [
            (w, _("%(n)s min") % {"n": w}) for w, _label in self.fields["window_minutes"].choices
        ]
        self.fields["channels"].queryset = Channel.objects.order_by("name")
        # A channel's name is user data (any script): isolated, beside its kind in the reader's language.
        self.fields["channels"].label_from_instance = lambda c: format_html("<bdi>{}</bdi> ({})", c.name, c.kind_label)
        self.rule_kind = self._chosen_kind()
        shown = self.rule_kind.shown_fields()
        for name in KIND_FIELDS:
            if name not in shown:
                self.fields[name].required = False
        unit = translate(self.rule_kind.unit)
        if unit:
            for name in THRESHOLD_FIELDS:
                self.fields[name].label = _("%(field)s (%(unit)s)") % {"field": LABELS[name], "unit": unit}
        self.fields["min_volume"].label = _("Minimum volume (jobs)")

    def _chosen_kind(self):
        wanted = (self.data.get("kind") if self.is_bound else None) or self.initial.get("kind")
        if not wanted and self.instance is not None:
            wanted = self.instance.kind
        return alert_kinds.KINDS.get(wanted or "") or next(iter(alert_kinds.KINDS.values()))

    @property
    def kind_id(self) -> str:
        return self.rule_kind.id

    def kind_fields(self):
        """The bound fields the chosen kind reads, in the form's order."""
        shown = self.rule_kind.shown_fields()
        return [self[name] for name in KIND_FIELDS if name in shown]

    def clean(self):
        data = super().clean()
        shown = self.rule_kind.shown_fields()
        for name in KIND_FIELDS:
            if name not in shown:
                # Not shown, so not chosen: whatever came for it (another kind's value, a
                # stale page) is dropped rather than saved or reported where nobody sees it.
                self._errors.pop(name, None)
                data[name] = UNUSED_VALUES[name]
        return data


def initial_from(data) -> dict:
    """A rule form's values as typed (a query string or a post), as initial values: the form
    shown again for another kind keeps them without judging them yet."""
    initial = {}
    for name in RuleForm.Meta.fields:
        if name == "channels":
            initial[name] = data.getlist(name)
        elif name in ("enabled", "include_due_delayed", "notify_resolved"):
            initial[name] = name in data
        elif name in data:
            initial[name] = data.get(name)
    return initial


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
