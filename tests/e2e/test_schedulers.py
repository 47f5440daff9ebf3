"""In real Chromium, through the shipped web server (uvicorn), in English and in Arabic: create a
job scheduler from its form (dates typed in a zone, the next runs previewed before saving), then
run it now from its page: a one-off job is added and the scheduler's next run does not move."""
# Literal `bull:` keys kept: the session's app (uvicorn) and monitor serve the Node-built database, prefix 'bull'.

from __future__ import annotations

import datetime as dt
import re
import urllib.parse

import pytest

from tests.support.browser import follow, hold_back, log_in
from tests.support.servers import run_node

pytestmark = [pytest.mark.e2e, pytest.mark.node]

WORDS = {
    "en": {"create": "Create scheduler", "run": "Run now"},
    "ar": {"create": "أنشئ المُجدوِل", "run": "شغّل الآن"},
}


def ms(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).timestamp() * 1000)


def absolute(runs: list[str]) -> list[str]:
    """The runs without what the page's script rewrites once it formats them (a relative "(in …)",
    and the reader's zone, UTC in these browsers, moved into the title): a late swap of the same
    preview can land unformatted just before a read."""
    return [re.sub(r"\s*\([^)]*\)", "", run).replace(" UTC", "") for run in runs]


@pytest.mark.parametrize("language", ["en", "ar"])
def test_create_a_scheduler_with_a_previewed_schedule_then_run_it_now(browser, live_app, node_fixture_db, language):
    queue = f"e2e-sched-{language}"
    run_node("toolbox.mjs", "hashes", node_fixture_db.url, queue, "[]")  # the queue's meta only
    client = node_fixture_db.client()
    context = browser.new_context(bypass_csp=True, locale=language)
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        log_in(page, live_app)
        page.goto(f"{live_app.url}/q/default/bull/{queue}/schedulers/")
        assert page.locator("html").get_attribute("lang") == language
        follow(page, "a.scheduler-create")
        page.fill("input[name=id]", "nightly")
        page.fill("input[name=name]", "report")
        page.fill("input[name=pattern]", "0 3 * * *")
        page.fill("input[name=tz]", "America/New_York")
        page.fill("input[name=startDate_at]", "2030-01-01T00:00")
        page.fill("input[name=dates_tz]", "Asia/Tokyo")
        page.fill("textarea[name=data]", '{"to": "ops"}')
        page.fill("textarea[name=opts]", '{"attempts": 2}')
        page.press("textarea[name=opts]", "Tab")  # a change: the preview follows the form
        # Midnight in Tokyo is 10:00 the day before in New York: the first run is 03:00 on 1 January there.
        first = page.locator("#scheduler-preview li").first
        first.wait_for()
        page.wait_for_function(
            "() => document.querySelector('#scheduler-preview li').innerText.includes('2030-01-01 03:00')"
        )
        runs = page.locator("#scheduler-preview li").all_inner_texts()
        assert len(runs) == 5 and "2030-01-01 03:00:00 America/New_York" in runs[0], runs
        assert page.locator("#action-result .scheduler-runs").count() == 0
        page.click("button.scheduler-preview-button")  # the button asks again, into the same place
        page.wait_for_timeout(300)
        # The same runs. The "(in …)" beside each is a relative time the page's timer rewrites
        # when it ticks.
        assert absolute(page.locator("#scheduler-preview li").all_inner_texts()) == absolute(runs)
        assert page.locator(".scheduler-runs").count() == 1
        button = page.locator("button.queue-create-scheduler")
        assert button.inner_text() == WORDS[language]["create"]
        button.click()
        page.wait_for_selector("#action-result .action-result.ok")
        assert int(client.hget(f"bull:{queue}:repeat:nightly", "startDate")) == ms("2029-12-31T15:00:00+00:00")
        due = int(client.zscore(f"bull:{queue}:repeat", "nightly"))
        assert due == ms("2030-01-01T08:00:00+00:00")

        page.goto(f"{live_app.url}/q/default/bull/{queue}/schedulers/nightly")
        assert f"repeat:nightly:{due}" in page.locator(".scheduler-pending").inner_text()
        run = page.locator("button.queue-run-scheduler")
        assert run.inner_text() == WORDS[language]["run"]
        run.click()
        page.wait_for_selector("#action-result .action-result.ok")
        (one_off,) = client.lrange(f"bull:{queue}:wait", 0, -1)
        assert client.hget(f"bull:{queue}:{one_off.decode()}", "name") == b"report"
        assert int(client.zscore(f"bull:{queue}:repeat", "nightly")) == due
        assert client.hget(f"bull:{queue}:repeat:nightly", "ic") == b"1"
    finally:
        context.close()


def test_the_preview_shows_the_schedule_last_asked_for(page, live_app, node_fixture_db):
    # The form's change and the Preview button ask for the preview separately. The first answer
    # (03:00) is held back until after the second (04:00) has landed: it must not replace it.
    queue = "e2e-sched-preview"
    run_node("toolbox.mjs", "hashes", node_fixture_db.url, queue, "[]")
    log_in(page, live_app)
    page.goto(f"{live_app.url}/q/default/bull/{queue}/schedulers/")
    follow(page, "a.scheduler-create")
    page.fill("input[name=tz]", "UTC")

    def asks_for_three(url: str) -> bool:
        parts = urllib.parse.urlsplit(url)
        return parts.path.endswith("scheduler-preview") and "0 3 * * *" in urllib.parse.parse_qs(parts.query).get(
            "pattern", []
        )

    hold_back(page, asks_for_three)
    page.evaluate("""() => {
        const pattern = document.querySelector("input[name=pattern]");
        pattern.value = "0 3 * * *";
        pattern.dispatchEvent(new Event("change", { bubbles: true }));
        pattern.value = "0 4 * * *";
        document.querySelector("button.scheduler-preview-button").click();
    }""")
    page.wait_for_function("() => /04:00/.test(document.querySelector('#scheduler-preview').innerText)")
    page.wait_for_timeout(1200)  # the held-back answer has had its time to land
    runs = page.locator("#scheduler-preview li").all_inner_texts()
    assert runs and all("04:00:00" in run and "03:00:00" not in run for run in runs), runs
