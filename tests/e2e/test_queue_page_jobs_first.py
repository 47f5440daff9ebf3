"""In real Chromium: the queue page puts the jobs first. It opens on the failed tab, retries one
job from its row, ticks a whole page with the header box and previews "all N matching"; on a
390 px phone each job is a card showing its failure reason, and the page never scrolls
sideways. The header's find box finds a job by id, and a queue's "Find by data…" finds it by a
field of its data."""
# Literal `bull:` keys kept: the session's Node-built database (build_fixture.mjs), served by the e2e app and monitor

from __future__ import annotations

import pytest

from tests.support.browser import follow, log_in, renewed
from tests.support.servers import run_node

pytestmark = [pytest.mark.e2e, pytest.mark.node]


def overflow(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


def test_desktop_queue_page_opens_on_failed_and_acts_from_the_rows(page, live_app, node_fixture_db):
    ids = run_node("seed_actions.mjs", node_fixture_db.url, "e2e-first", "4", "0", "0")["failed"]
    client = node_fixture_db.client()
    page.set_viewport_size({"width": 1440, "height": 900})
    log_in(page, live_app)
    page.goto(live_app.url + "/q/default/bull/e2e-first/")
    page.wait_for_selector("#live-status[data-state=live]")
    assert page.locator("#job-list").get_attribute("data-state") == "failed"
    assert "active" in page.locator(".tabs a.state-failed").get_attribute("class").split()
    # The list comes before the workers and the charts.
    tops = page.evaluate(
        "['#job-list', '#queue-workers', '#queue-history-box']"
        ".map(s => document.querySelector(s).getBoundingClientRect().top)"
    )
    assert tops == sorted(tops)

    # Retry one job from its row: the job page's endpoint, its message in the panel.
    row = page.locator(f'#job-list tr[data-job-id="{ids[0]}"]')
    row.locator("button.row-retry").click()
    page.wait_for_selector("#bulk-panel .action-result")
    assert client.zscore("bull:e2e-first:failed", ids[0]) is None
    # The live list drops the retried job: wait for it, or that re-render closes the discard box
    # opened below (a new row, its <details> closed) while the test types into it.
    page.wait_for_selector(f'#job-list tr[data-job-id="{ids[0]}"]', state="detached")

    # Discard asks for its reason in the row.
    row = page.locator(f'#job-list tr[data-job-id="{ids[1]}"]')
    row.locator(".row-discard-box summary").click()
    row.locator("input[name=reason]").fill("a duplicate")
    renewed(page, "#bulk-panel .action-result", row.locator("button.row-discard").click)  # not the retry's
    for _ in range(50):
        if not client.exists(f"bull:e2e-first:{ids[1]}"):
            break
        page.wait_for_timeout(100)
    assert not client.exists(f"bull:e2e-first:{ids[1]}")

    # The header box ticks every job on the page; "all N matching" previews the whole state.
    page.goto(live_app.url + "/q/default/bull/e2e-first/?state=failed")
    page.check("#job-list input.qw-select-page")
    boxes = page.locator("#job-list tbody input[type=checkbox][form=bulk-form]")
    assert boxes.count() == 2 and all(boxes.nth(i).is_checked() for i in range(boxes.count()))
    page.check("#bulk-form input[name=all_matching]")
    page.click("#bulk-form button.bulk-preview-button")
    preview = page.wait_for_selector("#bulk-panel .bulk-preview")
    assert preview.get_attribute("data-count") == "2"


def test_phone_queue_page_shows_jobs_as_cards_with_their_failure_reason(browser, live_app, node_fixture_db):
    run_node("seed_actions.mjs", node_fixture_db.url, "e2e-cards", "2", "0", "0", "charge", "card declined for")
    context = browser.new_context(bypass_csp=True, viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        log_in(page, live_app)
        page.goto(live_app.url + "/q/default/bull/e2e-cards/")
        page.wait_for_selector("#job-list table.qw-job-cards")
        # Read in one evaluation of the live document: a live update may replace the rows, and
        # a row taken before the swap has no style any more ('' was read once).
        page.wait_for_function(
            "() => { const tr = document.querySelector('#job-list tbody tr');"
            " return tr !== null && getComputedStyle(tr).display === 'grid'; }"
        )
        row = page.locator("#job-list tbody tr").first
        reason = row.locator("td.reason")
        assert reason.is_visible() and "card declined for" in reason.inner_text()
        assert reason.evaluate("td => td.scrollWidth <= td.clientWidth + 1")  # shown whole, not cut
        assert overflow(page) <= 0
        # The pause is confirmed on a phone too: its reason field opens under the button.
        page.click(".queue-pause-open")
        assert page.locator(".qw-confirm[open] input[name=reason]").is_visible()
        assert overflow(page) <= 0
    finally:
        context.close()


def test_find_a_job_by_id_from_the_header_and_by_its_data(page, live_app, node_fixture_db):
    ids = run_node("seed_actions.mjs", node_fixture_db.url, "e2e-find", "3", "0", "0")["failed"]
    page.set_viewport_size({"width": 1440, "height": 900})
    log_in(page, live_app)
    # A find looks in the queues the monitor has discovered: wait until it lists the new queue.
    for _ in range(60):
        page.goto(live_app.url + f"/find/?list=1&find={ids[1]}")
        if page.locator('.find-found a[href*="/e2e-find/"]').count():
            break
        page.wait_for_timeout(500)
    page.fill(".qw-find-box input[name=find]", ids[1])
    page.press(".qw-find-box input[name=find]", "Enter")
    page.wait_for_load_state()
    # Node BullMQ numbers ids per queue: the same id may be in several queues; either the job page
    # opens, or the list names every queue holding it.
    if "/find/" in page.url:
        assert page.locator(f'.find-found a[href$="/e2e-find/jobs/{ids[1]}"]').count() == 1
        assert "Checked" in page.locator(".find-checked").inner_text()
    else:
        assert page.url.endswith(f"/q/default/bull/e2e-find/jobs/{ids[1]}")

    page.goto(live_app.url + "/q/default/bull/e2e-find/?state=failed")
    follow(page, "a.qw-find-data")
    page.fill("input[name=where]", "i = 2")
    page.click(".qw-find-form button[type=submit]")
    result = page.wait_for_selector("#data-search")
    assert result.get_attribute("data-matches") == "1"
    assert "Examined all 3" in page.locator(".search-progress").inner_text()
    job = page.locator("#data-search tbody tr").first.get_attribute("data-job-id")
    assert job in ids


def test_search_on_walks_a_big_state_step_by_step_to_the_end(page, live_app, node_fixture_db):
    # 2,100 failed jobs: more than one step examines (QUEUEWATCH_SCAN_SAMPLE, 2,000).
    from queues.keys import QueueRef
    from tests.support.seeding import seed_failed

    client = node_fixture_db.client()
    queue = QueueRef("default", "bull", "e2e-search-on")
    client.hset(queue.key("meta"), mapping={"opts.maxLenEvents": 10000})
    seed_failed(client, queue, 2100, data=lambda i: {"customer": {"id": f"cus_{i % 700}"}})
    page.set_viewport_size({"width": 1440, "height": 900})
    log_in(page, live_app)
    page.goto(live_app.url + "/q/default/bull/e2e-search-on/find?state=failed&where=customer.id%20%3D%20cus_5")
    progress = page.locator("#search-progress")
    assert progress.get_attribute("data-examined") == "2000"
    assert "Examined 2,000 of 2,100" in progress.inner_text()
    page.click("button.search-on")
    page.wait_for_selector(".search-done", timeout=30_000)
    assert page.locator("#search-progress").get_attribute("data-examined") == "2100"
    assert "Examined all 2,100" in page.locator("#search-progress").inner_text()
    # cus_5 is jobs 6, 706 and 1406 (ids from 1): all three found, across the two steps.
    found = page.locator("#data-search tbody tr").evaluate_all("rows => rows.map(r => r.dataset.jobId)")
    assert sorted(found, key=int) == ["6", "706", "1406"]
