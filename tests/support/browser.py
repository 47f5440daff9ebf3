"""Helpers for the end-to-end tests: the running app as the browser sees it, and logging in."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

from tests.support.servers import ROOT


def manage(env: dict, *args: str) -> str:
    """``manage.py <args>`` of the app under test (its environment ``env``); its stdout."""
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


@dataclass
class LiveApp:
    url: str
    username: str
    password: str
    env: dict


def log_in(page, app: LiveApp) -> None:
    page.goto(app.url + "/")
    assert "/login/" in page.url
    page.fill("input[name=username]", app.username)
    page.fill("input[name=password]", app.password)
    page.click("button[type=submit]")
    page.wait_for_url(app.url + "/")
