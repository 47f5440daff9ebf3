"""Secrets the default rules missed: Python's repr of a dict, URLs with a password, header
lists of name/value pairs, keys ``passphrase``/``dsn``/``client_secret``/``jwt`` and a bearer
token in free text. Each in parsed JSON and in text that could not be parsed."""

from __future__ import annotations

import json

import pytest

from queues.redact import REDACTED, Redactor

R = Redactor()


@pytest.mark.parametrize(
    "raw, secret, kept",
    [
        ("KeyError: {'user': 'ann', 'password': 'py-pw'}", "py-pw", "'user': 'ann'"),
        ("{'db': {'passwd': \"py-dq\"}, 'n': 1}", "py-dq", "'n': 1"),
        ("could not connect to postgres://app:pg-pass@db:5432/main", "pg-pass", "postgres://app:"),
        ("redis://:redis-pass@cache:6379/0 refused", "redis-pass", "@cache:6379/0 refused"),
        ("amqp://u:amqp-pass@h", "amqp-pass", "amqp://u:"),
        ('[{"name": "Authorization", "value": "Basic aGVhZGVy"}, {"name": "Accept"', "aGVhZGVy", '"Accept"'),
        ('{"header": "X-Api-Key", "value": "hdr-key", "x": 1', "hdr-key", '"x": 1'),
        ("passphrase=pp-value", "pp-value", "passphrase="),
        ("dsn: dsn-value", "dsn-value", "dsn:"),
        ('{"client_secret": "cs-value", "client_id": "id-visible"', "cs-value", "id-visible"),
        ("jwt=eyJhbGciOiJIUzI1NiJ9.jwt-value", "jwt-value", "jwt="),
        ("request failed with Bearer eyJ0eXAi.bearer-value (401)", "bearer-value", "(401)"),
    ],
)
def test_free_text(raw, secret, kept):
    out = R.text(raw)
    assert secret not in out and REDACTED in out and kept in out, out


def test_parsed_json():
    data = {
        "headers": [{"name": "Authorization", "value": "hdr-secret"}, {"name": "author", "value": "me"}],
        "passphrase": "pp",
        "dsn": "postgres://u:dsn-pw@h/db",
        "clientSecret": "cs",
        "jwt": "tok",
        "target": "redis://:url-pw@cache:6379",
        "log": "sent Bearer abc.DEF-123",
    }
    out = json.dumps(R.value(data))
    for secret in ("hdr-secret", '"pp"', "dsn-pw", '"cs"', '"tok"', "url-pw", "abc.DEF-123"):
        assert secret not in out, secret
    assert '{"name": "author", "value": "me"}' in out and "redis://:[redacted]@cache:6379" in out


@pytest.mark.parametrize(
    "raw",
    [
        "Bearer token missing",  # prose, not a token
        "see https://example.com/users/@ann and http://host:8080/x",  # no password in either
        "the author wrote {'title': 'x'}",
        '{"name": "Accept", "value": "text/html"}',
    ],
)
def test_what_is_not_a_secret_stays(raw):
    assert R.text(raw) == raw


def test_url_passwords_and_bearer_tokens_whatever_the_configured_keys():
    r = Redactor(["internal_code"])
    assert r.text("redis://:pw@h and Bearer abc.123") == "redis://:[redacted]@h and Bearer [redacted]"
