"""Redaction of secret-looking keys in job payloads.

Applied everywhere a payload is shown or exported. Parsed JSON is walked and values under
secret-looking keys replaced; text that cannot be parsed (truncated or malformed payloads) gets
a conservative regex pass over ``"key": value`` pairs so a half-shown payload leaks nothing.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

DEFAULT_SECRET_KEYS = ("password", "passwd", "token", "secret", "authorization", "cookie", "api_key", "apikey")
REDACTED = "[redacted]"


def _normalise(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


class Redactor:
    def __init__(self, secret_keys: Iterable[str] = DEFAULT_SECRET_KEYS):
        self.needles = tuple(sorted({_normalise(k) for k in secret_keys if _normalise(k)}))
        # In raw text we match a quoted key containing any needle (separators ignored as in
        # _normalise by allowing any non-quote characters around it), then redact the value:
        # a string, or any scalar run up to the next comma/brace.
        fuzzy = "|".join(r"[-_ ]?".join(re.escape(ch) for ch in n) for n in self.needles) or r"(?!)"
        self.text_re = re.compile(
            r'("(?:[^"\\]|\\.)*?(?:' + fuzzy + r')(?:[^"\\]|\\.)*?"\s*:\s*)'
            r'("(?:[^"\\]|\\.)*"?|[^,}\]\s]+)',
            re.IGNORECASE,
        )

    def is_secret(self, key: str) -> bool:
        norm = _normalise(key)
        return any(n in norm for n in self.needles)

    def value(self, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: (REDACTED if isinstance(k, str) and self.is_secret(k) else self.value(v)) for k, v in data.items()}
        if isinstance(data, list):
            return [self.value(v) for v in data]
        return data

    def text(self, raw: str) -> str:
        return self.text_re.sub(lambda m: m.group(1) + '"' + REDACTED + '"', raw)
