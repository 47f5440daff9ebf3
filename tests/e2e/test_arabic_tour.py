"""Every page of the tour read in Arabic by real Chromium, after its scripts ran (live swaps,
charts, formatted numbers): no visible text holds a Latin letter, except user data (names, ids
and payloads, which the templates isolate in ``<bdi>``, ``dir="ltr"``, ``<code>`` or ``<pre>``)
and the few proper nouns that stay as they are in Arabic text."""

from __future__ import annotations

import re

import pytest

from tests.support.browser import log_in, manage

pytestmark = [pytest.mark.e2e, pytest.mark.node]

# Names that are not translated (products, formats, standards), written in Latin letters in
# Arabic text too; and identifiers from code and configuration (camelCase or dotted option and
# method names, Redis settings, acronyms, percentiles), which no translation may change.
PROPER_NOUNS = (
    "Queuewatch",
    "BullMQ",
    "Redis",
    "Node.js",
    "Python",
    "Prometheus",
    "JSON Lines",
    "JSON Schema",
    "JSONL",
    "JSON",
    "CSV",
    "Lua",
    "cron",
    "glob",
    "Slack",
    "Alertmanager",
    "PagerDuty",
    "maxmemory-policy",
    "maxmemory",
    "noeviction",
)
IDENTIFIER = (
    r"\b[a-z]+[A-Z]\w*|\b\w+(?:\.\w+)+|\b[a-z]+_\w+|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|\b[A-Z]{2,}\b"
    r"|\bp\d\d\b|\bRFC \d+|\b[a-z]+-\*"
)
# (camelCase, dotted, snake_case, ENV_NAMES, ACRONYMS, percentiles, RFC numbers, a glob like orders-*)

# Visible text nodes with a Latin letter, outside what marks user data; each as the element's
# tag and classes and its text, so a failure says where it is.
LATIN_TEXT = """() => {
  const userData = 'bdi, [dir=ltr], code, pre, kbd, samp, script, style, template, noscript, input, textarea, option';
  const found = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    const text = node.textContent.replace(/\\s+/g, ' ').trim();
    const el = node.parentElement;
    if (!text || !/[A-Za-z]/.test(text) || !el || el.closest(userData)) continue;
    const box = el.getBoundingClientRect();
    const style = getComputedStyle(el);
    if (box.width * box.height <= 1 || style.visibility === 'hidden' || !el.getClientRects().length) continue;
    found.push(el.tagName.toLowerCase() + (el.className ? '.' + String(el.className).split(' ').join('.') : '')
               + ': ' + text.slice(0, 160));
  }
  return found;
}"""


def tour(bullmq_fixture) -> list[str]:
    """The pages an operator walks: overview, a queue in each of its states, a failed job and
    its tools, the queue's settings and error groups, and every page of the navigation."""
    mixed = {
        full_id.split("/", 2)[2]: job
        for full_id, job in bullmq_fixture["jobs"].items()
        if full_id.startswith("bull/mixed/")
    }
    failed = next(i for i, job in mixed.items() if job["failedReason"] and job.get("returnvalue") is None)
    completed = next(i for i, job in mixed.items() if job.get("returnvalue") is not None)
    queue = "/q/default/bull/mixed/"
    return [
        "/",
        *(
            f"{queue}?state={s}"
            for s in ("waiting", "active", "delayed", "prioritized", "waiting-children", "completed", "failed")
        ),
        f"{queue}jobs/{failed}",
        f"{queue}jobs/{completed}",
        f"{queue}edit/{failed}",
        f"{queue}settings",
        f"{queue}add-job",
        f"{queue}errors/",
        f"{queue}schedulers/",
        "/q/default/bull/sched/schedulers/",
        "/schedulers/",
        "/health/",
        "/tasks/",
        "/audit/",
        "/alerts/",
        "/alerts/rules/",
        "/alerts/rules/new",
        "/alerts/silences/",
        "/alerts/channels/",
        "/alerts/channels/new/",
        "/account/tokens/",
    ]


def latin_outside_user_data(found: list[str]) -> list[str]:
    nouns = re.compile("|".join([*(re.escape(n) for n in PROPER_NOUNS), IDENTIFIER]))
    return [line for line in found if re.search("[A-Za-z]", nouns.sub("", line.split(": ", 1)[1]))]


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


def test_every_page_of_the_tour_reads_in_arabic(browser, live_app, bullmq_fixture):
    manage(live_app.env, "shell", "-c", AUDIT_ROWS)
    context = browser.new_context(bypass_csp=True, locale="ar")
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        log_in(page, live_app)
        english: dict[str, list[str]] = {}
        for path in tour(bullmq_fixture):
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
