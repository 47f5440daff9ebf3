"""In real Chromium: the back button after htmx pushed a URL shows the whole page, never the
fragment that htmx fetched for that URL.

Two ways it can go wrong, one test each:
* htmx's own history restore: on a history-cache miss htmx 2 re-fetches the URL with
  ``HX-Request`` (and ``HX-History-Restore-Request``) and swaps the answer into <body>;
* the browser's HTTP cache: the fragment fetched for a URL is reused when the browser comes back
  to that URL from another page, unless the response says ``Vary: HX-Request``.
"""

from __future__ import annotations

import pytest

from tests.support.browser import log_in

pytestmark = [pytest.mark.e2e, pytest.mark.node]


def assert_whole_queue_page(page, state: str) -> None:
    # The URL first: htmx pushes it after the swap settles (and a navigation back may still be
    # under way), so the list can match before the address does.
    page.wait_for_function("state => location.search.endsWith('state=' + state)", arg=state)
    page.wait_for_selector(f"#job-list[data-state={state}]")
    assert page.url.endswith(f"state={state}")
    assert page.locator("header.topbar").count() == 1  # the layout, not only the fragment
    assert page.locator("h1").inner_text() == "mixed"
    assert page.locator("nav.tabs").count() == 1
    assert page.locator("#job-list").count() == 1


def test_back_after_a_history_cache_miss_restores_the_whole_page(page, live_app, bullmq_fixture):
    log_in(page, live_app)
    page.goto(live_app.url + "/q/default/bull/mixed/")
    # No history cache: every restore is a miss, as when a page is too big for sessionStorage
    # or the cache was evicted. htmx then asks the server for the URL and swaps it into <body>.
    page.evaluate("""() => {
        htmx.config.historyCacheSize = 0;
        window.__marker = 1;
        document.addEventListener("htmx:historyCacheMissLoad", () => { window.__restoredFromServer = true; });
    }""")
    # The page opened on failed (the queue has failed jobs), so the list matches at once: wait for
    # the address, which htmx pushes as it swaps the answer in. The next click would replace a
    # request still under way, leaving no ?state=failed entry to go back to.
    page.click("nav.tabs a.state-failed")
    page.wait_for_function("location.search.endsWith('state=failed')")
    page.click("nav.tabs a.state-completed")
    page.wait_for_function("location.search.endsWith('state=completed')")
    page.wait_for_selector("#job-list[data-state=completed]")

    page.go_back()
    page.wait_for_function("window.__restoredFromServer === true")
    assert page.evaluate("window.__marker") == 1  # htmx restored it in place: no page load
    assert_whole_queue_page(page, "failed")


def test_back_from_a_job_to_an_htmx_pushed_url_shows_the_whole_page(page, live_app, bullmq_fixture):
    log_in(page, live_app)
    page.goto(live_app.url + "/q/default/bull/mixed/")
    page.click("nav.tabs a.state-failed")  # fetched as a fragment, URL pushed
    page.wait_for_function("location.search.endsWith('state=failed')")  # the list matched already
    page.wait_for_selector("#job-list[data-state=failed] table.jobs")
    page.locator("#job-list table.jobs a").first.click()  # an ordinary link: a new document
    page.wait_for_selector(".job-live")

    page.go_back()
    assert_whole_queue_page(page, "failed")
