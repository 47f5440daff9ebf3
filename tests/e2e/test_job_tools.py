"""In real Chromium, through the shipped web server: change a delayed job's priority and delay
and move a waiting job to failed from its page, and release a stuck deduplication key from the
queue's deduplication page, in English and in Arabic (the jobs made by Node BullMQ 6.7). What an
operator types in a job's action forms survives the monitor re-rendering them as the job changes."""
# Literal `bull:` keys kept: the session's app (uvicorn) and monitor serve the Node-built database, prefix 'bull'.

from __future__ import annotations

import re
import time

import pytest

from tests.support.browser import follow, log_in
from tests.support.job_tools_node import NodeJobTools

pytestmark = [pytest.mark.e2e, pytest.mark.node]


PROPER_NOUNS = re.compile(r"Queuewatch|BullMQ|Redis|UTC|TTL")
# Visible text with a Latin letter outside what marks user data (ids, names, payloads).
LATIN_TEXT = """() => {
  const userData = 'bdi, [dir=ltr], code, pre, script, style, template, input, textarea, option, header, nav.crumbs';
  const found = [];
  const walker = document.createTreeWalker(document.querySelector('main') || document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const el = walker.currentNode.parentElement;
    const text = walker.currentNode.textContent.trim();
    if (text && /[A-Za-z]/.test(text) && el && !el.closest(userData) && el.getClientRects().length) found.push(text);
  }
  return found;
}"""


@pytest.fixture
def node(node_fixture_db):
    with NodeJobTools(node_fixture_db.url, "bull") as proc:
        yield proc


def job_form(page, action: str):
    return page.locator(f"form:has(button.job-{action})")


def type_into(field, value: str) -> None:
    """Fill a field of a job's live action form. The monitor's first push for a new viewer may
    replace the form between Playwright finding the field and filling it: the value then lands
    in the detached field, before the page could carry it over (what a user types afterwards is
    carried: static/queuewatch.js). So fill until the page's current field holds the value."""
    for _ in range(10):
        field.fill(value)
        if field.input_value() == value:
            return
    raise AssertionError(f"the field never kept {value!r}")


def test_the_job_tools_from_a_job_page_in_english(page, live_app, node_fixture_db, node):
    client = node_fixture_db.client()
    delayed, waiting = node.send(
        "add",
        queue="e2e-tools",
        jobs=[{"name": "later", "opts": {"delay": 3_600_000}}, {"name": "now", "opts": {"priority": 3}}],
    )["ids"]
    log_in(page, live_app)
    page.goto(live_app.url + f"/q/default/bull/e2e-tools/jobs/{delayed}")
    type_into(job_form(page, "change-priority").locator("input[name=priority]"), "7")
    page.click("button.job-change-priority")
    assert "now has priority 7" in page.wait_for_selector("#action-result .action-result.ok").inner_text()
    assert client.hget(f"bull:e2e-tools:{delayed}", "priority") == b"7"
    form = job_form(page, "change-delay")
    type_into(form.locator("input[name=delay]"), "90")
    form.locator("select[name=unit]").select_option("s")
    before = time.time() * 1000
    page.click("button.job-change-delay")
    assert (
        "rescheduled" in page.wait_for_selector("#action-result .action-result.ok:has-text('rescheduled')").inner_text()
    )
    due = client.zscore("bull:e2e-tools:delayed", delayed) / 4096
    assert before + 85_000 < due < before + 100_000
    page.goto(live_app.url + f"/q/default/bull/e2e-tools/jobs/{waiting}")
    assert page.locator("button.job-change-delay").count() == 0  # not delayed: not offered
    type_into(job_form(page, "move-to-failed").locator("input[name=reason]"), "customer cancelled")
    page.click("button.job-move-to-failed")
    page.wait_for_selector("#action-result .action-result.ok")
    seen = node.send("job", queue="e2e-tools", id=waiting)
    assert (seen["state"], seen["failedReason"]) == ("failed", "customer cancelled")


def test_the_deduplication_page_and_a_tool_in_arabic(browser, live_app, node_fixture_db, node):
    client = node_fixture_db.client()
    owner = node.send("add", queue="e2e-dedup", jobs=[{"name": "digest", "opts": {"deduplication": {"id": "u-9"}}}])[
        "ids"
    ][0]
    delayed = node.send("add", queue="e2e-dedup", jobs=[{"name": "later", "opts": {"delay": 600_000}}])["ids"][0]
    client.set("bull:e2e-dedup:de:stale", "gone-job")
    for language, heading, release_words in (
        ("en", "Deduplication keys of", "released"),
        ("ar", "مفاتيح إزالة التكرار في", "حُرِّر معرّف إزالة التكرار"),
    ):
        context = browser.new_context(bypass_csp=True, locale=language)
        page = context.new_page()
        page.set_default_timeout(15_000)
        try:
            log_in(page, live_app)
            page.goto(live_app.url + "/q/default/bull/e2e-dedup/")
            follow(page, "a.dedup-link")
            assert heading in page.locator("h1").inner_text()
            if language == "ar":
                left = [t for t in page.evaluate(LATIN_TEXT) if re.search("[A-Za-z]", PROPER_NOUNS.sub("", t))]
                assert not left, left
            rows = page.locator("tr.dedup-key")
            assert rows.count() == 2
            stuck = page.locator("tr.dedup-key.stuck")
            assert "stale" in stuck.inner_text()
            stuck.locator("input[name=reason]").fill("stuck after an outage" if language == "en" else "عالق")
            stuck.locator("button.dedup-release").click()
            assert release_words in page.wait_for_selector("#action-result .action-result.ok").inner_text()
            assert not client.exists("bull:e2e-dedup:de:stale")
            if language == "en":
                client.set("bull:e2e-dedup:de:stale", "gone-job")  # again, for the Arabic page
                assert f"/jobs/{owner}" in page.locator("tr.dedup-key:not(.stuck) a").get_attribute("href")
            else:
                page.goto(live_app.url + f"/q/default/bull/e2e-dedup/jobs/{delayed}")
                form = job_form(page, "change-priority")
                assert form.locator("button").inner_text() == "غيِّر الأولوية"
                type_into(form.locator("input[name=priority]"), "4")
                form.locator("button").click()
                assert "أولوية المهمة" in page.wait_for_selector("#action-result .action-result.ok").inner_text()
        finally:
            context.close()
    assert client.get("bull:e2e-dedup:de:u-9") == owner.encode()


OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_the_tools_and_the_deduplication_page_fit_a_phone(browser, live_app, node_fixture_db, node, lang):
    delayed = node.send("add", queue="e2e-phone", jobs=[{"name": "later", "opts": {"delay": 600_000}}])["ids"][0]
    node_fixture_db.client().set("bull:e2e-phone:de:a-rather-long-deduplication-id-for-a-phone", "gone-job")
    context = browser.new_context(bypass_csp=True, locale=lang, viewport={"width": 360, "height": 800})
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        log_in(page, live_app)
        for path, ready in (
            (f"/q/default/bull/e2e-phone/jobs/{delayed}", "button.job-change-delay"),
            ("/q/default/bull/e2e-phone/deduplication", "tr.dedup-key"),
        ):
            page.goto(live_app.url + path)
            page.wait_for_selector(ready)
            page.screenshot(path=f"/tmp/qw-jobtools-{lang}-{path.rsplit('/', 1)[-1]}.png", full_page=True)
            assert page.evaluate(OVERFLOW) <= 0, path
    finally:
        context.close()


def test_what_an_operator_types_in_a_job_action_survives_a_live_update_of_the_job(page, live_app, node):
    (delayed,) = node.send("add", queue="e2e-typing", jobs=[{"name": "later", "opts": {"delay": 3_600_000}}])["ids"]
    log_in(page, live_app)
    page.goto(live_app.url + f"/q/default/bull/e2e-typing/jobs/{delayed}")
    page.wait_for_selector("#live-status[data-state=live]")
    job_form(page, "change-priority").locator("input[name=priority]").fill("7")
    delay = job_form(page, "change-delay")
    delay.locator("input[name=delay]").fill("90")
    delay.locator("select[name=unit]").select_option("s")
    old_actions = page.evaluate_handle("document.getElementById('job-actions')")

    # The job changes while the operator is typing: the monitor pushes its state and actions anew.
    node.send("progress", queue="e2e-typing", id=delayed, value=40)
    page.wait_for_selector(".job-progress", timeout=20_000)
    page.wait_for_function("el => !el.isConnected", arg=old_actions, timeout=20_000)
    assert job_form(page, "change-priority").locator("input[name=priority]").input_value() == "7"
    assert delay.locator("input[name=delay]").input_value() == "90"
    assert delay.locator("select[name=unit]").input_value() == "s"

    page.click("button.job-change-priority")
    assert "now has priority 7" in page.wait_for_selector("#action-result .action-result.ok").inner_text()
