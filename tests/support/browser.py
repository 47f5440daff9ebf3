"""Helpers for the end-to-end tests: the running app as the browser sees it, and logging in."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
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


def run_async(coroutine_function, *args, timeout: float = 60):
    """Run an async function to its end on an event loop in a thread of its own (Playwright's
    sync API keeps one running in the test's thread, where ``asyncio.run`` refuses); its result."""
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["result"] = asyncio.run(coroutine_function(*args))
        except BaseException as exc:  # noqa: BLE001 - raised again in the test's thread
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimeoutError(f"{coroutine_function.__name__} still running after {timeout} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("result")
