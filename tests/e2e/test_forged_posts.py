"""In real Chromium: elements the way a forged live fragment would bring them (swapped in and
processed by htmx) try to pause a queue in the logged-in admin's name: on load, appended inside
the genuine pause form, and clicked by the user while pulling the page's token fields in with
hx-include. None of them posts; the genuine pause button still does."""
# Literal `bull:` keys kept: the session's Node-built database (build_fixture.mjs), served by the e2e app and monitor

from __future__ import annotations

import pytest

from tests.support.browser import log_in
from tests.support.servers import run_node

pytestmark = [pytest.mark.e2e, pytest.mark.node]

PAUSE = "/q/default/bull/e2e-forged/actions/pause"


def swap_in(page, selector: str, html: str) -> None:
    """What htmx does with an out-of-band fragment: insert it, then process its attributes."""
    page.evaluate(
        """([selector, html]) => {
            const parent = document.querySelector(selector);
            parent.insertAdjacentHTML('beforeend', html);
            htmx.process(parent.lastElementChild);
        }""",
        [selector, html],
    )


def test_swapped_in_elements_cannot_post_with_the_users_token(page, live_app, node_fixture_db):
    run_node("seed_actions.mjs", node_fixture_db.url, "e2e-forged", "3", "0", "0")
    client = node_fixture_db.client()
    posts = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    log_in(page, live_app)
    page.goto(live_app.url + "/q/default/bull/e2e-forged/")
    page.wait_for_selector("#live-status[data-state=live]")
    posts.clear()

    swap_in(page, "main", f'<div id="forged-load" hx-post="{PAUSE}" hx-trigger="load"></div>')
    swap_in(page, f"form[action='{PAUSE}']", f'<span hx-post="{PAUSE}" hx-trigger="load"></span>')
    swap_in(
        page,
        "main",
        f'<button id="forged-click" hx-post="{PAUSE}" hx-include="[name=csrfmiddlewaretoken]">Refresh</button>',
    )
    page.click("#forged-click")  # a real click by the user on the forged element
    page.wait_for_timeout(1500)
    assert posts == []
    assert client.hget("bull:e2e-forged:meta", "paused") is None

    page.click(".queue-pause-open")  # the genuine form still posts, with the token (and its reason)
    page.fill(".qw-confirm[open] input[name=reason]", "a real pause")
    page.click("button.queue-pause")
    page.wait_for_function("() => document.querySelector('#action-result, #bulk-panel').textContent.trim() !== ''")
    assert client.hget("bull:e2e-forged:meta", "paused") == b"1"
