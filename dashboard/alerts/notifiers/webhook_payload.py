"""What a webhook sends: the request body for the channel's payload shape (``message_shapes``,
or the channel's custom template filled with placeholders), and the channel form's check that
a custom JSON template makes JSON.
"""

from __future__ import annotations

import json

from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from dashboard.alerts.message_shapes import SHAPES, Message, template_values
from dashboard.alerts.notifiers.base import DeliveryError
from dashboard.alerts.placeholders import fill_placeholders

SHAPE_CHOICES = [
    ("queuewatch", _("Queuewatch JSON")),
    ("alertmanager", _("Alertmanager webhook (version 4)")),
    ("slack", _("Slack incoming webhook")),
    ("custom", _("Custom template")),
]
# Filled into a custom JSON template to check it: quotes, a backslash and a newline in the text.
_SAMPLE = Message(
    idempotency_key="sample-key",
    kind="firing",
    subject='Sample "subject" with \\ and \n',
    payload={
        "status": "firing",
        "rule": {"name": "Sample rule", "kind": "backlog"},
        "alerts": [
            {
                "target": {"connection": "default", "prefix": "bull", "queue": 'q"1'},
                "state": "firing",
                "value": 1,
                "threshold": 0,
                "summary": 'sample "quoted"',
            }
        ],
    },
    channel="sample",
    created_at="2026-01-01T00:00:00Z",
    link="https://example.test/",
    base_url="",
)


def webhook_body(*, message: Message, config: dict) -> tuple[bytes, str]:
    """The request body and its content type, for the channel's shape."""
    shape = config.get("shape") or "queuewatch"
    if shape == "custom":
        content_type = config.get("content_type") or "application/json"
        values = template_values(message, json_escape="json" in content_type.lower())
        return fill_placeholders(config.get("template") or "", values=values).encode(), content_type
    if shape not in SHAPES:
        raise DeliveryError(f"Unknown webhook shape {shape!r}.", retry=False)
    return json.dumps(SHAPES[shape](message), ensure_ascii=False).encode(), "application/json"


def check_template(config: dict, add_error) -> None:
    """The channel form's check of a custom template: a JSON one must be JSON once filled."""
    if not config["template"].strip():
        add_error("template", _("A custom payload needs a template."))
    elif "json" in config["content_type"].lower():
        filled = fill_placeholders(config["template"], values=template_values(_SAMPLE, json_escape=True))
        try:
            json.loads(filled)
        except ValueError as exc:
            add_error(
                "template",
                format_lazy(
                    _(
                        "With sample values this is not valid JSON ({error}). Put text "
                        "placeholders inside quotes, and $ALERTS_JSON outside them."
                    ),
                    error=exc,
                ),
            )
