"""Secrets at rest: webhook signing secrets and custom header values are stored encrypted with
Fernet (AES-128-CBC + HMAC-SHA256, from ``cryptography``), so a copy of the database alone does
not give them away.

Keys come from ``QUEUEWATCH_ENCRYPTION_KEY`` (or ``_FILE``): comma-separated Fernet keys, the
first encrypts and every one decrypts (``MultiFernet``), which is how keys are rotated: put the new
key first, keep the old one after it, run ``manage.py rotate_secrets``, then drop the old key.
Without the setting, a key derived from ``QUEUEWATCH_SECRET_KEY`` is used (documented in
docs/operations.md): set a key of its own to be able to change the secret key independently.

Stored values carry the ``fernet:`` prefix; a value without it is legacy plaintext (rows written
before the data migration) and is returned as it is.
"""

from __future__ import annotations

import base64
import functools
import hashlib

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.db import models

PREFIX = "fernet:"


class UndecryptableSecret(Exception):
    """A stored secret none of the configured keys can open (a key was dropped too early)."""


class Undecryptable(str):
    """What ``EncryptedTextField`` loads when no key opens the stored value: the stored text
    itself, kept as it is on save (so adding the old key back recovers it), and refused by
    whoever needs the plaintext (the webhook sender)."""


def derived_key(secret_key: str) -> str:
    """The key used when QUEUEWATCH_ENCRYPTION_KEY is unset."""
    return base64.urlsafe_b64encode(hashlib.sha256(b"queuewatch-encryption:" + secret_key.encode()).digest()).decode()


def parse_keys(value: str | None, *, secret_key: str) -> list[Fernet]:
    """The configured keys (``ValueError`` names a malformed one), or the derived fallback."""
    if not value:
        return [Fernet(derived_key(secret_key).encode())]
    keys = []
    for number, key in enumerate((k.strip() for k in value.split(",") if k.strip()), start=1):
        try:
            keys.append(Fernet(key.encode()))
        except ValueError:
            raise ValueError(
                f"key {number} is not a Fernet key (32 url-safe base64 bytes; "
                "make one with `python -c 'from cryptography.fernet import Fernet; "
                "print(Fernet.generate_key().decode())'`)"
            ) from None
    return keys


@functools.lru_cache(maxsize=4)
def _box(value: str | None, secret_key: str) -> MultiFernet:
    return MultiFernet(parse_keys(value, secret_key=secret_key))


def box() -> MultiFernet:
    return _box(settings.QUEUEWATCH_ENCRYPTION_KEY, settings.SECRET_KEY)


def encrypt(text: str, *, force: bool = False) -> str:
    """``fernet:…``; an already encrypted value (a kept header) is left alone unless ``force``."""
    if not text or (text.startswith(PREFIX) and not force):
        return text
    return PREFIX + box().encrypt(text.encode("utf-8")).decode("ascii")


def decrypt(stored: str) -> str:
    if not stored or not stored.startswith(PREFIX):
        return stored or ""
    try:
        return box().decrypt(stored[len(PREFIX) :].encode("ascii")).decode("utf-8")
    except InvalidToken:
        raise UndecryptableSecret("a stored secret cannot be decrypted with QUEUEWATCH_ENCRYPTION_KEY") from None


def rotate(stored: str) -> str:
    """Re-encrypted with the first key (plaintext gets encrypted)."""
    if not stored:
        return stored
    if not stored.startswith(PREFIX):
        return encrypt(stored)
    return PREFIX + box().rotate(stored[len(PREFIX) :].encode("ascii")).decode("ascii")


def encrypt_values(mapping: dict) -> dict:
    return {name: encrypt(value) for name, value in (mapping or {}).items()}


def decrypt_values(mapping: dict) -> dict:
    return {name: decrypt(value) for name, value in (mapping or {}).items()}


class EncryptedTextField(models.TextField):
    """Plaintext in Python, ``fernet:…`` in the database."""

    def from_db_value(self, value, expression, connection):
        if not value:
            return value
        try:
            return decrypt(value)
        except UndecryptableSecret:
            return Undecryptable(value)

    def get_prep_value(self, value):
        if isinstance(value, Undecryptable):
            return str(value)
        value = super().get_prep_value(value)
        return encrypt(value, force=True) if value else value
