"""In real Chromium: log in, open the overview, open a failed job, see its stack trace —
and hostile job content stays inert text."""

from __future__ import annotations

import pytest

from tests.support.browser import follow, hold_back, log_in

pytestmark = [pytest.mark.e2e, pytest.mark.node]


def test_log_in_open_failed_job_and_read_its_stack_trace(page, live_app, bullmq_fixture):
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    log_in(page, live_app)

    assert page.locator("table.queues a", has_text="mixed").count() == 1
    # The failed count of 'mixed' links to its failed tab.
    page.locator("tr", has=page.locator("a", has_text="mixed")).locator("td.state-failed a").click()
    page.wait_for_selector("#job-list[data-state=failed] table.jobs")
    follow(page, page.locator("#job-list td.reason", has_text="boom").first.locator("xpath=..").locator("a").first)

    page.wait_for_selector(".job-live .badge.state-failed")
    assert page.locator("details.stack").count() == 2
    assert "boom" in page.locator("details.stack[open] pre").inner_text()
    assert "at " in page.locator("details.stack[open] pre").inner_text()

    # A job full of markup: shown as text, nothing runs.
    page.goto(live_app.url + "/q/default/bull/stacky/?state=failed")
    follow(page, page.locator("table.jobs a").first)
    page.wait_for_selector("details.stack")
    assert "<script>alert(1)</script>" in page.content().replace("&lt;", "<").replace("&gt;", ">")
    assert page.locator("main script, main img").count() == 0
    assert dialogs == []


def test_tabs_and_filter_update_without_full_reload(page, live_app, bullmq_fixture):
    log_in(page, live_app)
    page.goto(live_app.url + "/q/default/bull/mixed/")
    page.evaluate("window.__marker = 1")
    page.click("nav.tabs a.state-completed")
    page.wait_for_selector("#job-list[data-state=completed]")
    assert page.evaluate("window.__marker") == 1  # htmx swapped the list; no page load
    assert page.url.endswith("state=completed")
    page.goto(live_app.url + "/")
    page.fill("input[name=q]", "pause")
    page.wait_for_function("document.querySelectorAll('table.queues tbody tr').length === 1")
    assert page.locator("table.queues tbody tr").inner_text().startswith("paused-q")


@pytest.mark.parametrize("held_back", ["delayed", "completed"])
def test_the_last_tab_clicked_wins_whichever_answer_comes_first(page, live_app, bullmq_fixture, held_back):
    # Two tabs clicked in one go, before either answer is back; one answer is held back so the
    # two arrive in a known order. The list and the address must both show the second tab.
    # Without a rule between the requests, the first answer to land replaces the list and the
    # other lands on the list it replaced: the address changes, the list does not.
    log_in(page, live_app)
    page.goto(live_app.url + "/q/default/bull/mixed/?state=waiting")
    page.wait_for_selector("#job-list[data-state=waiting]")
    hold_back(page, lambda url: f"state={held_back}" in url)
    page.evaluate("""() => {
        document.querySelector("nav.tabs a.state-delayed").click();
        document.querySelector("nav.tabs a.state-completed").click();
    }""")
    page.wait_for_function("location.search.endsWith('state=completed')")
    page.wait_for_selector("#job-list[data-state=completed]")
    page.wait_for_timeout(1200)  # the held-back answer has had its time to land
    assert page.locator("#job-list").get_attribute("data-state") == "completed"
    assert page.url.endswith("state=completed")
