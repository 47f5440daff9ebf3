"""Alerting in real Chromium, through daphne, channels_redis and the monitor process: the
maintenance-window form previews the next starts in the window's zone as you type and
explains a bad expression; a rule created in the form fires on real Node BullMQ jobs and
the firing banner appears on an open page without a reload."""
# Literal `bull:` keys kept: the session's app and monitor (daphne) serve the Node-built database, prefix 'bull'.

from __future__ import annotations

import re

import pytest

from tests.support.browser import log_in
from tests.support.servers import run_node

pytestmark = [pytest.mark.e2e, pytest.mark.node]

QUEUE = "e2e-alerts"


def test_window_form_previews_cron_starts_in_its_zone(page, live_app):
    log_in(page, live_app)
    page.goto(live_app.url + "/alerts/silences/")
    form = page.locator("#window-form")
    form.locator("[name=cron]").fill("30 2 * * *")
    form.locator("[name=time_zone]").fill("Europe/Paris")
    form.locator("[name=time_zone]").dispatch_event("change")
    # The preview loaded with the page (UTC) is replaced by the one for the typed zone.
    page.wait_for_function(
        "(document.querySelector('#cron-preview') || {}).textContent?.includes('in Europe/Paris:')"
        " && document.querySelectorAll('#cron-preview li').length === 5"
    )
    first = page.locator("#cron-preview li").first.inner_text()
    assert re.match(r"\w{3} \d{4}-\d\d-\d\d 02:30 CES?T", first), first
    form.locator("[name=cron]").fill("30 2 * *")
    form.locator("[name=cron]").dispatch_event("change")
    page.wait_for_selector("#cron-preview .field-error")
    assert "has 4 fields" in page.locator("#cron-preview .field-error").inner_text()


def test_a_rule_made_in_the_form_fires_and_the_banner_appears_live(page, live_app, node_fixture_db):
    log_in(page, live_app)
    page.goto(live_app.url + "/alerts/rules/new")
    page.fill("[name=name]", "e2e backlog")
    page.select_option("[name=kind]", "backlog")
    page.fill("[name=queue_glob]", QUEUE)
    page.fill("[name=threshold]", "-5")
    page.click("button[name=save]")
    assert "The threshold cannot be negative." in page.locator("#field-threshold .field-error").inner_text()
    page.fill("[name=threshold]", "1")
    page.click("button[name=save]")
    page.wait_for_url(live_app.url + "/alerts/rules/")

    # A page with no live content of its own, open before anything fires.
    page.goto(live_app.url + "/alerts/silences/")
    page.wait_for_selector("#live-status[data-state=live]")
    page.evaluate("window.__noReload = 1")
    client = node_fixture_db.client()
    try:
        run_node("produce.mjs", "add", node_fixture_db.url, QUEUE, "3")
        page.wait_for_selector("#firing-alerts .firing", timeout=30_000)
        banner = page.locator("#firing-alerts").inner_text()
        assert "1 alert firing" in banner and "e2e backlog" in banner and QUEUE in banner
        assert page.evaluate("window.__noReload") == 1
    finally:
        for key in client.scan_iter(f"bull:{QUEUE}:*"):
            client.delete(key)
        page.goto(live_app.url + "/alerts/rules/")
        page.click("text=e2e backlog")
        page.click("text=Edit")
        page.click("button.danger")
