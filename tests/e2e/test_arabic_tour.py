"""Every page of the tour read in Arabic by real Chromium, after its scripts ran (live swaps,
charts, formatted numbers): no visible text holds a Latin letter, except user data (names, ids
and payloads, which the templates isolate in ``<bdi>``, ``dir="ltr"``, ``<code>`` or ``<pre>``)
and the few proper nouns that stay as they are in Arabic text."""

from __future__ import annotations

import re

import pytest

from tests.support.browser import log_in, manage
from tests.support.latin_text import LATIN_TEXT, latin_outside_user_data
from tests.support.tour import tour

pytestmark = [pytest.mark.e2e, pytest.mark.node]

# Rows for the audit log, with the messages the code that writes them makes: a single-job
# action's result, a bulk task's closing summary, and a configuration change with its details.
AUDIT_ROWS = """
from dashboard.actions.bulk_runner import closing_message
from dashboard.actions.models import BulkTask
from dashboard.audit import log as audit
from queues.actions import gone
from queues.keys import QueueRef

q = QueueRef("default", "bull", "mixed")
audit.record(user=None, via="page", action="job.retry", queue=q, outcome="refused", job_ids=["42"], message=gone("42"))
task = BulkTask(pk=7, action="retry", total=3, moved=2, skipped=1, failed=0)
audit.record(user=None, via="task", action="bulk.retry", queue=q, outcome="ok", affected=2,
             selection={"state": "failed", "skipped_by": "1 gone"},
             message=closing_message(task, BulkTask.DONE, None, error="", note=""))
audit.record_event(user=None, via="page", action="channel.create", target="channel 3 “ops”",
                   details={"scopes": "read", "unknown_key": 1})
"""


@pytest.mark.parametrize("half", [0, 1])  # every other page each: test processes run them side by side
def test_every_page_of_the_tour_reads_in_arabic(browser, live_app, bullmq_fixture, half):
    manage(live_app.env, "shell", "-c", AUDIT_ROWS)
    context = browser.new_context(bypass_csp=True, locale="ar")
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        log_in(page, live_app)
        english: dict[str, list[str]] = {}
        for path in tour(bullmq_fixture)[half::2]:
            page.goto(live_app.url + path)
            assert page.locator("html").get_attribute("lang") == "ar", path
            page.wait_for_load_state("networkidle")
            page.wait_for_timeout(1200)  # a live swap or two, and the charts' first draw
            left = latin_outside_user_data(page.evaluate(LATIN_TEXT))
            if left:
                english[path] = left
        assert not english, "\n".join(f"{path}\n  " + "\n  ".join(lines[:25]) for path, lines in english.items())
    finally:
        context.close()


# Visible text with an English unit after a number ("30 min 1 s", "0/min"), anywhere but in user
# data: figures the product writes are never user data, even where they sit left to right.
ENGLISH_UNITS = """() => {
  const userData = 'bdi, code, pre, kbd, samp, script, style, template, noscript, input, textarea, option';
  const unit = /\\d\\s*(ms|s|min|h|d)\\b|\\/min\\b|\\bmin\\b/;
  const found = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    const el = node.parentElement;
    const text = node.textContent.replace(/\\s+/g, ' ').trim();
    if (!text || !el || el.closest(userData) || !unit.test(text) || !el.getClientRects().length) continue;
    found.push(el.tagName.toLowerCase() + ': ' + text.slice(0, 120));
  }
  return found;
}"""


# Alerts as the rule engine records them: their summaries in English, one as an older row wrote it
# (resolved, and of a disabled rule: the running monitor leaves them as they are).
ALERT_ROWS = """
from django.utils import timezone
from dashboard.alerts.models import Alert, AlertRule

rule = AlertRule.objects.create(name="tour: oldest waiting", kind="oldest_waiting", threshold=60, enabled=False)
for n, summary in enumerate(["oldest waiting job is at least 3 min 4 s old", "oldest waiting job is 184 s old"]):
    Alert.objects.create(rule=rule, fingerprint=f"tour-{n}", connection="default", prefix="bull", queue="mixed",
                         state=Alert.RESOLVED, pending_since=timezone.now(), resolved_at=timezone.now(),
                         summary=summary)
"""


def test_arabic_pages_write_durations_and_rates_with_arabic_units(browser, live_app, bullmq_fixture):
    manage(live_app.env, "shell", "-c", ALERT_ROWS)
    context = browser.new_context(bypass_csp=True, locale="ar")
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        log_in(page, live_app)
        english = {}
        paths = ("/", "/q/default/bull/mixed/", "/q/default/bull/mixed/?state=failed", "/schedulers/", "/alerts/")
        for path in paths:
            page.goto(live_app.url + path)
            page.wait_for_load_state("networkidle")
            page.wait_for_timeout(1200)  # a live swap, the charts' first draw and legend
            left = page.evaluate(ENGLISH_UNITS)
            if left:
                english[path] = left
        assert not english, english
        page.goto(live_app.url + "/alerts/")
        alerts = page.locator("table.alerts").inner_text()
        assert "عمر أقدم مهمة منتظِرة 3 د 4 ث على الأقل" in alerts and "عمر أقدم مهمة منتظِرة 184 ث" in alerts

        # The browser's formatters (every live swap, chart axis and legend) speak Arabic too.
        page.goto(live_app.url + "/q/default/bull/mixed/")
        page.wait_for_selector(".chart .uplot .u-legend")
        legends = page.locator(".chart .u-legend").all_inner_texts()
        assert legends and not any(re.search(r"\d\s*(ms|s|min|h)\b|/min|[A-Za-z]{3}", text) for text in legends), (
            legends
        )
        # The axes uPlot draws on its canvas: their titles and tick labels (the ones it drew last).
        axes = page.evaluate(
            """() => [...document.querySelectorAll('.chart')].map(el => el.__qwPlot).filter(Boolean)
                 .flatMap(u => u.axes.slice(1).flatMap(a => [a.label || '', ...(a._values || [])]))"""
        )
        assert any(re.search("[\u0600-\u06ff]", text) for text in axes), axes
        assert not [text for text in axes if re.search(r"\d\s*(ms|s|min|h)\b|/min|[A-Za-z]{3}", str(text))], axes
        said = page.evaluate(
            "() => [qwText.duration(541), qwText.durationMs(400), qwText.perMinute(0), qwText.perMinute(1234)]"
        )
        assert said == ["9 د 1 ث", "400 م‌ث", "0/د", "1.2 ألف/د"]
        page.goto(live_app.url + "/schedulers/")
        assert "كل 1 د" in page.locator("main").inner_text()  # the "every-minute" scheduler
    finally:
        context.close()
