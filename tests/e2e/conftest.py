"""End-to-end fixtures: Queuewatch served by its web server (uvicorn) exactly as users run it (a subprocess with
its own SQLite file), and real headless Chromium driven by Playwright."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.browser import LiveApp, close_within, manage
from tests.support.servers import DIES_WITH_TESTS, ROOT, AppServer

CHROMIUM = os.environ.get("QUEUEWATCH_CHROMIUM", "/usr/bin/chromium")
# Flags for a closed network and a root user: no sandbox, no background calls home.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def live_app(tmp_path_factory, node_fixture_db, bullmq_fixture):
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("QUEUEWATCH_") and k != "DJANGO_SETTINGS_MODULE"},
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "QUEUEWATCH_SECRET_KEY": "e2e-" + "x" * 40,
        "QUEUEWATCH_REDIS_URL": node_fixture_db.url,
        "QUEUEWATCH_PREFIXES": "bull,{app:bull}",
        "DATABASE_URL": f"sqlite:///{tmp_path_factory.mktemp('e2e') / 'db.sqlite3'}",
        "QUEUEWATCH_MONITOR_TICK_MS": "1000",
        "QUEUEWATCH_INSECURE_DEV": "1",  # plain http on loopback, as `./dev run` serves it
        "QUEUEWATCH_WEBHOOK_ALLOW": "127.0.0.1",  # the local webhook receiver of test_channels
    }
    manage(env, "migrate", "-v0")
    username, password = manage(env, "demo_user", "--username", "e2e").split(" / ")
    monitor = subprocess.Popen(
        [sys.executable, "manage.py", "monitor"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=DIES_WITH_TESTS,
    )
    web = None
    try:
        web = AppServer(env)  # answering, or it raised with what the server said
        yield LiveApp(web.url, username, password, env)
    finally:  # also when startup fails: no server or monitor outlives the session
        if web is not None:
            web.stop()
        monitor.terminate()
        try:
            monitor.wait(10)
        except subprocess.TimeoutExpired:
            monitor.kill()
            monitor.wait(10)


class Chromium:
    """The module's Chromium: what the tests ask of a Playwright browser (``new_context``), launched
    again if ``close_within`` had to kill it, so one hung close does not fail the module's other
    tests."""

    def __init__(self, playwright):
        self._playwright = playwright
        self._browser = None

    def _running(self):
        if self._browser is None or not self._browser.is_connected():
            chromium = self._playwright.chromium
            self._browser = chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        return self._browser

    def new_context(self, **options):
        return self._running().new_context(**options)

    def close(self) -> None:
        if self._browser is not None and self._browser.is_connected():
            close_within(self._browser.close)


@pytest.fixture(scope="module")
def browser():
    # Module scope, not session: Playwright's sync API keeps an event loop running in this
    # thread while it is open, which would break asyncio.run() in tests collected after it.
    from playwright.sync_api import sync_playwright

    if not os.path.exists(CHROMIUM):
        pytest.fail(f"Chromium not found at {CHROMIUM}: install Debian's 'chromium' package or set QUEUEWATCH_CHROMIUM")
    with sync_playwright() as pw:
        chromium = Chromium(pw)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    # bypass_csp: Playwright's own wait_for_function evaluates its predicate with eval(), which
    # our script-src 'self' refuses. The app itself runs under the enforced policy in
    # tests/e2e/test_csp.py (strict_page), which fails on any CSP violation.
    context = browser.new_context(bypass_csp=True)
    p = context.new_page()
    p.set_default_timeout(10_000)
    yield p
    close_within(context.close)


@pytest.fixture
def strict_page(browser):
    """A page with the Content-Security-Policy enforced; collects console errors."""
    context = browser.new_context()
    p = context.new_page()
    p.set_default_timeout(10_000)
    p.console_errors = []
    p.failed_responses = []
    # A missing resource is reported by the browser console without its address: keep the
    # address from the response instead.
    p.on(
        "console",
        lambda msg: (
            msg.type == "error"
            and not msg.text.startswith("Failed to load resource")
            and p.console_errors.append(msg.text)
        ),
    )
    p.on("response", lambda r: r.status >= 400 and p.failed_responses.append(f"{r.status} {r.url}"))
    p.on("pageerror", lambda exc: p.console_errors.append(str(exc)))
    yield p
    close_within(context.close)
