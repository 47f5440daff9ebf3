"""In real Chromium with the Content-Security-Policy enforced (no 'unsafe-inline', no eval):
the pages load, htmx swaps and the live socket connect without a single CSP violation or
script error."""
# Literal `bull:` keys kept: the session's app (uvicorn) and monitor serve the Node-built database, prefix 'bull'.

from __future__ import annotations

import pytest

from tests.support.browser import log_in

pytestmark = [pytest.mark.e2e, pytest.mark.node]


def test_pages_work_under_the_enforced_policy(strict_page, live_app, bullmq_fixture):
    page = strict_page

    def open_live(path: str) -> None:
        # Each page's live socket open before the next page: leaving a socket still connecting
        # is an error event (which htmx logs) that says nothing of the policy.
        page.goto(live_app.url + path)
        page.wait_for_selector("#live-status[data-state=live]")

    log_in(page, live_app)
    assert "script-src 'self'" in (page.request.get(live_app.url + "/").headers.get("content-security-policy") or "")
    page.wait_for_selector("table.queues")
    page.wait_for_selector("#live-status[data-state=live]")
    for path in ("/q/default/bull/mixed/?state=failed", "/health/", "/alerts/", "/alerts/channels/new/", "/audit/"):
        open_live(path)
    # htmx still swaps in place (the tabs of a queue page) under the policy
    open_live("/q/default/bull/mixed/")
    page.click("nav.tabs a.state-completed")
    page.wait_for_selector("#job-list[data-state=completed]")
    # the channel form's kind switch is static JavaScript, not inline script
    page.goto(live_app.url + "/alerts/channels/new/")
    page.select_option("select[name=kind]", "webhook")
    assert page.is_visible("input[name=url]") and not page.is_visible("textarea[name=to]")
    violations = [e for e in page.console_errors if "Content Security Policy" in e or "Refused to" in e]
    assert violations == [], violations
    assert page.console_errors == [], page.console_errors
    assert page.failed_responses == [], page.failed_responses


def test_a_new_queue_appears_live_on_the_overview(strict_page, live_app, node_fixture_client, bullmq_fixture):
    """The overview's socket carries rows this page does not show yet: the new queue's row makes
    the page reload its tables (it appears live) and htmx never reports a missing target."""
    page = strict_page
    log_in(page, live_app)
    page.wait_for_selector("#live-status[data-state=live]")
    client = node_fixture_client
    client.hset("bull:brand-new-q:meta", "opts.maxLenEvents", "10000")
    client.hset("bull:brand-new-q:1", mapping={"name": "x", "data": "{}", "opts": "{}", "timestamp": 1_700_000_000_000})
    client.lpush("bull:brand-new-q:wait", "1")
    try:
        # The monitor rediscovers every 10 s; then the row arrives and the tables are reloaded.
        page.wait_for_selector("table.queues a:has-text('brand-new-q')", timeout=30_000)
        assert page.console_errors == [], page.console_errors
    finally:
        client.delete("bull:brand-new-q:meta", "bull:brand-new-q:1", "bull:brand-new-q:wait")
