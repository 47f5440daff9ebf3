"""Alerting in real Chromium, through the shipped web server (uvicorn), channels_redis and the monitor process: the
maintenance-window form previews the next starts in the window's zone as you type and
explains a bad expression; the rule form shows only the chosen kind's fields as the kind
changes; a rule created in it fires on real Node BullMQ jobs, the firing chip appears on an
open page without a reload, the preview draws the measured backlog under the threshold, and
the alert's own Silence button silences it (the chip then counts it apart)."""
# Literal `bull:` keys kept: the session's app (uvicorn) and monitor serve the Node-built database, prefix 'bull'.

from __future__ import annotations

import re

import pytest

from tests.support.browser import follow, log_in
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


def test_a_rule_made_in_the_form_fires_previews_and_is_silenced_from_its_alert(page, live_app, node_fixture_db):
    log_in(page, live_app)
    page.goto(live_app.url + "/alerts/rules/new")
    # The form shows the chosen kind's fields only, with units, swapped in as the kind changes.
    page.select_option("[name=kind]", "failure_ratio")
    page.wait_for_selector("#rule-kind-fields[data-kind=failure_ratio]")
    assert page.is_visible("[name=window_minutes]") and page.is_visible("[name=min_volume]")
    assert "Threshold (%)" in page.inner_text("#field-threshold label")
    page.fill("[name=queue_glob]", QUEUE)
    page.select_option("[name=kind]", "redis_unreachable")
    page.wait_for_selector("#rule-kind-fields[data-kind=redis_unreachable]")
    assert page.locator("[name=queue_glob]").count() == 0 and page.locator("[name=threshold]").count() == 0
    page.select_option("[name=kind]", "backlog")
    page.wait_for_selector("#rule-kind-fields[data-kind=backlog]")
    assert page.locator("[name=window_minutes]").count() == 0 and page.is_visible("[name=include_due_delayed]")
    assert "Threshold (jobs)" in page.inner_text("#field-threshold label")
    assert page.input_value("[name=for_seconds]") == "60"  # a new rule's default that does not flap
    page.fill("[name=name]", "e2e backlog")
    page.fill("[name=queue_glob]", QUEUE)
    page.fill("[name=threshold]", "-5")
    page.fill("[name=for_seconds]", "0")  # fire at once: the test does not wait a minute
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
        page.wait_for_selector("#firing-alerts .firing-chip", timeout=30_000)
        chip = page.locator("#firing-alerts").inner_text()
        assert "1 firing" in chip and "worst warning" in chip and "e2e backlog" not in chip  # a summary
        assert page.evaluate("window.__noReload") == 1

        # The preview draws what the rule measured (the monitor stores each minute) under its threshold.
        page.goto(live_app.url + "/alerts/rules/")
        follow(page, "text=e2e backlog")
        rule_url = page.url
        follow(page, "text=What would this rule have done in the last 24 hours?")
        for _ in range(20):  # the monitor's minute point may land a moment after the alert fired
            if page.locator("#preview-chart path.series").count():
                break
            page.wait_for_timeout(500)
            page.goto(rule_url + "?preview=1")
        chart = page.locator("#preview-chart")
        assert chart.locator("line.threshold").count() == 1 and chart.locator("path.series").count() == 1
        assert "threshold 1 jobs" in chart.inner_text() and QUEUE in chart.inner_text()

        # Silence it from its own button: the form comes with its matchers; the chip then counts it apart.
        page.goto(live_app.url + "/alerts/?state=firing")
        row = page.locator("tr[data-state=firing]", has_text=QUEUE)
        follow(page, row.locator("a.silence-button"))  # loaded: the selects hold their chosen options
        page.wait_for_selector("#silence-form")
        form = page.locator("#silence-form")
        assert form.locator("[name=queue_glob]").input_value() == QUEUE
        assert form.locator("[name=connection]").input_value() == "default"
        assert form.locator("[name=rule] option:checked").inner_text() == "e2e backlog"
        form.locator("[name=comment]").fill("e2e: looking into it")
        form.locator("button[type=submit]").click()
        page.wait_for_url(live_app.url + "/alerts/silences/")
        assert QUEUE in page.locator("table.silences").inner_text()
        page.wait_for_function(
            "(document.querySelector('#firing-alerts') || {}).textContent?.includes('1 silenced')", timeout=30_000
        )
        assert "firing" not in page.locator("#firing-alerts").inner_text()
        page.goto(live_app.url + "/alerts/?state=firing")
        assert page.locator("tr[data-state=firing] .badge.silenced").count() == 1
        assert page.locator("a.silence-button").count() == 0
    finally:
        for key in client.scan_iter(f"bull:{QUEUE}:*"):
            client.delete(key)
        page.goto(live_app.url + "/alerts/rules/")
        follow(page, "text=e2e backlog")
        follow(page, "text=Edit")
        page.click("button.danger")
