"""The channel form: one form for every kind, each kind's settings validated only when chosen.

The fields, their validation into ``Channel.config`` and their initial values come from the
notifier registry (``dashboard.alerts.notifiers``): this form only adds what every channel has
(name, kind, enabled, and the signing secret for kinds that use one).

Secrets are write-only: the signing secret is never put back into the page (the form says
whether one is set, a new value replaces it, a checkbox clears it); kinds keep their own
write-only values the same way (webhook header values show ``(unchanged)``).
"""

from __future__ import annotations

from dataclasses import dataclass

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from dashboard.alerts import notifiers
from dashboard.alerts.models import Channel


@dataclass
class KindSettings:
    """One kind's part of the form, for the template: a fieldset shown when the kind is chosen."""

    kind: str
    label: str
    note: str
    fields: list  # bound fields
    unavailable: str = ""  # why this kind cannot deliver in this deployment ("" when it can)


class ChannelForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=100)
    kind = forms.ChoiceField(label=_("Kind"))
    enabled = forms.BooleanField(label=_("Enabled"), required=False, initial=True)
    secret = forms.CharField(
        label=_("Signing secret"),
        required=False,
        max_length=200,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )
    clear_secret = forms.BooleanField(label=_("Remove the stored secret"), required=False)

    def __init__(self, *args, channel: Channel | None = None, **kwargs):
        self.channel = channel
        if channel is not None and "initial" not in kwargs:
            kwargs["initial"] = self.initial_for(channel)
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = notifiers.choices()
        self.kind_fields = {kind: list(n.form_fields()) for kind, n in notifiers.NOTIFIERS.items()}
        for n in notifiers.NOTIFIERS.values():
            self.fields.update(n.form_fields())
        if channel is not None and (own := notifiers.NOTIFIERS.get(channel.kind)) is not None:
            own.adjust_fields(self.fields, channel.config or {})
        if channel is not None and channel.secret:
            self.fields["secret"].help_text = _(
                "A secret is set. Type a new one to replace it; leave empty to keep it."
            )
        else:
            self.fields["secret"].help_text = _("Signs each body (HMAC-SHA256, header X-Queuewatch-Signature).")
            del self.fields["clear_secret"]  # nothing stored to clear

    @staticmethod
    def initial_for(channel: Channel) -> dict:
        initial = {"name": channel.name, "kind": channel.kind, "enabled": channel.enabled}
        notifier = notifiers.NOTIFIERS.get(channel.kind)
        if notifier is not None:
            initial.update(notifier.initial(channel.config or {}))
        return initial

    def kind_settings(self) -> list[KindSettings]:
        """Each registered kind's fieldset: its own fields, then the secret if it uses one."""
        out = []
        for kind, notifier in notifiers.NOTIFIERS.items():
            names = self.kind_fields[kind] + (["secret", "clear_secret"] if notifier.uses_secret else [])
            out.append(
                KindSettings(
                    kind,
                    notifier.label,
                    notifier.form_note,
                    [self[name] for name in names if name in self.fields],
                    notifier.unavailable(),
                )
            )
        return out

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        others = Channel.objects.filter(name=name).exclude(pk=getattr(self.channel, "pk", None))
        if others.exists():
            raise ValidationError(_("Another channel already has this name."))
        return name

    def clean(self):
        data = super().clean()
        notifier = notifiers.NOTIFIERS.get(data.get("kind"))
        if notifier is not None:
            stored = (self.channel.config or {}) if self.channel and self.channel.kind == notifier.kind else {}
            data["config"] = notifier.clean_config(data=data, stored=stored, add_error=self.add_error)
        return data

    def save(self) -> Channel:
        data = self.cleaned_data
        channel = self.channel or Channel()
        channel.name, channel.kind, channel.enabled, channel.config = (
            data["name"],
            data["kind"],
            data["enabled"],
            data["config"],
        )
        if data.get("clear_secret"):
            channel.secret = ""
        elif data.get("secret"):
            channel.secret = data["secret"]
        channel.save()
        return channel
