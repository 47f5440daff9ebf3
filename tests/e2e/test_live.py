"""In real Chromium, through the shipped web server (uvicorn), channels_redis and the monitor process: pages update
without a reload when a Node worker fails a job (with the retry-all shortcut offered once there
is one) and when a job stalls, and swap pause for resume; a queue created while the overview is
open shows up in its table; an idle websocket is still delivering after more than 60 seconds."""
# Literal `bull:` keys kept: the session's app (uvicorn) and monitor serve the Node-built database, prefix 'bull'.

from __future__ import annotations

import subprocess

import pytest

from tests.support.browser import log_in
from tests.support.servers import NODE_DIR, run_node

pytestmark = [pytest.mark.e2e, pytest.mark.node]


def open_live(page, app, path):
    page.goto(app.url + path)
    page.wait_for_selector("#live-status[data-state=live]")
    page.evaluate("window.__noReload = 1")


@pytest.mark.slow  # > 20 s (--durations)
def test_failed_job_appears_live_even_after_a_long_idle_websocket(page, live_app, node_fixture_db):
    url = node_fixture_db.url
    run_node("produce.mjs", "complete", url, "e2e-live", "1")
    log_in(page, live_app)
    open_live(page, live_app, "/q/default/bull/e2e-live/?state=failed")
    assert page.locator("nav.tabs a.state-failed .count").inner_text() == "0"
    retry_all = page.locator("button.bulk-retry-failed")
    assert not retry_all.is_visible()  # nothing to retry yet

    # Idle for longer than redis-py's old 5 s socket timeout (the channel layer's read must not
    # time out: channels_redis socket_timeout=None) and than the web server's 20 s websocket
    # ping interval (dashboard/serve.py; a ping is sent and answered meanwhile): the socket must
    # still be open and delivering. Longer idle adds nothing: nothing else in the path has a timeout below it.
    page.wait_for_timeout(26_000)
    status = page.locator("#live-status")
    assert status.get_attribute("data-state") == "live"
    # Not merely live again after a reconnect: the one socket opened at load never closed.
    assert status.get_attribute("data-opened") == "1" and status.get_attribute("data-closed") is None

    job_id = run_node("produce.mjs", "fail", url, "e2e-live", "1")["ids"][0]
    page.wait_for_selector(f'table.jobs tr[data-job-id="{job_id}"]', timeout=10_000)
    assert "live failure 0" in page.locator(f'tr[data-job-id="{job_id}"]').inner_text()
    page.wait_for_function("document.querySelector('nav.tabs a.state-failed .count').textContent === '1'")
    assert page.evaluate("window.__noReload") == 1
    assert "active" in page.locator("nav.tabs a.state-failed").get_attribute("class")
    # What is offered only while there are failed jobs appears with the first one, without a reload.
    assert retry_all.is_visible() and page.locator("nav.queue-links a:has-text('Failed jobs by error')").is_visible()


def test_stalled_job_is_marked_live(page, live_app, node_fixture_db):
    url = node_fixture_db.url
    run_node("produce.mjs", "complete", url, "e2e-stall", "1")
    log_in(page, live_app)
    open_live(page, live_app, "/q/default/bull/e2e-stall/?state=active")

    stuck = subprocess.Popen(
        ["node", "stall_worker.mjs", url, "e2e-stall"], cwd=NODE_DIR, stdout=subprocess.PIPE, text=True
    )
    try:
        job_id = run_node("produce.mjs", "add", url, "e2e-stall", "1")["ids"][0]
        assert stuck.stdout.readline().strip() == f"ACTIVE {job_id}"
        stuck.kill()
        page.wait_for_selector(".queue-live .stalled-now", timeout=20_000)
        page.wait_for_selector(f'tr.stalled-row[data-job-id="{job_id}"]', timeout=10_000)
        assert page.evaluate("window.__noReload") == 1
    finally:
        stuck.kill()
        stuck.wait()


def test_pause_then_resume_from_the_queue_page_without_a_reload(page, live_app, node_fixture_db):
    # The queue page offers pause or resume as the queue is; after either, the other one is
    # offered as soon as the live state says the queue changed.
    client = node_fixture_db.client()
    run_node("produce.mjs", "complete", node_fixture_db.url, "e2e-pause", "1")
    log_in(page, live_app)
    open_live(page, live_app, "/q/default/bull/e2e-pause/")
    # Pausing is confirmed with a reason (the button opens the form); resuming is one click.
    pause, resume = page.locator(".queue-pause-open"), page.locator("button.queue-resume")
    assert pause.is_visible() and not resume.is_visible()
    pause.click()
    page.fill(".qw-confirm[open] input[name=reason]", "deploying the consumer")
    page.click("button.queue-pause")
    page.wait_for_selector("button.queue-resume", state="visible", timeout=10_000)
    assert not pause.is_visible() and client.hexists("bull:e2e-pause:meta", "paused")
    resume.click()
    page.wait_for_selector(".queue-pause-open", state="visible", timeout=10_000)
    assert not resume.is_visible() and not client.hexists("bull:e2e-pause:meta", "paused")
    assert page.evaluate("window.__noReload") == 1


def test_logging_out_in_another_tab_shows_signed_out_and_does_not_reconnect(page, live_app):
    log_in(page, live_app)
    open_live(page, live_app, "/")
    status = page.locator("#live-status")
    opened = status.get_attribute("data-opened")
    other = page.context.new_page()  # the same browser: the same session cookie
    other.goto(live_app.url + "/")
    other.click("form.whoami button[type=submit]")
    other.wait_for_url("**/login/**")
    # The server closes this tab's sockets (4401) at once; the page says why...
    page.wait_for_selector("#live-status[data-state=signed-out]", timeout=5_000)
    assert status.inner_text() == "signed out"
    # ...and does not try again: htmx's ws extension would have retried within a second or two.
    page.wait_for_timeout(3_000)
    assert status.get_attribute("data-opened") == opened
    assert status.get_attribute("data-state") == "signed-out"
    assert page.evaluate("window.__noReload") == 1


def test_a_page_over_the_users_socket_cap_says_too_many_tabs_and_does_not_reconnect(page, live_app, node_fixture_db):
    """The user already holds QUEUEWATCH_LIVE_SOCKETS_PER_USER live sockets (here: the leases of
    sockets held by other web processes, written where every process counts them): one more page
    is closed with 4429, and its badge says why instead of retrying."""
    client = node_fixture_db.client()
    log_in(page, live_app)
    open_live(page, live_app, "/")
    (key,) = [k for k in client.keys("queuewatch:sockets:*") if client.zcard(k)]  # this user's open sockets
    others = {f"elsewhere-{i}": 4_000_000_000_000 for i in range(60)}  # leases that do not lapse during the test
    client.zadd(key, others)
    try:
        other = page.context.new_page()
        other.goto(live_app.url + "/")
        status = other.locator("#live-status")
        other.wait_for_selector("#live-status[data-state=too-many]", timeout=10_000)
        assert status.inner_text() == "not live: too many tabs"
        assert "too many live pages open" in status.get_attribute("title")
        opened = status.get_attribute("data-opened")
        other.wait_for_timeout(3_000)  # htmx would have retried within a second or two
        assert status.get_attribute("data-opened") == opened
    finally:
        client.zrem(key, *others)


def test_a_queue_created_while_the_overview_is_open_shows_up_in_its_table(page, live_app, node_fixture_client):
    log_in(page, live_app)
    page.wait_for_selector("#live-status[data-state=live]")
    page.evaluate("window.__noReload = 1")
    meta = "bull:appeared-live:meta"  # what BullMQ writes first for a new queue
    node_fixture_client.hset(meta, "opts.maxLenEvents", 10000)
    try:
        # The monitor's next discovery pass (at most every 10 s) announces it; the page then
        # reloads its tables through htmx.
        page.locator("table.queues a", has_text="appeared-live").wait_for(timeout=45_000)
        assert page.evaluate("window.__noReload") == 1
    finally:
        node_fixture_client.delete(meta)
