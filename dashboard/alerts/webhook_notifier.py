"""Webhook delivery: one signed HTTP POST per notification, with the standard library's urllib.

Headers sent with every request:

* ``Content-Type`` — ``application/json`` (or the custom template's content type);
* ``Idempotency-Key`` — the notification's key: a retry after a timeout sends the same key
  (and the same body), so a receiver can drop the duplicate;
* ``X-Queuewatch-Signature: sha256=<hex>`` — HMAC-SHA256 of the exact body bytes with the
  channel's secret (only when a secret is set);
* ``X-Queuewatch-Event`` — the notification kind; plus the channel's own custom headers.

Redirects are not followed (a POST turned into a GET would silently lose the body), and errors
name only the receiver's scheme, host and port: webhook URLs often carry tokens in their path.
"""

from __future__ import annotations

import email.utils
import hashlib
import hmac
import http.client
import json
import time
import urllib.error
import urllib.parse
import urllib.request

from dashboard.alerts.message_shapes import SHAPES, Message, template_values
from dashboard.alerts.notify import DeliveryError, message_for
from dashboard.alerts.placeholders import fill_placeholders

DEFAULT_TIMEOUT_S = 10
MAX_TIMEOUT_S = 30
SIGNATURE_HEADER = "X-Queuewatch-Signature"
# Headers we set ourselves; a channel's custom headers may not replace them.
RESERVED_HEADERS = frozenset({"idempotency-key", SIGNATURE_HEADER.lower(), "x-queuewatch-event", "content-length",
                              "host", "connection", "transfer-encoding"})


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


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # urllib then raises HTTPError with the 3xx status


_opener = urllib.request.build_opener(_NoRedirects)


class WebhookNotifier:
    def __init__(self, channel):
        self.channel = channel
        self.config = channel.config or {}

    def send(self, notification) -> str:
        url = self.config.get("url") or ""
        if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
            raise DeliveryError("The webhook URL must start with http:// or https://.", retry=False)
        body, content_type = webhook_body(message=message_for(notification), config=self.config)
        headers = {"Content-Type": content_type, "User-Agent": "Queuewatch-Webhook/1"}
        headers.update({k: v for k, v in (self.config.get("headers") or {}).items() if k.lower() not in RESERVED_HEADERS})
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
            message = f"HTTP {exc.code} from {where}" + (f": {snippet}" if snippet else "")
            if 300 <= exc.code < 400:
                raise DeliveryError(message + " (redirects are not followed; use the final URL)", retry=False) from None
            raise DeliveryError(message, retry=retryable_status(exc.code),
                                retry_after=_retry_after(exc.headers.get("Retry-After"))) from None
        except urllib.error.URLError as exc:
            raise DeliveryError(f"Cannot reach {where}: {exc.reason}", retry=True) from None
        except TimeoutError:
            raise DeliveryError(f"No answer from {where} within {timeout} s", retry=True) from None
        except (OSError, http.client.HTTPException) as exc:
            raise DeliveryError(f"Connection to {where} failed: {type(exc).__name__}: {exc}", retry=True) from None
