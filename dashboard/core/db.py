"""Database helpers shared by the monitor's threads."""

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
