"""Helpers for the end-to-end tests: the running app as the browser sees it, and logging in."""

from __future__ import annotations

import asyncio
import os
import signal
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


def follow(page, target) -> None:
    """Click the link ``target`` (a selector or a locator) and wait until the page it opens has
    loaded: its deferred scripts, htmx among them, have run. Filled or clicked any sooner, a form
    may be the old page's (same field names), or be submitted natively before htmx has taken it."""
    with page.expect_navigation():
        if isinstance(target, str):
            page.click(target)
        else:
            target.click()


def renewed(page, selector: str, act) -> None:
    """Run ``act`` (a click, a submit) and wait until ``selector`` matches an element the answer
    swapped in: where the page already shows one (an earlier action's result in the same box),
    that one must have left the page first, or the wait would pass before the answer arrived."""
    old = page.query_selector(selector)
    act()
    if old is None:
        page.wait_for_selector(selector)
        return
    page.wait_for_function(
        "([old, selector]) => !old.isConnected && document.querySelector(selector) !== null",
        arg=[old, selector],
    )


def hold_back(page, matches, ms: int = 800) -> None:
    """Hold each request ``matches(url)`` picks for ``ms`` before it goes out, so two answers
    arrive in a known order. A test asserting that the held one lost waits longer than ``ms``."""

    def hold(route) -> None:
        page.wait_for_timeout(ms)
        route.continue_()

    page.route(matches, hold)


def own_chromium_pids() -> list[int]:
    """The Chromium processes this test process started (through Playwright's driver)."""
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
                text = stat.read()
        except OSError:
            continue
        names[int(entry)] = text[text.index("(") + 1 : text.rindex(")")]
        parents[int(entry)] = int(text[text.rindex(")") + 2 :].split()[1])

    def descends(pid: int) -> bool:
        while pid > 1:
            pid = parents.get(pid, 0)
            if pid == os.getpid():
                return True
        return False

    return [pid for pid, name in names.items() if name.startswith("chromium") and descends(pid)]


def close_within(close, seconds: float = 30.0) -> None:
    """Call ``close`` (a browser's or a context's) and, should it not return within ``seconds``,
    kill the Chromium this process started, which ends the wait. Chromium now and then never
    answers a close; the test's worker would then wait until pytest-timeout ends it, ten minutes
    later, and the test that happened to hold the fixture would fail for it."""

    killed = threading.Event()

    def kill() -> None:
        pids = own_chromium_pids()
        print(f"Chromium did not close within {seconds} s: killing {pids}", file=sys.stderr)
        killed.set()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    timer = threading.Timer(seconds, kill)
    timer.daemon = True
    timer.start()
    try:
        close()
    except Exception:
        if not killed.is_set():
            raise  # a close that failed on its own; one ended by the kill above is what was asked
    finally:
        timer.cancel()


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
