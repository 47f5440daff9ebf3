"""Every failed login is counted, also when many arrive at once.

django-axes records a failure in a transaction that reads the attempt row, then writes it. On
SQLite, a transaction that starts reading and then needs to write while another connection
writes fails at once with "database is locked" (SQLite does not wait there, to avoid a
deadlock): the login answered 500 and the failure was not counted, so an attacker sending
guesses in parallel got more than the limit. The transaction is rolled back when that happens,
so running the handler again is safe: it is retried (with a short random pause, so concurrent
ones do not collide again in step) until it goes through.
"""

from __future__ import annotations

import logging
import random
import time

from axes.handlers.database import AxesDatabaseHandler
from django.db import OperationalError

log = logging.getLogger("queuewatch.accounts")

ATTEMPTS = 40
PAUSE_S = 0.05  # the longest random pause before a retry grows from this, up to MAX_PAUSE_S
MAX_PAUSE_S = 0.5


def _locked(exc: OperationalError) -> bool:
    return "locked" in str(exc) or "busy" in str(exc)


def retried(operation):
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return operation()
        except OperationalError as exc:
            if attempt == ATTEMPTS or not _locked(exc):
                raise
            log.debug("login bookkeeping found the database locked; retry %d", attempt)
            time.sleep(random.uniform(0, min(MAX_PAUSE_S, PAUSE_S * attempt)))
    return None


class RetryingDatabaseHandler(AxesDatabaseHandler):
    def user_login_failed(self, sender, credentials: dict, request=None, **kwargs):
        return retried(
            lambda: super(RetryingDatabaseHandler, self).user_login_failed(sender, credentials, request, **kwargs)
        )

    def user_logged_in(self, sender, request, user, **kwargs):
        return retried(lambda: super(RetryingDatabaseHandler, self).user_logged_in(sender, request, user, **kwargs))
