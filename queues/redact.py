"""Redaction of secret-looking keys in job payloads, logs and free text.

Applied everywhere a payload, stack trace or log line is shown or exported. Parsed JSON is
walked and values under secret-looking keys replaced; a string that itself holds JSON (a
producer that stored ``JSON.stringify(obj)`` inside an object) is parsed and walked the same
way; every other string, and text that cannot be parsed (truncated or malformed payloads,
stack traces, log lines), gets a conservative regex pass over ``"key": value`` pairs (and
Python's ``'key': value``, from a worker that printed a dict), ``key=value`` / ``key: value``
in free text, so a half-shown payload leaks nothing.

Some secrets hide behind no secret key, so three rules apply whatever keys are configured: the
password of a URL (``postgres://user:pass@host``, ``redis://:pass@host``), the value of a
``{"name": "Authorization", "value": …}`` pair (header lists, as HAR files and HTTP clients
store them) and the token after ``Bearer``.

Long key names match anywhere in a key (``userPassword``, ``x-api-key``); short ones (``pwd``,
``auth``) only as a whole word of it (``basicAuth``, ``auth_token``), so ``author`` stays.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from .safe_json import parse_json

DEFAULT_SECRET_KEYS = (
    "password",
    "passwd",
    "pwd",
    "token",
    "secret",
    "authorization",
    "auth",
    "cookie",
    "api_key",
    "apikey",
    "credentials",
    "private_key",
    "passphrase",
    "dsn",
    "client_secret",
    "jwt",
)
REDACTED = "[redacted]"
SHORT = 5  # needles shorter than this match whole words of a key only
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
# The password of a URL's user information (the user name is kept: it says which account).
_URL_PASSWORD = re.compile(
    r"""(\b[a-z][a-z0-9+.-]*://[^\s/?#@:'"<>]*:)(?!\[redacted\]@)([^\s/?#@'"<>]+)(@)""", re.IGNORECASE
)
# ``Bearer <token>`` anywhere; a lowercase word after it is prose ("Bearer token missing").
_BEARER = re.compile(
    r"(\bBearer[ \t]+)(?!\[redacted\])(?!(?-i:[a-z]{1,20})(?:$|\s|[.,;:)](?:$|\s)))([A-Za-z0-9._~+/=-]+)", re.IGNORECASE
)
# Keys of a name/value pair that name what the pair holds: {"name": "Authorization", "value": …}.
PAIR_NAMES = ("name", "key", "header")


def _normalise(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _words(key: str) -> set[str]:
    """``basicAuth`` → {basic, auth}; ``X_API_KEY`` → {x, api, key}; joined neighbours too."""
    words = [w.lower() for w in _WORD.findall(key)]
    return {"".join(words[i:j]) for i in range(len(words)) for j in range(i + 1, min(len(words), i + 3) + 1)}


class Redactor:
    def __init__(self, secret_keys: Iterable[str] = DEFAULT_SECRET_KEYS):
        needles = {_normalise(k) for k in secret_keys if _normalise(k)}
        # "credentials" also covers "credential"; plural forms are common either way.
        needles |= {n[:-1] for n in needles if n.endswith("s") and len(n) > SHORT + 1}
        self.needles = tuple(sorted(n for n in needles if len(n) >= SHORT))
        self.words = frozenset(n for n in needles if len(n) < SHORT)
        quoted_name = r'"(?:[^"\\]|\\.)*?(?:' + "|".join(PAIR_NAMES) + r')"'
        json_value = r'("(?:[^"\\]|\\.)*"?|[^,}\]\s]+)'
        python_value = r"""('(?:[^'\\]|\\.)*'?|"(?:[^"\\]|\\.)*"?|[^,}\]\s]+)"""
        long_keys = "|".join(r"[-_ ]?".join(re.escape(ch) for ch in n) for n in self.needles)
        short_keys = "|".join(r"(?<![A-Za-z])" + re.escape(w) + r"(?![a-z])" for w in self.words)
        key = "|".join(k for k in (long_keys, short_keys) if k) or r"(?!)"
        # A quoted key containing a needle, then its value: a string, or any scalar run up to
        # the next comma/brace.
        self.text_re = re.compile(
            r'("(?:[^"\\]|\\.)*?(?:' + key + r')(?:[^"\\]|\\.)*?"\s*:\s*)' + json_value,
            re.IGNORECASE,
        )
        # The same in Python's repr: ``{'password': 'x'}``.
        self.python_re = re.compile(
            r"('(?:[^'\\\n]|\\.)*?(?:" + key + r")(?:[^'\\\n]|\\.)*?'\s*:\s*)" + python_value,
            re.IGNORECASE,
        )
        # ``"name": "Authorization", "value": …`` in text that could not be parsed.
        self.pair_re = re.compile(
            r"("
            + quoted_name
            + r'\s*:\s*"(?:[^"\\]|\\.)*?(?:'
            + key
            + r')(?:[^"\\]|\\.)*?"\s*,\s*"value"\s*:\s*)'
            + json_value,
            re.IGNORECASE,
        )
        # Free text: ``password=hunter2``, ``token: abc``, ``Authorization: Bearer x`` (the
        # value runs to the end of the line for authorization headers, else to a separator).
        self.free_re = re.compile(
            r"((?:" + key + r")[A-Za-z0-9_-]*[ \t]*[=:][ \t]*)(?!\[redacted\])"
            r'((?:Bearer|Basic)[ \t]+\S+|"[^"\n]*"|\'[^\'\n]*\'|[^\s&,;"\']+)',
            re.IGNORECASE,
        )

    def is_secret(self, key: str) -> bool:
        norm = _normalise(key)
        return any(n in norm for n in self.needles) or bool(self.words and self.words & _words(key))

    def names_secret(self, pair: dict) -> bool:
        """True for ``{"name": "Authorization", "value": …}``: its value is the secret."""
        return "value" in pair and any(isinstance(pair.get(n), str) and self.is_secret(pair[n]) for n in PAIR_NAMES)

    def value(self, data: Any) -> Any:
        if isinstance(data, dict):
            named = self.names_secret(data)
            return {
                k: (
                    REDACTED
                    if isinstance(k, str) and (self.is_secret(k) or (named and k == "value"))
                    else self.value(v)
                )
                for k, v in data.items()
            }
        if isinstance(data, list):
            return [self.value(v) for v in data]
        if isinstance(data, str):
            return self._string(data)
        return data

    def _string(self, text: str) -> str:
        if text[:1] in ("{", "[") and text.rstrip()[-1:] in ("}", "]"):
            ok, inner = parse_json(text)
            if ok:
                return json.dumps(self.value(inner), ensure_ascii=False, separators=(",", ":"))
        return self.text(text)

    def may_hold_key(self, text: str) -> bool:
        """False when no secret can occur in ``text``: no URL (``://``), no ``Bearer``, and no
        secret key, as the key patterns match a needle's
        letters with at most ``-``/``_``/space between them, case-insensitively, so the
        needle is a substring of the text case-folded with everything but ``a-z0-9`` removed.
        A C-speed test that spares the two regex passes (≈1 ms per 4 KB, the bulk of a large
        export's time) for the text that holds no key at all."""
        if "://" in text:
            return True
        folded = _NOT_ALNUM.sub("", text.casefold())
        return "bearer" in folded or any(n in folded for n in self.needles) or any(w in folded for w in self.words)

    def text(self, raw: str) -> str:
        return self.every_pass(raw) if self.may_hold_key(raw) else raw

    def every_pass(self, raw: str) -> str:
        """``text`` without the prefilter (what the prefilter must never change)."""
        redacted = self.pair_re.sub(lambda m: m.group(1) + '"' + REDACTED + '"', raw)
        redacted = self.text_re.sub(lambda m: m.group(1) + '"' + REDACTED + '"', redacted)
        redacted = self.python_re.sub(lambda m: m.group(1) + "'" + REDACTED + "'", redacted)
        redacted = self.free_re.sub(lambda m: m.group(1) + REDACTED, redacted)
        redacted = _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(3), redacted)
        return _BEARER.sub(lambda m: m.group(1) + REDACTED, redacted)
