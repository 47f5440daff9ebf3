"""Email delivery through Django's email backend (SMTP settings from the environment: see
README, "Alert notifications"). One message per notification, with a plain-text and an HTML
body rendered from our own templates (autoescaped), and a link to the relevant page.

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

from dashboard.alerts.message_shapes import alert_line
from dashboard.alerts.notifiers.base import DeliveryError, Notifier, message_for

SMTP_BACKEND = "django.core.mail.backends.smtp.EmailBackend"


def email_recipients(config: dict) -> list[str]:
    return [a for a in (config.get("to") or []) if isinstance(a, str) and a.strip()]


def _permanent_code(code) -> bool:
    return isinstance(code, int) and 500 <= code < 600


def _smtp_error(exc: smtplib.SMTPException) -> DeliveryError:
    """Refused addresses and other 5xx answers will be refused again; 4xx answers, lost
    connections and authentication failures (a configuration fixed later) are worth a retry."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        codes = [code for code, _ in exc.recipients.values()]
        refused = ", ".join(f"{addr} ({code} {msg.decode('utf-8', 'replace') if isinstance(msg, bytes) else msg})"
                            for addr, (code, msg) in exc.recipients.items())
        return DeliveryError(f"The mail server refused every recipient: {refused}", retry=not all(map(_permanent_code, codes)))
    if isinstance(exc, smtplib.SMTPAuthenticationError):
        return DeliveryError(f"SMTP authentication failed ({exc.smtp_code}); check QUEUEWATCH_SMTP_USER and "
                             "QUEUEWATCH_SMTP_PASSWORD.", retry=True)
    code = getattr(exc, "smtp_code", None)
    detail = getattr(exc, "smtp_error", b"")
    detail = detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail or exc)
    return DeliveryError(f"SMTP error {code or ''}: {detail}".replace("  ", " "), retry=not _permanent_code(code))


class EmailNotifier(Notifier):
    kind, label = "email", "Email"
    form_note = "The mail server comes from the environment (QUEUEWATCH_SMTP_HOST and friends, see README)."

    @classmethod
    def form_fields(cls):
        return {"to": forms.CharField(label="Recipients", required=False, widget=forms.Textarea(attrs={"rows": 3}),
                                      help_text="Email addresses, one per line or separated by commas.")}

    @classmethod
    def clean_config(cls, *, data, stored, add_error):
        addresses = [a.strip() for a in re.split(r"[,\s]+", data.get("to") or "") if a.strip()]
        if not addresses:
            add_error("to", "Give at least one address.")
        for address in addresses:
            try:
                validate_email(address)
            except ValidationError:
                add_error("to", f"“{address}” is not an email address.")
        return {"to": addresses}

    @classmethod
    def initial(cls, config):
        return {"to": "\n".join(config.get("to") or [])}

    @classmethod
    def destination(cls, config):
        return ", ".join(config.get("to") or [])

    def send(self, notification) -> str:
        to = email_recipients(self.config)
        if not to:
            raise DeliveryError("This channel has no recipient addresses.", retry=False)
        if settings.EMAIL_BACKEND == SMTP_BACKEND and not settings.EMAIL_HOST:
            raise DeliveryError("Email is not configured: set QUEUEWATCH_SMTP_HOST (see README).", retry=True)
        message = message_for(notification)
        context = {"m": message, "lines": [alert_line(a) for a in message.alerts], "alerts": message.alerts}
        digest = hashlib.sha256(f"{self.channel.pk}:{notification.idempotency_key}".encode()).hexdigest()[:40]
        mail = EmailMultiAlternatives(
            # Header injection is impossible through Django, but a newline would make it refuse.
            subject=" ".join(notification.subject.split()),
            body=render_to_string("alerts/email/notification.txt", context),
            from_email=settings.DEFAULT_FROM_EMAIL,
            to=to,
            headers={"Message-ID": f"<{digest}@queuewatch>", "X-Queuewatch-Idempotency-Key": notification.idempotency_key,
                     "X-Queuewatch-Event": notification.kind},
            connection=get_connection(fail_silently=False),
        )
        mail.attach_alternative(render_to_string("alerts/email/notification.html", context), "text/html")
        try:
            mail.send()
        except smtplib.SMTPException as exc:
            raise _smtp_error(exc) from None
        except OSError as exc:  # refused, unreachable, timed out, TLS failure
            raise DeliveryError(f"Cannot reach the mail server {settings.EMAIL_HOST}:{settings.EMAIL_PORT}: {exc}",
                                retry=True) from None
        return f"accepted by the mail server for {len(to)} recipient(s)"
