"""Database helpers: retries for the monitor's threads, text every supported database stores."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.db import OperationalError


def db_retry(operation: Callable, attempts: int = 5):
    """Run a small database operation, retrying briefly when SQLite reports a lock (several
    threads write: the monitor's flush, the bulk runner, the outbox sender, web requests).
    Other errors propagate."""
    for n in range(attempts):
        try:
            return operation()
        except OperationalError:
            if n == attempts - 1:
                raise
            time.sleep(0.05 * (n + 1))


def storable(value):
    """``value`` (text, or lists and dicts of it) with each NUL character replaced by U+FFFD:
    PostgreSQL keeps no NUL in text or jsonb (SQLite does), and a row recording hostile input
    (a refused time zone "a\\x00b") must still be written."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    if isinstance(value, (list, tuple)):
        return [storable(v) for v in value]
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    return value
