"""Test settings: the real settings, minus anything that could reach a server the tests did
not start. Connections are pointed at the test session's own redis-server by fixtures; the
database is SQLite, or with QUEUEWATCH_TEST_DATABASE=postgres a private PostgreSQL reached
through docker-compose.yml's own DATABASE_URL (tests/support/app_database.py)."""

import os

from tests.support.app_database import database_url

os.environ.setdefault("QUEUEWATCH_INSECURE_DEV", "1")
for var in [
    v for v in os.environ if v.startswith(("QUEUEWATCH_URL_", "QUEUEWATCH_REDIS_URL")) or v == "QUEUEWATCH_CONNECTIONS"
]:
    del os.environ[var]

# The settings module parses the URL as in production; only for that import, so that neither a
# DATABASE_URL of the caller's nor this one reaches the processes tests start.
os.environ.pop("DATABASE_URL", None)
_url = database_url()
if _url:
    os.environ["DATABASE_URL"] = _url
from dashboard.settings import *  # noqa: E402,F401,F403

os.environ.pop("DATABASE_URL", None)

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests
QUEUEWATCH_DISCOVERY_TTL = 0
QUEUEWATCH_REDIS_TIMEOUT = 2
# The test receivers (tests/support/receivers.py) listen on loopback, which webhooks may not
# reach by default: allow it explicitly, as an operator would for a local receiver.
QUEUEWATCH_WEBHOOK_ALLOW = ["127.0.0.1"]

# A file database (in WAL mode, as dashboard/settings.py opens SQLite) rather than Django's
# shared-cache in-memory one: tests run the monitor in a thread beside the test, and shared-cache
# SQLite locks whole tables (reads of a table the monitor is writing failed with "database table
# is locked"). One file per test process, so parallel runs do not collide.
import tempfile  # noqa: E402

if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    DATABASES["default"]["TEST"] = {
        "NAME": os.path.join(tempfile.gettempdir(), f"queuewatch-test-{os.getpid()}.sqlite3")
    }
