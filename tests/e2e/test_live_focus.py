"""In real Chromium: a live swap of the queue page's job list (the monitor's fragment replacing
the rows) keeps a keyboard user's focus on the same control of the same job, instead of dropping
it to <body>. A background search started from "Find by data" finishes after its page is left,
and its page keeps the focus on Cancel while it refreshes itself (htmx's own rule for an element
with an id), and Cancel stops it."""
# Literal `bull:` keys kept: the session's Node-built database (build_fixture.mjs), served by the e2e app and monitor

from __future__ import annotations

import pytest

from tests.support.browser import log_in
from tests.support.servers import run_node

pytestmark = [pytest.mark.e2e, pytest.mark.node]

FOCUSED = """() => {
  const el = document.activeElement, row = el && el.closest('tr[data-job-id]');
  return {tag: el ? el.tagName : null, cls: el ? el.className : null, job: row ? row.dataset.jobId : null,
          connected: !!(el && el.isConnected)};
}"""


def test_a_live_swap_of_the_job_list_keeps_the_focus_on_the_same_row_control(page, live_app, node_fixture_db):
    ids = run_node("seed_actions.mjs", node_fixture_db.url, "e2e-focus", "3", "0", "0")["failed"]
    page.set_viewport_size({"width": 1440, "height": 900})
    log_in(page, live_app)
    page.goto(live_app.url + "/q/default/bull/e2e-focus/?state=failed")
    page.wait_for_selector("#live-status[data-state=live]")
    rows = page.locator("#job-list tbody tr[data-job-id]")
    assert rows.count() == 3
    # A keyboard user on the second job's Retry button: from its Open link, one Tab on.
    page.locator(f'#job-list tr[data-job-id="{ids[1]}"] a.row-open').focus()
    page.keyboard.press("Tab")
    before = page.evaluate(FOCUSED)
    assert (before["tag"], before["cls"], before["job"]) == ("BUTTON", "row-retry", ids[1])
    old_table = page.evaluate_handle("document.querySelector('#job-list table.jobs')")

    # More jobs fail: the monitor re-renders the list and the page swaps it in live.
    run_node("seed_actions.mjs", node_fixture_db.url, "e2e-focus", "2", "0", "0")
    page.wait_for_function("document.querySelectorAll('#job-list tbody tr[data-job-id]').length === 5", timeout=20_000)
    assert not old_table.evaluate("t => t.isConnected")  # the rows were replaced, not patched
    after = page.evaluate(FOCUSED)
    assert after == {"tag": "BUTTON", "cls": "row-retry", "job": ids[1], "connected": True}
    # And the keyboard goes on from there: Tab reaches the same job's Discard.
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('tr[data-job-id]').dataset.jobId") == ids[1]


def big_state(node_fixture_db, name: str, jobs: int) -> None:
    from queues.keys import QueueRef
    from tests.support.seeding import seed_failed

    client = node_fixture_db.client()
    queue = QueueRef("default", "bull", name)
    client.hset(queue.key("meta"), mapping={"opts.maxLenEvents": 10000})
    seed_failed(client, queue, jobs, data=lambda i: {"customer": {"id": f"cus_{i % 1500}"}})


def start_search(page, live_app, name: str) -> str:
    page.goto(live_app.url + f"/q/default/bull/{name}/find?state=failed&where=customer.id%20%3D%20cus_7")
    page.click("button.search-background")
    page.wait_for_url("**/searches/*/")
    return page.url


def test_a_background_search_finishes_after_its_page_is_left(page, live_app, node_fixture_db):
    big_state(node_fixture_db, "e2e-search-bg", 4500)  # three steps of QUEUEWATCH_SCAN_SAMPLE (2,000)
    page.set_viewport_size({"width": 1440, "height": 900})
    log_in(page, live_app)
    search_url = start_search(page, live_app, "e2e-search-bg")
    page.goto(live_app.url + "/")  # leave: the search goes on in the monitor with no page open
    page.goto(live_app.url + "/searches/")
    page.goto(search_url)
    page.wait_for_selector("#search-panel[data-status=done]", timeout=60_000)
    panel = page.locator("#search-panel")
    assert panel.get_attribute("data-examined") == "4500" and panel.get_attribute("data-matches") == "3"
    assert "Examined 4,500 of 4,500." in panel.inner_text()
    found = page.locator("#search-panel tbody tr").evaluate_all("rows => rows.map(r => r.dataset.jobId)")
    assert sorted(found, key=int) == ["8", "1508", "3008"]
    page.click("#search-panel tbody tr a")
    assert "/jobs/" in page.url


def test_cancel_keeps_the_focus_while_the_search_page_refreshes_and_stops_the_search(page, live_app, node_fixture_db):
    big_state(node_fixture_db, "e2e-search-long", 60_000)  # 30 paced steps: long enough to cancel
    page.set_viewport_size({"width": 1440, "height": 900})
    log_in(page, live_app)
    start_search(page, live_app, "e2e-search-long")
    page.wait_for_selector("#search-panel[data-status=running]", timeout=20_000)
    page.locator("#search-cancel").focus()
    examined = page.locator("#search-panel").get_attribute("data-examined")
    old_panel = page.evaluate_handle("document.getElementById('search-panel')")
    # The panel refreshes itself every 2 s: after one refresh the focus is still on Cancel.
    page.wait_for_function(f"document.getElementById('search-panel').dataset.examined !== '{examined}'", timeout=20_000)
    assert not old_panel.evaluate("p => p.isConnected")
    assert page.evaluate("document.activeElement.id") == "search-cancel"
    page.keyboard.press("Enter")
    page.wait_for_selector("#search-panel[data-status=cancelled]", timeout=20_000)
    assert int(page.locator("#search-panel").get_attribute("data-examined")) < 60_000
