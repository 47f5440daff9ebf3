"""Django started in a process of its own with production-like settings (a fresh environment,
no test settings): what the settings module computes from the environment at start-up."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.servers import ROOT

PRODUCTION = {
    "DJANGO_SETTINGS_MODULE": "dashboard.settings",
    "QUEUEWATCH_SECRET_KEY": "p9Z-" + "".join(chr(33 + (i * 7) % 90) for i in range(60)).replace("'", "x"),
    "QUEUEWATCH_ALLOWED_HOSTS": "queues.example.com",
    "QUEUEWATCH_REDIS_URL": "redis://127.0.0.1:1/0",  # never contacted by these commands
}


def run_django(env_extra: dict, *args: str) -> subprocess.CompletedProcess:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("QUEUEWATCH_") and k != "DJANGO_SETTINGS_MODULE"},
        **PRODUCTION,
        **env_extra,
    }
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def settings_of(env_extra: dict, *names: str) -> list[str]:
    code = "import django; django.setup(); from django.conf import settings as s; " + "; ".join(
        f"print(repr(getattr(s, {n!r}, None)))" for n in names
    )
    done = run_django(env_extra, "-c", code)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()
