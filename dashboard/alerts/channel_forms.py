"""The channel form: one form for both kinds, each kind's settings validated only when chosen.

Secrets are write-only: the signing secret is never put back into the page (the form says
whether one is set, a new value replaces it, a checkbox clears it), and neither are custom
header values (they often carry tokens): on edit each header shows ``KEEP``, which keeps the
stored value.
"""

from __future__ import annotations

import json
import re

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator, validate_email

from dashboard.alerts.message_shapes import PLACEHOLDERS, Message, template_values
from dashboard.alerts.models import Channel
from dashboard.alerts.placeholders import fill_placeholders
from dashboard.alerts.webhook_notifier import DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S, RESERVED_HEADERS

KEEP = "(unchanged)"
SHAPE_CHOICES = [("queuewatch", "Queuewatch JSON"), ("alertmanager", "Alertmanager webhook (version 4)"),
                 ("slack", "Slack incoming webhook"), ("custom", "Custom template")]
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_SAMPLE = Message(idempotency_key="sample-key", kind="firing", subject='Sample "subject" with \\ and \n',
                  payload={"status": "firing", "rule": {"name": "Sample rule", "kind": "backlog"},
                           "alerts": [{"target": {"connection": "default", "prefix": "bull", "queue": "q\"1"},
                                       "state": "firing", "value": 1, "threshold": 0, "summary": "sample \"quoted\""}]},
                  channel="sample", created_at="2026-01-01T00:00:00Z", link="https://example.test/", base_url="")


def parse_headers(text: str, *, stored: dict[str, str]) -> dict[str, str]:
    """``Name: value`` lines into a dict; a value of ``KEEP`` keeps the stored value."""
    headers = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, sep, value = line.partition(":")
        name, value = name.strip(), value.strip()
        if not sep or not _HEADER_NAME.match(name):
            raise ValidationError(f"Line {number}: write each header as “Name: value”.")
        if name.lower() in RESERVED_HEADERS:
            raise ValidationError(f"Line {number}: {name} is set by Queuewatch and cannot be replaced.")
        if value == KEEP:
            if name not in stored:
                raise ValidationError(f"Line {number}: there is no stored value for {name} to keep; type the value.")
            value = stored[name]
        if not value.isascii() or not value.isprintable():
            raise ValidationError(f"Line {number}: header values must be printable ASCII.")
        headers[name] = value
    return headers


class ChannelForm(forms.Form):
    name = forms.CharField(max_length=100)
    kind = forms.ChoiceField(choices=Channel.KINDS)
    enabled = forms.BooleanField(required=False, initial=True)
    to = forms.CharField(label="Recipients", required=False, widget=forms.Textarea(attrs={"rows": 3}),
                         help_text="Email addresses, one per line or separated by commas.")
    url = forms.CharField(label="URL", required=False, max_length=2000, help_text="http:// or https://")
    shape = forms.ChoiceField(label="Payload", choices=SHAPE_CHOICES, initial="queuewatch", required=False)
    template = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 6}),
                               help_text="For “Custom template”: " + ", ".join(f"${n}" for n in PLACEHOLDERS) + ".")
    content_type = forms.CharField(label="Content type", required=False, initial="application/json", max_length=100)
    headers = forms.CharField(label="Custom headers", required=False, widget=forms.Textarea(attrs={"rows": 3}),
                              help_text=f"One “Name: value” per line. Stored values are not shown: {KEEP} keeps one.")
    timeout_s = forms.IntegerField(label="Timeout (s)", min_value=1, max_value=MAX_TIMEOUT_S, initial=DEFAULT_TIMEOUT_S,
                                   required=False)
    secret = forms.CharField(label="Signing secret", required=False, max_length=200,
                             widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}))
    clear_secret = forms.BooleanField(label="Remove the stored secret", required=False)

    def __init__(self, *args, channel: Channel | None = None, **kwargs):
        self.channel = channel
        if channel is not None and "initial" not in kwargs:
            kwargs["initial"] = self.initial_for(channel)
        super().__init__(*args, **kwargs)
        if channel is not None and channel.secret:
            self.fields["secret"].help_text = "A secret is set. Type a new one to replace it; leave empty to keep it."
        else:
            self.fields["secret"].help_text = "Signs each body (HMAC-SHA256, header X-Queuewatch-Signature)."

    @staticmethod
    def initial_for(channel: Channel) -> dict:
        config = channel.config or {}
        return {
            "name": channel.name, "kind": channel.kind, "enabled": channel.enabled,
            "to": "\n".join(config.get("to") or []), "url": config.get("url", ""),
            "shape": config.get("shape", "queuewatch"), "template": config.get("template", ""),
            "content_type": config.get("content_type", "application/json"),
            "headers": "\n".join(f"{name}: {KEEP}" for name in (config.get("headers") or {})),
            "timeout_s": config.get("timeout_s", DEFAULT_TIMEOUT_S),
        }

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        others = Channel.objects.filter(name=name).exclude(pk=getattr(self.channel, "pk", None))
        if others.exists():
            raise ValidationError("Another channel already has this name.")
        return name

    def clean(self):
        data = super().clean()
        if data.get("kind") == Channel.EMAIL:
            self._clean_email(data)
        elif data.get("kind") == Channel.WEBHOOK:
            self._clean_webhook(data)
        return data

    def _clean_email(self, data):
        addresses = [a.strip() for a in re.split(r"[,\s]+", data.get("to") or "") if a.strip()]
        if not addresses:
            self.add_error("to", "Give at least one address.")
        for address in addresses:
            try:
                validate_email(address)
            except ValidationError:
                self.add_error("to", f"“{address}” is not an email address.")
        data["config"] = {"to": addresses}

    def _clean_webhook(self, data):
        url = (data.get("url") or "").strip()
        try:
            URLValidator(schemes=["http", "https"])(url)
        except ValidationError:
            self.add_error("url", "Give a full http:// or https:// URL.")
        stored = (self.channel.config or {}).get("headers") or {} if self.channel else {}
        try:
            headers = parse_headers(data.get("headers") or "", stored=stored)
        except ValidationError as exc:
            self.add_error("headers", exc)
            headers = {}
        config = {"url": url, "shape": data.get("shape") or "queuewatch", "headers": headers,
                  "timeout_s": data.get("timeout_s") or DEFAULT_TIMEOUT_S}
        if config["shape"] == "custom":
            config["template"] = data.get("template") or ""
            config["content_type"] = (data.get("content_type") or "application/json").strip()
            self._check_template(config)
        data["config"] = config

    def _check_template(self, config):
        if not config["template"].strip():
            self.add_error("template", "A custom payload needs a template.")
        elif "json" in config["content_type"].lower():
            filled = fill_placeholders(config["template"], values=template_values(_SAMPLE, json_escape=True))
            try:
                json.loads(filled)
            except ValueError as exc:
                self.add_error("template", f"With sample values this is not valid JSON ({exc}). Put text "
                                           "placeholders inside quotes, and $ALERTS_JSON outside them.")

    def save(self) -> Channel:
        data = self.cleaned_data
        channel = self.channel or Channel()
        channel.name, channel.kind, channel.enabled, channel.config = data["name"], data["kind"], data["enabled"], data["config"]
        if data.get("clear_secret"):
            channel.secret = ""
        elif data.get("secret"):
            channel.secret = data["secret"]
        channel.save()
        return channel
