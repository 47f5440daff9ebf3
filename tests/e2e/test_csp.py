"""In real Chromium with the Content-Security-Policy enforced (no 'unsafe-inline', no eval):
the pages load, htmx swaps and the live socket connect without a single CSP violation or
script error."""

from __future__ import annotations

import pytest

from tests.support.browser import log_in

pytestmark = [pytest.mark.e2e, pytest.mark.node]


def test_pages_work_under_the_enforced_policy(strict_page, live_app, bullmq_fixture):
    page = strict_page
    log_in(page, live_app)
    assert "script-src 'self'" in (page.request.get(live_app.url + "/").headers.get("content-security-policy") or "")
    page.wait_for_selector("table.queues")
    for path in ("/q/default/bull/mixed/?state=failed", "/health/", "/alerts/", "/alerts/channels/new/", "/audit/"):
        page.goto(live_app.url + path)
        page.wait_for_load_state("load")
    # htmx still swaps in place (the tabs of a queue page) under the policy
    page.goto(live_app.url + "/q/default/bull/mixed/")
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
