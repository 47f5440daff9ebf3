"""Email delivery through Django's email backend (SMTP settings from the environment: see
README, "Alert notifications"). One message per notification, with a plain-text and an HTML
body rendered from our own templates (autoescaped), and a link to the relevant page.

Each channel chooses the language of its emails (``config["language"]``; default
``LANGUAGE_CODE``): the body, the per-alert lines and the subject of firing/resolved
notifications are rendered in it. What an alert measured (its summary) was recorded in the
deployment language and is shown as recorded.

The ``Message-ID`` is derived from the idempotency key, so a retry after a lost answer carries
the same id and mail systems that deduplicate on it show the message once.
"""

from __future__ import annotations

import hashlib
import re
import smtplib

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import EmailMultiAlternatives, get_connection
from django.core.validators import validate_email
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.translation import gettext, gettext_lazy

from dashboard.alerts.notifiers.base import DeliveryError, Notifier, message_for
from dashboard.alerts.wording import summary_text
from dashboard.core import labels

SMTP_BACKEND = "django.core.mail.backends.smtp.EmailBackend"


def email_configured() -> bool:
    """Whether email can be sent at all: Django's SMTP backend needs a mail server
    (QUEUEWATCH_SMTP_HOST); any other backend (console, file, a test's) is complete as set."""
    return not (settings.EMAIL_BACKEND == SMTP_BACKEND and not settings.EMAIL_HOST)


NOT_CONFIGURED = gettext_lazy(
    "Email sending is not configured: Queuewatch has no mail server (set QUEUEWATCH_SMTP_HOST and restart, see "
    "README). An enabled email channel cannot be saved until then; save it disabled, or use a webhook."
)


def email_recipients(config: dict) -> list[str]:
    return [a for a in (config.get("to") or []) if isinstance(a, str) and a.strip()]


def _permanent_code(code) -> bool:
    return isinstance(code, int) and 500 <= code < 600


def _smtp_error(exc: smtplib.SMTPException) -> DeliveryError:
    """Refused addresses and other 5xx answers will be refused again; 4xx answers, lost
    connections and authentication failures (a configuration fixed later) are worth a retry."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        codes = [code for code, _ in exc.recipients.values()]
        refused = ", ".join(
            f"{addr} ({code} {msg.decode('utf-8', 'replace') if isinstance(msg, bytes) else msg})"
            for addr, (code, msg) in exc.recipients.items()
        )
        return DeliveryError(
            f"The mail server refused every recipient: {refused}", retry=not all(map(_permanent_code, codes))
        )
    if isinstance(exc, smtplib.SMTPAuthenticationError):
        return DeliveryError(
            f"SMTP authentication failed ({exc.smtp_code}); check QUEUEWATCH_SMTP_USER and QUEUEWATCH_SMTP_PASSWORD.",
            retry=True,
        )
    code = getattr(exc, "smtp_code", None)
    detail = getattr(exc, "smtp_error", b"")
    detail = detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail or exc)
    return DeliveryError(f"SMTP error {code or ''}: {detail}".replace("  ", " "), retry=not _permanent_code(code))


def email_language(config: dict) -> str:
    language = config.get("language")
    return language if language in dict(settings.LANGUAGES) else settings.LANGUAGE_CODE


def email_subject(message, stored: str) -> str:
    """Firing/resolved/repeat subjects in the active language, from the payload; other kinds
    (test, digest) keep the subject they were written with."""
    alerts = message.alerts
    if message.kind not in ("firing", "resolved", "repeat") or not alerts:
        return stored
    targets = gettext(", ").join(_target(a) for a in alerts[:3])
    if len(alerts) > 3:
        targets = gettext("%(targets)s and %(more)d more") % {"targets": targets, "more": len(alerts) - 3}
    status = gettext("RESOLVED") if message.status == "resolved" else gettext("FIRING")
    return f"[{status}:{len(alerts)}] {message.rule.get('name', '')} — {targets}"[:300]


def _target(alert: dict) -> str:
    target = alert.get("target") or {}
    queue, where = target.get("queue"), "/".join(str(target[k]) for k in ("connection", "prefix") if target.get(k))
    if queue:
        return f"{queue} ({where})" if where else str(queue)
    return where or gettext("everything")


def email_line(alert: dict) -> str:
    """One line per alert of the plain-text body, in the active language."""
    parts = [f"[{labels.label(alert.get('state') or 'firing')}]", _target(alert)]
    if alert.get("summary"):
        parts.append(f"— {summary_text(alert['summary'])}")
    if alert.get("value") is not None:
        if alert.get("threshold") is not None:
            measured = gettext("value %(value)s, threshold %(threshold)s") % {
                "value": alert["value"],
                "threshold": alert["threshold"],
            }
        else:
            measured = gettext("value %(value)s") % {"value": alert["value"]}
        parts.append(f"({measured})")
    if alert.get("silenced"):
        parts.append(f"[{gettext('silenced')}]")
    return " ".join(parts)


class EmailNotifier(Notifier):
    kind, label = "email", gettext_lazy("Email")
    form_note = gettext_lazy(
        "The mail server comes from the environment (QUEUEWATCH_SMTP_HOST and friends, see README)."
    )

    @classmethod
    def unavailable(cls):
        return "" if email_configured() else str(NOT_CONFIGURED)

    @classmethod
    def form_fields(cls):
        return {
            "to": forms.CharField(
                label=gettext_lazy("Recipients"),
                required=False,
                widget=forms.Textarea(attrs={"rows": 3, "dir": "ltr"}),
                help_text=gettext_lazy("Email addresses, one per line or separated by commas."),
            ),
            "email_language": forms.ChoiceField(
                label=gettext_lazy("Language of the emails"),
                required=False,
                choices=[(code, name) for code, name in settings.LANGUAGES],
                initial=settings.LANGUAGE_CODE,
            ),
        }

    @classmethod
    def clean_config(cls, *, data, stored, add_error):
        addresses = [a.strip() for a in re.split(r"[,\s]+", data.get("to") or "") if a.strip()]
        if not addresses:
            add_error("to", gettext("Give at least one address."))
        for address in addresses:
            try:
                validate_email(address)
            except ValidationError:
                add_error("to", gettext("“%(address)s” is not an email address.") % {"address": address})
        if data.get("enabled") and not email_configured():
            # Saved, it would only fill the outbox with messages that cannot leave.
            add_error("kind", str(NOT_CONFIGURED))
        config = {"to": addresses}
        if data.get("email_language"):  # absent: the deployment's language (LANGUAGE_CODE)
            config["language"] = email_language({"language": data["email_language"]})
        return config

    @classmethod
    def initial(cls, config):
        return {"to": "\n".join(config.get("to") or []), "email_language": email_language(config)}

    @classmethod
    def destination(cls, config):
        return ", ".join(config.get("to") or [])

    def send(self, notification) -> str:
        to = email_recipients(self.config)
        if not to:
            raise DeliveryError("This channel has no recipient addresses.", retry=False)
        if not email_configured():
            raise DeliveryError("Email is not configured: set QUEUEWATCH_SMTP_HOST (see README).", retry=True)
        message = message_for(notification)
        language = email_language(self.config)
        with translation.override(language):
            # The stored subject was written in the deployment's language; another language
            # gets it rebuilt from the payload.
            subject = (
                notification.subject
                if language == settings.LANGUAGE_CODE
                else email_subject(message, notification.subject)
            )
            context = {
                "m": message,
                "subject": subject,
                "lines": [email_line(a) for a in message.alerts],
                "alerts": message.alerts,
            }
            text = render_to_string("alerts/email/notification.txt", context)
            html = render_to_string("alerts/email/notification.html", context)
        digest = hashlib.sha256(f"{self.channel.pk}:{notification.idempotency_key}".encode()).hexdigest()[:40]
        mail = EmailMultiAlternatives(
            # Header injection is impossible through Django, but a newline would make it refuse.
            subject=" ".join(subject.split()),
            body=text,
            from_email=settings.DEFAULT_FROM_EMAIL,
            to=to,
            headers={
                "Message-ID": f"<{digest}@queuewatch>",
                "X-Queuewatch-Idempotency-Key": notification.idempotency_key,
                "X-Queuewatch-Event": notification.kind,
            },
            connection=get_connection(fail_silently=False),
        )
        mail.attach_alternative(html, "text/html")
        try:
            mail.send()
        except smtplib.SMTPException as exc:
            raise _smtp_error(exc) from None
        except OSError as exc:  # refused, unreachable, timed out, TLS failure
            raise DeliveryError(
                f"Cannot reach the mail server {settings.EMAIL_HOST}:{settings.EMAIL_PORT}: {exc}", retry=True
            ) from None
        return f"accepted by the mail server for {len(to)} recipient(s)"
