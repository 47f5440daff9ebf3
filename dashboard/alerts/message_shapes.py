"""What a notification says, in every shape a receiver may want. Framework-free: notifiers build
a ``Message`` from a ``Notification`` row and pick a shape; nothing here touches the network.

Shapes of a webhook body (``Channel.config["shape"]``):

* ``queuewatch`` — our documented payload (README, "Alert notifications"): the notification's
  ``payload`` plus an envelope (``version``, ``idempotency_key``, ``subject``, ``channel``, ``url``).
* ``alertmanager`` — the body Prometheus Alertmanager sends to webhook receivers (version 4),
  so tools that accept Alertmanager (incident tools, chat bridges) accept Queuewatch too.
* ``slack`` — a Slack incoming-webhook message (``text`` in Slack's mrkdwn, escaped the way
  Slack asks: ``&``, ``<``, ``>``); Mattermost and Rocket.Chat accept the same.
* ``custom`` — the channel's own template, filled by ``placeholders.fill_placeholders``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from dashboard.alerts.placeholders import json_string_content

# Alertmanager's "zero time" for alerts that have not ended.
_AM_NOT_ENDED = "0001-01-01T00:00:00Z"


@dataclass(frozen=True)
class Message:
    idempotency_key: str
    kind: str  # firing / resolved / repeat / test / digest
    subject: str
    payload: dict
    channel: str
    created_at: str  # ISO-8601 UTC
    link: str | None  # absolute URL of the page to look at, when QUEUEWATCH_BASE_URL is set
    base_url: str  # QUEUEWATCH_BASE_URL, or ""

    @property
    def status(self) -> str:
        return "resolved" if self.payload.get("status") == "resolved" else "firing"

    @property
    def alerts(self) -> list[dict]:
        return [a for a in self.payload.get("alerts") or [] if isinstance(a, dict)]

    @property
    def rule(self) -> dict:
        rule = self.payload.get("rule")
        return rule if isinstance(rule, dict) else {}


def target_text(alert: dict) -> str:
    """``queue (connection/prefix)`` for one alert's target, or what of it there is."""
    target = alert.get("target") or {}
    queue, where = target.get("queue"), "/".join(str(target[k]) for k in ("connection", "prefix") if target.get(k))
    if queue:
        return f"{queue} ({where})" if where else str(queue)
    return where or "everything"


def alert_line(alert: dict) -> str:
    """One line per alert, the same in email text, Slack and ``$SUMMARY``."""
    parts = [f"[{alert.get('state') or 'firing'}]", target_text(alert)]
    if alert.get("summary"):
        parts.append(f"— {alert['summary']}")
    if alert.get("value") is not None:
        measured = f"value {alert['value']}"
        if alert.get("threshold") is not None:
            measured += f", threshold {alert['threshold']}"
        parts.append(f"({measured})")
    if alert.get("silenced"):
        parts.append("[silenced]")
    return " ".join(parts)


def queuewatch_body(message: Message) -> dict:
    return {
        "version": "1",
        "source": "queuewatch",
        "idempotency_key": message.idempotency_key,
        "kind": message.kind,
        "status": message.status,
        "subject": message.subject,
        "channel": message.channel,
        "created_at": message.created_at,
        "url": message.link,
        "group_key": message.payload.get("group_key"),
        "rule": message.rule,
        "alerts": message.alerts,
    }


def _labels(message: Message, alert: dict) -> dict[str, str]:
    target = alert.get("target") or {}
    labels = {
        "alertname": str(message.rule.get("name") or message.subject),
        "rule_kind": str(message.rule.get("kind") or message.kind),
    }
    labels.update({k: str(v) for k, v in target.items() if v not in (None, "")})
    return labels


def alertmanager_body(message: Message) -> dict:
    alerts = []
    for alert in message.alerts:
        annotations = {"summary": str(alert.get("summary") or "")}
        for key in ("value", "threshold"):
            if alert.get(key) is not None:
                annotations[key] = str(alert[key])
        if alert.get("silenced"):
            annotations["silenced"] = "true"
        alerts.append(
            {
                "status": "resolved" if alert.get("state") == "resolved" else "firing",
                "labels": _labels(message, alert),
                "annotations": annotations,
                "startsAt": alert.get("started_at") or message.created_at,
                "endsAt": alert.get("ended_at") or _AM_NOT_ENDED,
                "generatorURL": alert.get("url") or message.link or "",
                "fingerprint": str(alert.get("fingerprint") or ""),
            }
        )
    label_sets = [a["labels"] for a in alerts]
    common = dict(set.intersection(*(set(ls.items()) for ls in label_sets))) if label_sets else {}
    return {
        "version": "4",
        "groupKey": str(message.payload.get("group_key") or message.idempotency_key),
        "truncatedAlerts": 0,
        "status": message.status,
        "receiver": message.channel,
        "groupLabels": {"alertname": str(message.rule.get("name") or message.subject)},
        "commonLabels": common,
        "commonAnnotations": {},
        "externalURL": message.base_url,
        "alerts": alerts,
    }


def slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_body(message: Message) -> dict:
    lines = [f"*{slack_escape(message.subject)}*"]
    lines += [f"• {slack_escape(alert_line(a))}" for a in message.alerts]
    if message.link:
        # The link is ours (base URL + path); only "|" and ">" could break Slack's <url|label>.
        lines.append(f"<{message.link.replace('|', '%7C').replace('>', '%3E')}|Open in Queuewatch>")
    return {"text": "\n".join(lines)}


SHAPES = {"queuewatch": queuewatch_body, "alertmanager": alertmanager_body, "slack": slack_body}

PLACEHOLDERS = {
    "SUBJECT": "the notification's subject line",
    "STATUS": "firing or resolved",
    "KIND": "firing, resolved, repeat, test or digest",
    "RULE": "the rule's name",
    "RULE_KIND": "the rule's kind",
    "SUMMARY": "one line per alert, joined by newlines",
    "COUNT": "how many alerts the notification groups",
    "QUEUE": "the first alert's queue",
    "CONNECTION": "the first alert's connection",
    "VALUE": "the first alert's measured value",
    "THRESHOLD": "the first alert's threshold",
    "URL": "a link to the relevant page (needs QUEUEWATCH_BASE_URL)",
    "CHANNEL": "this channel's name",
    "IDEMPOTENCY_KEY": "the notification's idempotency key (also sent as a header)",
    "CREATED_AT": "when the notification was created (ISO-8601 UTC)",
    "ALERTS_JSON": "the alerts as a JSON array, inserted as JSON (not inside quotes)",
}


def template_values(message: Message, *, json_escape: bool) -> dict[str, str]:
    """Every ``$PLACEHOLDER`` value for ``message``. With ``json_escape`` (a JSON template), the
    text values are escaped for the inside of a JSON string; ``$ALERTS_JSON`` is JSON itself."""
    first = message.alerts[0] if message.alerts else {}
    target = first.get("target") or {}

    def text(value) -> str:
        return "" if value is None else str(value)

    values = {
        "SUBJECT": message.subject,
        "STATUS": message.status,
        "KIND": message.kind,
        "RULE": text(message.rule.get("name")),
        "RULE_KIND": text(message.rule.get("kind")),
        "SUMMARY": "\n".join(alert_line(a) for a in message.alerts),
        "COUNT": str(len(message.alerts)),
        "QUEUE": text(target.get("queue")),
        "CONNECTION": text(target.get("connection")),
        "VALUE": text(first.get("value")),
        "THRESHOLD": text(first.get("threshold")),
        "URL": message.link or "",
        "CHANNEL": message.channel,
        "IDEMPOTENCY_KEY": message.idempotency_key,
        "CREATED_AT": message.created_at,
    }
    if json_escape:
        values = {name: json_string_content(value) for name, value in values.items()}
    values["ALERTS_JSON"] = json.dumps(message.alerts, ensure_ascii=False)
    return values
