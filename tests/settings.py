"""Test settings: the real settings, minus anything that could reach a server the tests did
not start. Connections are pointed at the test session's own redis-server by fixtures."""

import os

os.environ.setdefault("QUEUEWATCH_INSECURE_DEV", "1")
for var in [v for v in os.environ if v.startswith("QUEUEWATCH_REDIS_URL") or v == "QUEUEWATCH_CONNECTIONS"]:
    del os.environ[var]

from dashboard.settings import *  # noqa: E402,F401,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests
QUEUEWATCH_DISCOVERY_TTL = 0
QUEUEWATCH_REDIS_TIMEOUT = 2
# The test receivers (tests/support/receivers.py) listen on loopback, which webhooks may not
# reach by default: allow it explicitly, as an operator would for a local receiver.
QUEUEWATCH_WEBHOOK_ALLOW = ["127.0.0.1"]
