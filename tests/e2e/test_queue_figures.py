"""In real Chromium, in English and Arabic: a queue's priorities and limits (jobs per priority,
the "maxed" badge, the rate-limit window), BullMQ's own metrics charted beside ours, and the job
page's progress bar, against queues real Node BullMQ 6.7 built."""

from __future__ import annotations

import re

import pytest

from queues.keys import QueueRef
from tests.support.browser import log_in
from tests.support.servers import run_node

pytestmark = [pytest.mark.e2e, pytest.mark.node]

QUEUES = ("e2e-figures", "e2e-figures-metrics", "e2e-figures-jobs")


@pytest.fixture(scope="module")
def built(node_fixture_db):
    url = node_fixture_db.url
    made = {
        "priorities": run_node("figures.mjs", url, QUEUES[0], "priorities"),
        "metrics": run_node("figures.mjs", url, QUEUES[1], "metrics", timeout=120),
        "jobs": run_node("figures.mjs", url, QUEUES[2], "job67"),
    }
    yield made
    client = node_fixture_db.client()
    for name in QUEUES:  # the held active jobs would stall; leave the shared database as found
        for key in client.scan_iter(match=QueueRef("default", "bull", name).key("*"), count=1000):
            client.delete(key)
    client.close()


def figures_and_charts(page, app, made) -> dict:
    page.goto(app.url + f"/q/default/bull/{QUEUES[0]}/")
    box = page.locator("#queue-figures")
    box.wait_for()
    texts = {
        "box": box.inner_text(),
        "summary": box.locator("summary").inner_text(),
        "priorities": [li.get_attribute("data-priority") for li in box.locator("li[data-priority]").all()],
        "window": box.locator(".figure-window").inner_text(),
    }
    page.goto(app.url + f"/q/default/bull/{QUEUES[1]}/")
    chart = page.locator(".chart-bullmq-metrics")
    chart.locator(".uplot").wait_for()
    texts["legend"] = chart.locator(".u-legend").inner_text()
    page.goto(app.url + f"/q/default/bull/{QUEUES[2]}/jobs/{made['jobs']['owner']}")
    bar = page.locator(".job-progress progress")
    bar.wait_for()
    texts["progress"] = bar.get_attribute("value")
    return texts


def test_queue_figures_and_bullmq_metrics_in_english(page, live_app, built):
    log_in(page, live_app)
    got = figures_and_charts(page, live_app, built)
    assert "Priorities and limits" in got["summary"] and "maxed" in got["summary"].lower()
    assert got["priorities"] == ["0", "1", "5", "1000"]
    assert got["window"].startswith("2 of 5 jobs started, the window ends in")
    assert "Completed (BullMQ metrics)" in got["legend"] and "Failed (BullMQ metrics)" in got["legend"]
    assert got["progress"] == "42"


def test_queue_figures_and_bullmq_metrics_in_arabic(browser, live_app, built):
    context = browser.new_context(bypass_csp=True, locale="ar")
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        log_in(page, live_app)
        got = figures_and_charts(page, live_app, built)
        assert "الأولويات والحدود" in got["summary"] and "بلغ الحد الأقصى" in got["summary"]
        assert got["priorities"] == ["0", "1", "5", "1000"]
        assert "تنتهي النافذة" in got["window"]
        assert "مقاييس العمّال" in got["legend"]  # BullMQ's, written by workers; no Latin in a legend
        assert got["progress"] == "42"
        # The whole box reads in Arabic (the Arabic tour checks every page the same way).
        assert not re.search("[A-Za-z]", got["box"]), got["box"]
    finally:
        context.close()
