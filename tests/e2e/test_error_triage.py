"""In real Chromium: a permanent error group (jobs failed by real BullMQ workers with a
validation error) is not retried blindly — the retry preview is refused with a message naming
the class until the confirmation "Retry anyway: this group is permanent" is ticked."""

from __future__ import annotations

import pytest

from tests.support.browser import log_in
from tests.support.servers import run_node

pytestmark = [pytest.mark.e2e, pytest.mark.node]


def test_a_permanent_group_needs_the_confirmation_naming_its_class_to_retry(page, live_app, node_fixture_db):
    url = node_fixture_db.url
    run_node("seed_actions.mjs", url, "e2e-triage", "4", "0", "0", "signup", "ValidationError: email is invalid")
    run_node("seed_actions.mjs", url, "e2e-triage", "2", "0", "0", "signup", "read ECONNRESET")
    log_in(page, live_app)
    page.goto(live_app.url + "/q/default/bull/e2e-triage/errors/")

    permanent = page.locator("tr.error-group[data-error-class=permanent]")
    transient = page.locator("tr.error-group[data-error-class=transient]")
    assert permanent.count() == 1 and transient.count() == 1
    assert "permanent" in permanent.locator(".triage-class").inner_text()
    assert "retrying wastes attempts" in permanent.locator(".triage-advice").inner_text()
    assert transient.locator(".retry-outlook").is_visible()
    assert transient.locator("input[name=confirm_class]").count() == 0

    permanent.locator("select[name=action]").select_option("retry")
    permanent.locator("button:has-text('Preview')").click()
    page.wait_for_selector("#bulk-panel :text('classed permanent')")
    assert page.locator("#bulk-panel .bulk-preview").count() == 0

    permanent.locator("input[name=confirm_class]").check()
    permanent.locator("button:has-text('Preview')").click()
    preview = page.wait_for_selector("#bulk-panel .bulk-preview")
    assert preview.get_attribute("data-count") == "4"
