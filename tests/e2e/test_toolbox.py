"""In real Chromium, through the shipped web server (uvicorn): add a job with options from the add form (bad JSON first,
refused with a message), edit a failed job's data with a previewed diff and retry it, and
obliterate a paused queue only after its name is typed."""
# Literal `bull:` keys kept: the session's app (uvicorn) and monitor serve the Node-built database, prefix 'bull'.

from __future__ import annotations

import json

import pytest

from tests.support.browser import follow, log_in
from tests.support.servers import run_node

pytestmark = [pytest.mark.e2e, pytest.mark.node]


def empty_queue(page, live_app, db, name: str):
    """A queue with no jobs (its meta only), and a logged-in page; the client of its Redis."""
    run_node("toolbox.mjs", "hashes", db.url, name, "[]")
    log_in(page, live_app)
    return db.client()


def add_on_the_form(page, data: str, outcome: str, **fields: str):
    """Fill the add page's name, data and option ``fields`` and submit; the result shown."""
    page.fill("input[name=name]", "send-invoice")
    page.fill("textarea[name=data]", data)
    for field, value in fields.items():
        page.fill(f"input[name={field}]", value)
    page.click("button.queue-add")
    return page.wait_for_selector(f"#action-result .action-result.{outcome}")


def test_add_a_job_from_the_form(page, live_app, node_fixture_db):
    client = empty_queue(page, live_app, node_fixture_db, "e2e-add")
    page.goto(live_app.url + "/q/default/bull/e2e-add/")
    follow(page, "a.add-job-link")
    assert "not valid JSON" in add_on_the_form(page, '{"invoice": 7,}', "refused").inner_text()
    assert client.llen("bull:e2e-add:wait") == 0
    page.select_option("select[name=backoff_type]", "exponential")
    done = add_on_the_form(
        page, '{"invoice": 7}', "ok", priority="2", attempts="5", backoff_delay="1000", jobId="invoice-7"
    )
    assert "invoice-7" in done.inner_text()
    assert json.loads(client.hget("bull:e2e-add:invoice-7", "opts")) == {
        "attempts": 5,
        "priority": 2,
        "backoff": {"type": "exponential", "delay": 1000},
        "jobId": "invoice-7",
    }
    assert client.zscore("bull:e2e-add:prioritized", "invoice-7") is not None


def diff_colours(page, theme: str) -> list[str]:
    """The text and background colours of a diff's added, removed and hunk lines in ``theme``:
    each kind of line coloured, and differently from the others."""
    page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
    styled = "e => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]"
    colours = []
    for kind in ("diff-add", "diff-del"):
        colours += page.locator(f"pre.json-diff .{kind}").first.evaluate(styled)
    plain = page.locator("pre.json-diff").evaluate(styled)
    assert "rgba(0, 0, 0, 0)" not in colours and not set(colours[:2]) & set(colours[2:]), colours
    assert colours[0] != plain[0] and colours[2] != plain[0], (colours, plain)
    return colours


def test_edit_and_retry_a_failed_job(page, live_app, node_fixture_db):
    url = node_fixture_db.url
    job = run_node(
        "toolbox.mjs",
        "fail",
        url,
        "e2e-edit",
        json.dumps([{"name": "mail", "data": {"to": "bad@", "token": "t0ps3cret"}}]),
    )["ids"][0]
    client = node_fixture_db.client()
    log_in(page, live_app)
    page.goto(live_app.url + f"/q/default/bull/e2e-edit/jobs/{job}")
    follow(page, "a.edit-retry-link")
    assert "t0ps3cret" not in page.content()
    page.fill("textarea[name=patch]", '{"to": "ok@example.com"}')
    page.click("button.edit-preview")
    diff = page.wait_for_selector("#edit-preview pre.json-diff")
    assert '+  "to": "ok@example.com"' in diff.inner_text() and '-  "to": "bad@"' in diff.inner_text()
    assert diff_colours(page, "light") != diff_colours(page, "dark")  # each theme its own
    assert client.zscore("bull:e2e-edit:failed", job) is not None  # the preview changed nothing
    page.fill("#edit-preview input[name=reason]", "typo")
    page.click("button.job-edit-retry")
    page.wait_for_selector("#action-result .action-result.ok")
    assert json.loads(client.hget(f"bull:e2e-edit:{job}", "data")) == {"to": "ok@example.com", "token": "t0ps3cret"}
    shown = page.locator("#edit-current-data").inner_text()  # the page shows what is stored now
    assert '"to": "ok@example.com"' in shown and "bad@" not in shown and "t0ps3cret" not in shown
    assert page.locator("button.job-edit-retry").count() == 0  # nothing left to save
    assert client.zscore("bull:e2e-edit:failed", job) is None


def test_obliterate_needs_the_queue_name_typed(page, live_app, node_fixture_db):
    url = node_fixture_db.url
    run_node("toolbox.mjs", "fill", url, "e2e-gone", "1")
    client = node_fixture_db.client()
    log_in(page, live_app)
    page.goto(live_app.url + "/q/default/bull/e2e-gone/settings")
    assert "jobs and 1 job schedulers" in page.locator(".obliterate-count").inner_text()
    page.fill("input[name=confirm]", "e2e-gonE")
    page.fill("form:has(button.queue-obliterate) input[name=reason]", "retired")
    page.click("button.queue-obliterate")
    refused = page.wait_for_selector("#action-result .action-result.refused")
    assert "is not the queue's name" in refused.inner_text()
    assert client.exists("bull:e2e-gone:meta")
    page.fill("input[name=confirm]", "e2e-gone")
    page.click("button.queue-obliterate")
    page.wait_for_selector("#action-result .action-result.ok")
    assert client.keys("bull:e2e-gone:*") == []


def test_edit_and_retry_a_whole_error_group(page, live_app, node_fixture_db):
    url = node_fixture_db.url
    ids = run_node("seed_actions.mjs", url, "e2e-bulk-edit", "12", "0", "0", "mail", "bad address for user")["failed"]
    run_node("seed_actions.mjs", url, "e2e-bulk-edit", "2", "0", "0", "mail", "smtp timeout after")
    client = node_fixture_db.client()
    log_in(page, live_app)
    page.goto(live_app.url + "/q/default/bull/e2e-bulk-edit/errors/")
    group = page.locator("tr.error-group").first
    assert group.locator("td.count").inner_text() == "12"
    group.locator("select[name=action]").select_option("edit-retry")
    group.locator("details.group-patch summary").click()
    group.locator("textarea[name=patch]").fill('{"address": "fixed@example.com"}')
    group.locator("button:has-text('Preview')").click()
    preview = page.wait_for_selector("#bulk-panel .bulk-preview")
    assert preview.get_attribute("data-count") == "12"
    assert page.locator("#bulk-panel .edit-diff").count() == 10  # the sample
    assert '"address": "fixed@example.com"' in page.locator("#bulk-panel .edit-diff .diff-add").first.inner_text()
    page.fill("#bulk-panel input[name=rate]", "0")
    page.fill("#bulk-panel input[name=reason]", "address validator fixed")
    page.click("#bulk-panel button:has-text('Confirm')")
    page.wait_for_selector(".task-progress[data-state=done]", timeout=30_000)
    assert page.locator(".task-progress .moved").inner_text() == "12"
    for job_id in ids:  # each job's own stored data, patched; back to waiting with its counters reset
        assert json.loads(client.hget(f"bull:e2e-bulk-edit:{job_id}", "data"))["address"] == "fixed@example.com"
        assert client.hget(f"bull:e2e-bulk-edit:{job_id}", "atm") is None
    assert client.zcard("bull:e2e-bulk-edit:failed") == 2


def test_a_job_schema_set_on_the_settings_page_refuses_bad_data_on_the_add_page(page, live_app, node_fixture_db):
    client = empty_queue(page, live_app, node_fixture_db, "e2e-schema")
    page.goto(live_app.url + "/q/default/bull/e2e-schema/settings")
    assert "No job schema" in page.locator(".job-schema-setting").inner_text()
    page.fill(
        "textarea[name=schema]",
        '{"type": "object", "required": ["invoice"], "properties": {"invoice": {"type": "integer", "minimum": 1}}}',
    )
    page.click("button.queue-set-schema")
    page.wait_for_selector("#action-result .action-result.ok")
    page.goto(live_app.url + "/q/default/bull/e2e-schema/add-job")
    page.click("details.job-schema-applies summary")  # collapsed until asked for
    assert '"required"' in page.locator("details.job-schema-applies pre.job-schema").inner_text()
    assert "$.invoice: should be ≥ 1." in add_on_the_form(page, '{"invoice": 0}', "refused").inner_text()
    assert client.llen("bull:e2e-schema:wait") == 0
    add_on_the_form(page, '{"invoice": 7}', "ok")
    assert client.llen("bull:e2e-schema:wait") == 1
