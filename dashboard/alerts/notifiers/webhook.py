"""Webhook delivery: one signed HTTP POST per notification, with the standard library's urllib
(the body, for the channel's payload shape, is ``webhook_payload``'s).

Headers sent with every request:

* ``Content-Type`` — ``application/json`` (or the custom template's content type);
* ``Idempotency-Key`` — the notification's key: a retry after a timeout sends the same key
  (and the same body), so a receiver can drop the duplicate;
* ``X-Queuewatch-Signature: sha256=<hex>`` — HMAC-SHA256 of the exact body bytes with the
  channel's secret (only when a secret is set);
* ``X-Queuewatch-Event`` — the notification kind; plus the channel's own custom headers.

Redirects are not followed (a POST turned into a GET would silently lose the body), and errors
name only the receiver's scheme, host and port: webhook URLs often carry tokens in their path
(a Slack-style hook's URL *is* its credential). So the URL is stored encrypted
(``dashboard.core.crypto``) and never rendered back: the form shows its origin and "…", and an
empty field on edit keeps the stored URL.

Where a request may go is ``queues.outbound``'s policy (``QUEUEWATCH_WEBHOOK_ALLOW`` / ``_DENY``):
the channel form refuses a denied address, and every delivery connects only to an address the
policy checked after resolving the name (``_PinnedHTTPConnection``), so DNS cannot be changed
between check and connection. Environment proxies (``HTTPS_PROXY``) are not used: through a
proxy the address actually reached could not be checked.

What the receiver answered in an error body can be anything it serves (including a secret of a
loopback-only service): it is kept after ``RECEIVER_SAID`` in the error text, which pages show
to admins only (``receiver_detail``). Why a connection failed (refused, timed out, reset) tells
apart closed, filtered and open ports (a port-scan oracle): it is kept after ``DETAILS``, so
viewers read only "unreachable".
"""

from __future__ import annotations

import email.utils
import hashlib
import hmac
import http.client
import re
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.utils.text import format_lazy
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from dashboard.alerts.message_shapes import PLACEHOLDERS
from dashboard.alerts.notifiers.base import DeliveryError, Notifier, message_for
from dashboard.alerts.notifiers.webhook_payload import SHAPE_CHOICES, check_template, webhook_body
from dashboard.core.crypto import Undecryptable, UndecryptableSecret, decrypt, decrypt_values, encrypt, encrypt_values
from queues import outbound

DEFAULT_TIMEOUT_S = 10
MAX_TIMEOUT_S = 30
SIGNATURE_HEADER = "X-Queuewatch-Signature"
# Headers we set ourselves; a channel's custom headers may not replace them.
RESERVED_HEADERS = frozenset(
    {
        "idempotency-key",
        SIGNATURE_HEADER.lower(),
        "x-queuewatch-event",
        "content-length",
        "host",
        "connection",
        "transfer-encoding",
    }
)


# --- settings (the channel form) ----------------------------------------------------------------
# Custom header values are write-only: on edit each shows ``KEEP``, which keeps the stored value.

KEEP = "(unchanged)"
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


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


# --- delivery ----------------------------------------------------------------------------------


def signature(*, secret: str, body: bytes) -> str:
    """The signature header's value: ``sha256=`` and the hex HMAC-SHA256 of the body."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def retryable_status(status: int) -> bool:
    """Worth trying again: timeouts, rate limits and server errors. Any other 4xx means the
    request itself is wrong and will be refused again (bad URL, auth, payload)."""
    return status in (408, 425, 429) or status >= 500


def origin(url: str) -> str:
    """Scheme, host and port of a URL: what errors and pages may show of a webhook address
    (never the user, password, path or query, where tokens live)."""
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # a malformed port: show none rather than fail
        port = None
    return f"{parts.scheme}://{parts.hostname or ''}" + (f":{port}" if port else "")


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds, from either of its forms (seconds, or an HTTP date)."""
    if not value:
        return None
    if value.strip().isdigit():
        return float(value.strip())
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


# --- where requests may go -------------------------------------------------------------------

RECEIVER_SAID = "\n— the receiver answered: "  # what follows is shown to admins only
DETAILS = "\n— details: "  # likewise: why a connection failed


def receiver_detail(text: str, *, admin: bool) -> str:
    """An error text as a page may show it: without the receiver's own words, or why the
    connection failed, unless ``admin``."""
    text = text or ""
    for marker in (RECEIVER_SAID, DETAILS):
        public, sep, said = text.partition(marker)
        if sep:
            return f"{public}: {said}" if admin else public
    return text


def stored_url(config: dict) -> str:
    """The channel's URL in clear (``UndecryptableSecret`` when no configured key opens it);
    one stored before URLs were encrypted is read as it is."""
    return decrypt(config.get("url") or "")


def policy() -> outbound.OutboundPolicy:
    return outbound.OutboundPolicy.from_entries(
        allow=settings.QUEUEWATCH_WEBHOOK_ALLOW, deny=settings.QUEUEWATCH_WEBHOOK_DENY
    )


def destination_refusal(url: str) -> str | None:
    """Why the policy refuses ``url``'s host (as resolved now), or None."""
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return gettext("The port is not a number.")
    try:
        outbound.resolve(parts.hostname or "", port, policy=policy())
    except outbound.Unresolvable:
        return None  # may resolve later (or only from the sender's network); checked on every delivery
    except outbound.OutboundRefused as exc:
        return gettext("Webhooks may not be sent to this address: %(why)s.") % {"why": exc}
    return None


class _PinnedHTTPConnection(http.client.HTTPConnection):
    def connect(self):
        try:
            self.sock = outbound.connect(self.host, self.port, policy=policy(), timeout=self.timeout)
        except outbound.OutboundRefused as exc:
            raise _Refused(str(exc)) from None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    def connect(self):
        _PinnedHTTPConnection.connect(self)  # the TCP part, to a checked address
        # TLS is verified against the name in the URL, not the address.
        self.sock = self._context.wrap_socket(self.sock, server_hostname=self.host)


class _Refused(OSError):
    pass


class _PinnedHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(_PinnedHTTPConnection, req)


class _PinnedHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self):
        super().__init__(context=ssl.create_default_context())

    def https_open(self, req):
        return self.do_open(_PinnedHTTPSConnection, req, context=self._context)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # urllib then raises HTTPError with the 3xx status


_opener = urllib.request.build_opener(
    urllib.request.ProxyHandler({}), _PinnedHTTPHandler, _PinnedHTTPSHandler, _NoRedirects
)


class WebhookNotifier(Notifier):
    kind, label = "webhook", _("Webhook")
    uses_secret = True  # signs each body

    @classmethod
    def form_fields(cls):
        return {
            "url": forms.CharField(
                label=_("URL"),
                required=False,
                max_length=2000,
                help_text=_("http:// or https://"),
                widget=forms.TextInput(attrs={"dir": "ltr"}),
            ),
            "shape": forms.ChoiceField(label=_("Payload"), choices=SHAPE_CHOICES, initial="queuewatch", required=False),
            "template": forms.CharField(
                label=_("Template"),
                required=False,
                widget=forms.Textarea(attrs={"rows": 6, "dir": "ltr"}),
                help_text=format_lazy(
                    _("For “Custom template”: {placeholders}."), placeholders=", ".join(f"${n}" for n in PLACEHOLDERS)
                ),
            ),
            "content_type": forms.CharField(
                label=_("Content type"), required=False, initial="application/json", max_length=100
            ),
            "headers": forms.CharField(
                label=_("Custom headers"),
                required=False,
                widget=forms.Textarea(attrs={"rows": 3, "dir": "ltr"}),
                help_text=format_lazy(
                    _("One “Name: value” per line. Stored values are not shown: {keep} keeps one."), keep=KEEP
                ),
            ),
            "timeout_s": forms.IntegerField(
                label=_("Timeout (s)"), min_value=1, max_value=MAX_TIMEOUT_S, initial=DEFAULT_TIMEOUT_S, required=False
            ),
        }

    @classmethod
    def adjust_fields(cls, fields, config):
        """On edit: say which URL is stored (its origin only) and that an empty field keeps it."""
        try:
            url = stored_url(config)
        except UndecryptableSecret:
            url = ""
        if url:
            fields["url"].widget.attrs["placeholder"] = origin(url) + "…"
            fields["url"].help_text = format_lazy(
                _("A URL is stored ({where}…): type a new one to replace it; leave empty to keep it."),
                where=origin(url),
            )

    @classmethod
    def clean_config(cls, *, data, stored, add_error):
        url = (data.get("url") or "").strip()
        if not url and stored.get("url"):
            kept = encrypt(stored["url"])  # as stored (encrypted already, or a legacy plain URL)
        else:
            kept = None
            try:
                URLValidator(schemes=["http", "https"])(url)
            except ValidationError:
                add_error("url", _("Give a full http:// or https:// URL."))
            else:
                why = destination_refusal(url)
                if why:
                    add_error("url", why)
        try:
            headers = parse_headers(data.get("headers") or "", stored=stored.get("headers") or {})
        except ValidationError as exc:
            add_error("headers", exc)
            headers = {}
        # Header values often are credentials: stored encrypted (a kept value already is).
        config = {
            "url": kept or encrypt(url),  # the URL is the credential of Slack-style hooks
            "shape": data.get("shape") or "queuewatch",
            "headers": encrypt_values(headers),
            "timeout_s": data.get("timeout_s") or DEFAULT_TIMEOUT_S,
        }
        if config["shape"] == "custom":
            config["template"] = data.get("template") or ""
            config["content_type"] = (data.get("content_type") or "application/json").strip()
            check_template(config, add_error)
        return config

    @classmethod
    def initial(cls, config):
        return {
            "url": "",  # never rendered back (``adjust_fields`` says what is stored)
            "shape": config.get("shape", "queuewatch"),
            "template": config.get("template", ""),
            "content_type": config.get("content_type", "application/json"),
            "headers": "\n".join(f"{name}: {KEEP}" for name in (config.get("headers") or {})),
            "timeout_s": config.get("timeout_s", DEFAULT_TIMEOUT_S),
        }

    @classmethod
    def destination(cls, config):
        try:
            url = stored_url(config)
        except UndecryptableSecret:
            return ""
        return origin(url) if urllib.parse.urlsplit(url).scheme else ""

    @classmethod
    def variant(cls, config):
        return config.get("shape") or "queuewatch"

    def send(self, notification) -> str:
        try:
            url = stored_url(self.config)
        except UndecryptableSecret:
            raise DeliveryError(
                gettext("The webhook URL cannot be decrypted with QUEUEWATCH_ENCRYPTION_KEY; add the old key back."),
                retry=False,
            ) from None
        if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
            raise DeliveryError("The webhook URL must start with http:// or https://.", retry=False)
        body, content_type = webhook_body(message=message_for(notification), config=self.config)
        headers = {"Content-Type": content_type, "User-Agent": "Queuewatch-Webhook/1"}
        try:
            custom = decrypt_values(self.config.get("headers") or {})
        except UndecryptableSecret:
            raise DeliveryError(
                gettext("A custom header cannot be decrypted with QUEUEWATCH_ENCRYPTION_KEY; add the old key back."),
                retry=False,
            ) from None
        if isinstance(self.channel.secret, Undecryptable):
            raise DeliveryError(
                gettext("The signing secret cannot be decrypted with QUEUEWATCH_ENCRYPTION_KEY; add the old key back."),
                retry=False,
            )
        headers.update({k: v for k, v in custom.items() if k.lower() not in RESERVED_HEADERS})
        headers["Idempotency-Key"] = notification.idempotency_key
        headers["X-Queuewatch-Event"] = notification.kind
        if self.channel.secret:
            headers[SIGNATURE_HEADER] = signature(secret=self.channel.secret, body=body)
        timeout = min(max(int(self.config.get("timeout_s") or DEFAULT_TIMEOUT_S), 1), MAX_TIMEOUT_S)
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        where = origin(url)
        try:
            with _opener.open(request, timeout=timeout) as response:
                response.read(4096)  # let the receiver finish; the body is not needed
                return f"HTTP {response.status} from {where}"
        except urllib.error.HTTPError as exc:
            snippet = exc.read(300).decode("utf-8", "replace").strip()
            said = RECEIVER_SAID + snippet if snippet else ""
            if 300 <= exc.code < 400:
                raise DeliveryError(
                    f"HTTP {exc.code} from {where} (redirects are not followed; use the final URL)" + said, retry=False
                ) from None
            raise DeliveryError(
                f"HTTP {exc.code} from {where}" + said,
                retry=retryable_status(exc.code),
                retry_after=_retry_after(exc.headers.get("Retry-After")),
            ) from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, _Refused):
                raise DeliveryError(
                    gettext("Not sent to %(where)s: %(why)s") % {"where": where, "why": exc.reason}, retry=False
                ) from None
            raise DeliveryError(f"{where} is unreachable{DETAILS}{exc.reason}", retry=True) from None
        except TimeoutError:
            raise DeliveryError(f"{where} is unreachable{DETAILS}no answer within {timeout} s", retry=True) from None
        except (OSError, http.client.HTTPException) as exc:
            raise DeliveryError(f"{where} is unreachable{DETAILS}{type(exc).__name__}: {exc}", retry=True) from None
