"""What one monitored connection is: a name, a URL and the key prefixes to look under.

The URL's scheme says which kind of source serves it (``queues.sources.factory``). The spec is
plain data; reading it from the environment is ``queues.connections``' job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import unquote

from ..redact import DEFAULT_SECRET_KEYS, Redactor

HIDDEN = "***"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
# A query or fragment parameter: its name, then the value up to the next separator. Matched as
# a lookahead, at every separator, so one that swallows the next ("?=x?password=…") hides none.
_PARAM = re.compile(r"(?=[?&;#]([^=&;#?]*)=([^&;#]*))")
# Secret-looking parameter names (``?password=``, ``?sentinel_password=``, ``?auth_token=``):
# the payload redactor's rule, plus the bare ``pass`` some drivers accept.
_SECRET_PARAMS = Redactor((*DEFAULT_SECRET_KEYS, "pass"))


@dataclass(frozen=True)
class ConnectionSpec:
    name: str
    url: str = field(repr=False)  # holds the password: never rendered, never logged
    prefixes: tuple[str, ...] = ("bull",)
    # The zone the connection's Node workers run cron patterns without a ``tz`` in (their
    # process's local zone); "" when not configured: then inferred (``queues.scheduler_zone``).
    cron_tz: str = ""

    @property
    def display_url(self) -> str:
        return redact_url(self.url)

    @property
    def scheme(self) -> str:
        """The URL scheme, which picks the source kind (``redis``, ``rediss``, ``unix``, …)."""
        return url_scheme(self.url)


def url_scheme(url: str) -> str:
    """The scheme, lower-cased, or ``""``; never raises (``urlsplit`` does on a malformed
    IPv6 host, and a configuration error must still be able to say which scheme it saw)."""
    match = _SCHEME.match(url)
    return match.group(1).lower() if match else ""


def redact_url(url: str) -> str:
    """The URL with any password replaced, safe for pages, logs and error messages.

    Total by construction: it works on the text, not on a parse that can fail, so multi-host
    URLs (``redis+cluster://u:p@h1:1,h2:2``), malformed hosts and strings that are not URLs
    at all are redacted too.
    """
    text = str(url)
    out, end = [], 0
    for start, stop in _secret_spans(text):
        out += [text[end:start], HIDDEN]
        end = stop
    return "".join(out) + text[end:]


def hide_url_secrets(message: str, url: str) -> str:
    """``message`` with every secret of ``url`` (as written, or percent-decoded) replaced: for
    a parser's reason, which may quote the part of the URL it choked on."""
    text = str(url)
    secrets = {form for start, stop in _secret_spans(text) for form in (text[start:stop], unquote(text[start:stop]))}
    for secret in sorted(secrets, key=len, reverse=True):
        message = message.replace(secret, HIDDEN)
    return message


def _secret_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text`` holds a secret, as sorted, non-overlapping, non-empty spans.

    The user information runs from the scheme's ``//`` (or the start) to the *last* ``@``, as
    in ``urlsplit``, so a raw ``@``, ``/`` or ``?`` in a password cannot end it early; what
    follows its first ``:`` is the password. Values of secret-looking parameters
    (``?password=x``) are secrets too.
    """
    spans = []
    scheme = _SCHEME.match(text)
    # Without "//" after it, "user:" in "user:pw@host" is no scheme: start at the beginning.
    start = scheme.end() + 2 if scheme and text.startswith("//", scheme.end()) else 0
    at = text.rfind("@", start)
    colon = text.find(":", start, at) if at != -1 else -1
    if colon != -1 and colon + 1 < at:
        spans.append((colon + 1, at))
    for param in _PARAM.finditer(text):
        if param.group(2) and _SECRET_PARAMS.is_secret(unquote(param.group(1))):
            spans.append(param.span(2))
    merged: list[tuple[int, int]] = []
    for span_start, span_stop in sorted(spans):
        if merged and span_start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], span_stop))
        else:
            merged.append((span_start, span_stop))
    return merged
