"""In real Chromium, through the shipped web server (uvicorn), channels_redis and the monitor process: open a queue's
error groups, preview the biggest group's redrive, confirm it paced, and watch the task's
progress arrive live until 100 %; the group is back at work and the rest stayed failed."""
# Literal `bull:` keys kept: the session's app (uvicorn) and monitor serve the Node-built database, prefix 'bull'.

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.support.browser import log_in
from tests.support.servers import run_node

pytestmark = [pytest.mark.e2e, pytest.mark.node]


def test_redrive_an_error_group_with_live_progress(page, live_app, node_fixture_db):
    url = node_fixture_db.url
    bad = run_node("seed_actions.mjs", url, "e2e-redrive", "60", "0", "0", "charge", "card declined for order")
    run_node("seed_actions.mjs", url, "e2e-redrive", "5", "0", "0", "charge", "<b>timeout</b> after")
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    log_in(page, live_app)

    page.goto(live_app.url + "/q/default/bull/e2e-redrive/")
    page.click("nav.queue-links a:has-text('Failed jobs by error')")
    # A click only starts the navigation: wait for the new page before counting its rows.
    page.wait_for_url("**/q/default/bull/e2e-redrive/errors/")
    page.wait_for_selector("tr.error-group")
    groups = page.locator("tr.error-group")
    assert groups.count() == 2
    biggest = groups.first  # biggest first
    assert biggest.locator("td.count").inner_text() == "60"
    assert "card declined for order" in biggest.locator("code.reason").inner_text()
    assert "<b>timeout</b>" in groups.nth(1).locator("code.reason").inner_text()  # shown as text

    biggest.locator("select[name=action]").select_option("redrive")
    biggest.locator("button:has-text('Preview')").click()
    preview = page.wait_for_selector("#bulk-panel .bulk-preview")
    assert preview.get_attribute("data-count") == "60"
    assert page.locator("#bulk-panel table.sample tbody tr").count() == 10

    # Record every progress figure the page shows, to prove it moved live (not just at the end).
    page.evaluate("""() => {
        window.__percents = [];
        new MutationObserver(() => {
            const el = document.querySelector('.task-progress');
            if (el) window.__percents.push(el.dataset.state + ':' + el.dataset.percent);
        }).observe(document.getElementById('bulk-panel'), {subtree: true, childList: true, attributes: true});
    }""")
    page.fill("#bulk-panel input[name=rate]", "20")
    page.fill("#bulk-panel input[name=reason]", "card processor fixed in v2")
    page.click("#bulk-panel button:has-text('Confirm')")
    page.wait_for_selector(".task-progress[data-state=done]", timeout=30_000)
    assert page.locator(".task-progress").get_attribute("data-percent") == "100"
    assert page.locator(".task-progress .moved").inner_text() == "60"
    seen = page.evaluate("window.__percents")
    assert any(s.startswith("running:") and s != "running:100" for s in seen), seen
    assert dialogs == []

    # In Redis: the group is waiting again with its attempts reset; the other group stayed.
    client = node_fixture_db.client()
    assert client.zcard("bull:e2e-redrive:failed") == 5
    assert all(client.hget(f"bull:e2e-redrive:{i}", "atm") is None for i in bad["failed"])

    # The audit log says who did it, why and with what result.
    page.goto(live_app.url + "/audit/?queue=e2e-redrive")
    rows = page.locator("tr.audit-row")
    assert rows.count() == 2  # started (page) and finished (task)
    assert "card processor fixed in v2" in rows.first.inner_text() and "moved 60" in rows.first.inner_text()


def tick_two_failed_of(page, live_app, url: str, queue: str, *, failed: int) -> list[str]:
    """Seed ``failed`` failed jobs, open the queue's failed list live and tick the first two;
    the seeded ids."""
    ids = run_node("seed_actions.mjs", url, queue, str(failed), "0", "0")["failed"]
    log_in(page, live_app)
    page.goto(live_app.url + f"/q/default/bull/{queue}/?state=failed")
    page.wait_for_selector("#live-status[data-state=live]")
    for job_id in ids[:2]:
        page.check(f'#job-list input[type=checkbox][value="{job_id}"]')
    return ids


def test_ticks_survive_a_live_re_render_of_the_list_and_tick_nothing_else(page, live_app, node_fixture_db):
    """A job failing while two boxes are ticked re-renders the list live: those two stay
    ticked, the new job and the others do not (the boxes share one name: a form-keeping rule
    keyed by name alone once ticked all of them, and the preview then counted every job)."""
    url = node_fixture_db.url
    ids = tick_two_failed_of(page, live_app, url, "e2e-retick", failed=4)
    [new_id] = run_node("seed_actions.mjs", url, "e2e-retick", "1", "0", "0")["failed"]
    # A locator, not a handle: the live list may be rendered again between the two lines.
    new_box = page.locator(f'#job-list input[type=checkbox][value="{new_id}"]')
    new_box.wait_for(timeout=20_000)
    expect(new_box).not_to_be_checked()
    ticked = page.locator("#job-list input[type=checkbox][form=bulk-form]:checked").evaluate_all(
        "boxes => boxes.map(b => b.value)"
    )
    assert sorted(ticked) == sorted(ids[:2])
    page.select_option("#bulk-form select[name=action]", "discard")
    page.click("#bulk-form button.bulk-preview-button")
    assert page.wait_for_selector("#bulk-panel .bulk-preview").get_attribute("data-count") == "2"


def test_tick_jobs_preview_and_discard_exactly_those(page, live_app, node_fixture_db):
    ids = tick_two_failed_of(page, live_app, node_fixture_db.url, "e2e-tick", failed=6)
    page.select_option("#bulk-form select[name=action]", "discard")
    page.click("#bulk-form button.bulk-preview-button")
    preview = page.wait_for_selector("#bulk-panel .bulk-preview")
    assert preview.get_attribute("data-count") == "2"
    assert sorted(
        page.locator("#bulk-panel table.sample tbody tr").evaluate_all("rows => rows.map(r => r.dataset.jobId)")
    ) == sorted(ids[:2])
    page.fill("#bulk-panel input[name=rate]", "0")
    page.fill("#bulk-panel input[name=reason]", "duplicates of 5 and 6")
    page.click("#bulk-panel button:has-text('Confirm')")
    page.wait_for_selector(".task-progress[data-state=done]", timeout=30_000)
    assert page.locator(".task-progress .moved").inner_text() == "2"

    client = node_fixture_db.client()
    assert client.zcard("bull:e2e-tick:failed") == 4
    assert not client.exists(*(f"bull:e2e-tick:{i}" for i in ids[:2]))
