"""In real Chromium, through the shipped web server: a flow real Node BullMQ built across three
queues (tests/node/flow_tree.mjs) opened from a grandchild's job page as a tree from its topmost
parent, each node in the state BullMQ gives it; a child taken off its parent's dependencies from
its node, the parent then waiting; and the same tree read in Arabic, with no English outside
user data."""

from __future__ import annotations

import pytest

from tests.support.browser import follow, log_in
from tests.support.latin_text import LATIN_TEXT, latin_outside_user_data
from tests.support.servers import run_node

pytestmark = [pytest.mark.e2e, pytest.mark.node]


@pytest.fixture(scope="module")
def flow(live_app, node_fixture_db):
    return run_node("flow_tree.mjs", node_fixture_db.url, "build")


def node(page, suffix: str):
    return page.locator(f'li.flow-node[data-key$="{suffix}"]').first


def test_the_tree_of_a_flow_and_an_action_on_one_of_its_nodes(page, live_app, flow):
    log_in(page, live_app)
    page.goto(f"{live_app.url}/q/default/bull/flow-later/jobs/g-later")
    follow(page, "a.flow-link")  # loaded: the whole tree, not only its first nodes
    page.wait_for_selector("ul.flow-tree")
    shown = page.eval_on_selector_all(
        "li.flow-node", "els => els.map(e => [e.dataset.key.split(':').slice(1).join(':'), e.dataset.state])"
    )
    expected = [(n["key"].split(":", 1)[1], n["state"]) for n in flow["flow"]]
    assert sorted(map(tuple, shown)) == sorted(expected)
    assert shown[0] == ["flow-top:order-1", expected[0][1]]  # from the topmost parent
    assert node(page, ":flow-later:g-later").locator("> .flow-head").get_by_text("this job").is_visible()
    fatal = node(page, ":flow-kids:k-fatal")
    assert "failParentOnFailure" in fatal.inner_text() and "card declined" in fatal.inner_text()

    page.goto(f"{live_app.url}/q/default/bull/flow-top/flow/order-2")
    child = node(page, ":flow-later:k2-later")
    child.locator("details.flow-actions > summary").first.click()
    form = child.locator("form:has(button.job-remove-child-dependency)")
    form.locator("input[name=reason]").fill("shipped by hand")
    form.locator("button").click()
    page.wait_for_selector("#action-result:has-text('taken off its parent')")
    assert "the parent moved to waiting" in page.inner_text("#action-result")
    page.reload()
    assert node(page, ":flow-top:order-2").get_attribute("data-state") == "waiting"
    assert page.locator("li.flow-node").count() == 1  # the child runs on alone


def test_the_tree_reads_in_arabic(browser, live_app, flow):
    context = browser.new_context(bypass_csp=True, locale="ar")
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        log_in(page, live_app)
        page.goto(f"{live_app.url}/q/default/bull/flow-later/flow/g-later")
        assert page.locator("html").get_attribute("lang") == "ar"
        page.wait_for_selector("ul.flow-tree")
        assert page.locator("li.flow-node").count() == len(flow["flow"])
        assert "مهمة فرعية" in page.inner_text("ul.flow-tree") or "فرعية" in page.inner_text("ul.flow-tree")
        assert not latin_outside_user_data(page.evaluate(LATIN_TEXT))
    finally:
        context.close()
