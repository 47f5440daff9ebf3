"""In real Chromium: numbers and times formatted in the browser for the page's language and
the product's one time zone (the browser's, switchable to UTC and remembered); a dead-letter
queue redriven in bulk from its page; a job page that follows the action done on it."""
# Literal `bull:` keys kept: the session's app (uvicorn) and monitor serve the Node-built database, prefix 'bull'.

from __future__ import annotations

import datetime as dt

import pytest

from tests.support.browser import log_in
from tests.support.servers import run_node

pytestmark = [pytest.mark.e2e, pytest.mark.node]

ZONE = "Asia/Riyadh"  # UTC+03:00 all year (no summer time): a fixed, known offset
OFFSET = dt.timedelta(hours=3)


@pytest.fixture
def zoned_pages(browser):
    """A page per language (the browser's Accept-Language; no choice saved for the user, which
    would follow the shared e2e user into other tests), all in the same fixed time zone."""
    contexts = []

    def open_page(language: str):
        context = browser.new_context(bypass_csp=True, timezone_id=ZONE, locale=language)
        contexts.append(context)
        p = context.new_page()
        p.set_default_timeout(10_000)
        return p

    yield open_page
    for context in contexts:
        context.close()


def shown(ms: int, zone_offset: dt.timedelta) -> str:
    return (dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC) + zone_offset).strftime("%Y-%m-%d %H:%M:%S")


def test_numbers_and_times_in_both_languages_and_the_utc_switch(zoned_pages, live_app, node_fixture_db):
    added = run_node("produce.mjs", "add", node_fixture_db.url, "e2e-format", "1234")
    job_id = added["ids"][0]
    created_ms = int(node_fixture_db.client().hget(f"bull:e2e-format:{job_id}", "timestamp"))
    for code in ("en", "ar"):
        page = zoned_pages(code)
        log_in(page, live_app)
        page.goto(live_app.url + "/q/default/bull/e2e-format/?state=waiting")
        assert page.evaluate("document.documentElement.lang") == code
        count = page.locator("nav.tabs a.state-waiting .count data.qw-num")
        assert count.get_attribute("value") == "1234"  # the raw value, as every viewer gets it
        assert count.inner_text() == "1,234"  # with its separator; Latin digits in both languages
        # Compact forms with the exact figure on hover (the same code the live fragments use), in
        # the words of the page's language (dashboard/templatetags/qw.py: SCALES).
        compact = page.evaluate("""() => {
            const el = document.createElement('data');
            el.className = 'qw-num qw-compact'; el.value = '12345'; el.textContent = '12345';
            document.querySelector('main').appendChild(el);
            window.qwFormat(el.parentNode);
            return [el.textContent, el.title];
        }""")
        assert compact == [{"en": "12.3K", "ar": "12.3 ألف"}[code], "12,345"]
        # Rates: each window with its unit, never a run of digits.
        assert page.locator(".qw-rates-box .qw-rate-w").count() >= 13

        # A job's timeline in the browser's zone, which the page names.
        page.goto(live_app.url + f"/q/default/bull/e2e-format/jobs/{job_id}")
        created = page.locator("ol.timeline time[data-qw-time]").first
        assert created.inner_text() == shown(created_ms, OFFSET)
        assert page.locator(".qw-zone-current").inner_text().endswith("UTC+03:00")
        # Read in one script turn: the job's live part (timeline included) may be swapped in
        # between a locator's resolution and its evaluation, leaving a detached element.
        direction = page.evaluate(
            "() => getComputedStyle(document.querySelector('ol.timeline time[data-qw-time]')).direction"
        )
        assert direction == "ltr"

    # Switched to UTC (here in Arabic): every time follows, and the choice survives a reload.
    page.click(".qw-zone-toggle")
    assert created.inner_text() == shown(created_ms, dt.timedelta(0))
    assert page.locator(".qw-zone-current").get_attribute("data-zone") == "utc"
    page.reload()
    assert page.locator("ol.timeline time[data-qw-time]").first.inner_text() == shown(created_ms, dt.timedelta(0))
    page.click(".qw-zone-toggle")
    assert page.locator("ol.timeline time[data-qw-time]").first.inner_text() == shown(created_ms, OFFSET)


def test_dead_letter_queue_redriven_in_bulk_from_its_page(page, live_app, node_fixture_db):
    seeded = run_node("seed_actions.mjs", node_fixture_db.url, "e2e-bulkdlq", "0", "1", "3")
    log_in(page, live_app)
    page.goto(live_app.url + "/q/default/bull/e2e-bulkdlq-dlq/?state=waiting")
    # What does not apply to a dead-letter queue is not offered.
    assert not page.locator("nav.queue-links a:has-text('Failed jobs by error')").is_visible()
    assert not page.locator("button.bulk-retry-failed").is_visible()
    assert page.locator("#bulk-form select[name=action] option[value=redrive]").count() == 1

    page.click("button.bulk-redrive-waiting")
    preview = page.wait_for_selector("#bulk-panel .bulk-preview")
    assert preview.get_attribute("data-count") == "3"
    page.fill("#bulk-panel input[name=reason]", "consumer fixed")
    page.click("#bulk-panel button:has-text('Confirm')")
    page.wait_for_selector(".task-progress[data-state=done]", timeout=30_000)
    assert page.locator(".task-progress .moved").inner_text() == "3"

    client = node_fixture_db.client()
    assert client.llen("bull:e2e-bulkdlq-dlq:wait") == 0
    moved = [j.decode() for j in client.lrange("bull:e2e-bulkdlq:wait", 0, -1)]
    assert len(moved) == 3 and all(client.hget(f"bull:e2e-bulkdlq:{j}", "data") for j in moved)
    assert len(seeded["dlq"]) == 3


def test_job_page_follows_a_redrive_and_links_the_copy(page, live_app, node_fixture_db):
    seeded = run_node("seed_actions.mjs", node_fixture_db.url, "e2e-jobdlq", "0", "1", "1")
    dead = seeded["dlq"][0]
    log_in(page, live_app)
    page.goto(live_app.url + f"/q/default/bull/e2e-jobdlq-dlq/jobs/{dead}")
    assert page.locator(".job-live .badge.state-waiting").count() == 1
    form = page.locator("form", has=page.locator("button.job-redrive"))
    form.locator("input[name=reason]").fill("fixed upstream")
    form.locator("button.job-redrive").click()

    # The page no longer offers what no longer applies, and says where the job went.
    page.wait_for_selector("#action-result .action-result.ok")
    page.wait_for_selector(".job-live.job-gone")
    assert page.locator("button.job-redrive").count() == 0 and page.locator("button.job-discard").count() == 0
    assert page.locator(".job-live .badge.state-waiting").count() == 0
    page.locator("#action-result a.new-job").click()
    page.wait_for_url("**/q/default/bull/e2e-jobdlq/jobs/**")
    assert page.locator(".job-live .badge.state-waiting").count() == 1
    assert node_fixture_db.client().llen("bull:e2e-jobdlq-dlq:wait") == 0
