"""The redactor's prefilter (``Redactor.may_hold_key``) skips the regex passes only for text
they could not change: on tricky and random text, redaction with it equals redaction without."""

from __future__ import annotations

import random

from queues.redact import Redactor

TRICKY = [
    "Pass-Word=abc",
    "PASS_WORD: x",
    "pass word=y",
    "x: 1 AUTH: y",
    "basicAuth=z",
    'ok {"paſsword": "x"}',
    "\u212aEY",
    "Authorization: Bearer abc",
    '{"api-Key": 3}',
    "author=me",
    "tok en=1",
    "p\u0130wd=2",
    "redis://:pw@h",
    "{'pass word': 1}",
    '{"name": "auth", "value": 2}',
    "BEARER abc.1",
]
PIECES = [
    "pass",
    "word",
    "-",
    "_",
    " ",
    "=",
    ": ",
    '"',
    "{",
    "}",
    "auth",
    "token",
    "api",
    "key",
    "ſ",
    "\u212a",
    "PWD",
    "x",
    "Bearer ",
    "\n",
    "secret",
    "cookie",
    "credential",
    "s",
    "private",
    "İ",
    "://",
    "@",
    "'",
    "name",
    "value",
    "dsn",
    "1.",
]


def without_prefilter(r: Redactor, raw: str) -> str:
    return r.every_pass(raw)


def test_the_prefilter_never_skips_text_the_patterns_would_change():
    r = Redactor()
    rng = random.Random(12)
    samples = TRICKY + ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 12))) for _ in range(3000)]
    changed = 0
    for text in samples:
        expected = without_prefilter(r, text)
        assert r.text(text) == expected, text
        changed += expected != text
    assert changed > 100  # the samples do exercise redaction


def test_the_prefilter_skips_text_without_any_key():
    r = Redactor()
    assert not r.may_hold_key("x" * 4096)
    assert not r.may_hold_key("failed after 3 attempts: connection refused")
    assert r.may_hold_key("PASS-word")
