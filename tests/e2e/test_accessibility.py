"""Accessibility in real Chromium: axe-core (tests/node, pinned) over every page of the tour in
English and Arabic, light and dark; and keyboard-only walks that reach every control of the
pages an operator works on, each with a visible focus ring."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.support.browser import log_in
from tests.support.servers import NODE_DIR, ensure_node_modules
from tests.support.tour import tour

pytestmark = [pytest.mark.e2e, pytest.mark.node]

AXE = NODE_DIR / "node_modules" / "axe-core" / "axe.min.js"
# WCAG 2.0-2.2 A and AA, and axe's best practices (landmarks, table headers, skip links).
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]
# Failed at any impact: what the pages must never do again, whatever axe rates it.
ALWAYS = {
    "link-in-text-block",
    "nested-interactive",
    "landmark-unique",
    "landmark-one-main",
    "region",
    "empty-table-header",
    "bypass",
    "color-contrast",
}

RUN_AXE = """async (tags) => {
  const result = await axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
  return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 4).map(n => n.target.join(' ') + ' | '
                                      + n.failureSummary.replace(/\\s+/g, ' ').slice(0, 200))}));
}"""


def serious(violations: list[dict]) -> list[dict]:
    return [v for v in violations if v["impact"] in ("serious", "critical") or v["id"] in ALWAYS]


@pytest.mark.slow
@pytest.mark.parametrize("language", ["en", "ar"])  # one test each: test processes run them side by side
def test_axe_finds_nothing_serious_on_the_tour(browser, live_app, bullmq_fixture, language):
    ensure_node_modules()  # axe-core came after bullmq: an older install lacks it
    found: dict[str, list[dict]] = {}
    context = browser.new_context(bypass_csp=True, locale=language, color_scheme="light")
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        log_in(page, live_app)
        for path in tour(bullmq_fixture):
            page.goto(live_app.url + path)
            page.wait_for_load_state("networkidle")
            page.add_script_tag(path=str(AXE))
            # Both themes on one load: the theme is CSS only (color-scheme follows the
            # system preference when no choice is saved).
            for scheme in ("light", "dark"):
                page.emulate_media(color_scheme=scheme)
                left = serious(page.evaluate(RUN_AXE, AXE_TAGS))
                if left:
                    found[f"{language} {scheme} {path}"] = left
    finally:
        context.close()
    assert not found, "\n".join(
        f"{where}\n"
        + "\n".join(f"  {v['id']} ({v['impact']}): {v['help']}\n    " + "\n    ".join(v["nodes"]) for v in vs)
        for where, vs in found.items()
    )


# Every control a keyboard can reach on the page (enabled, rendered, not taken out of the tab
# order), each as a descriptor; a multiset, since rows repeat the same control.
CONTROLS = """(root) => {
  const sel = 'a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]:not([tabindex="-1"])';
  return [...document.querySelector(root).querySelectorAll(sel)]
    .filter(el => !el.disabled && el.checkVisibility({visibilityProperty: true}) && !el.closest('[inert]')
                  && !(el.tagName !== 'SUMMARY' && el.closest('details:not([open])')))
    .map(el => window.qwDescribe(el));
}"""

# The focused element, described, with how its focus shows: the outline's style, width and the
# contrast of its colour against the background behind the element (WCAG 1.4.11: 3:1).
FOCUSED = """() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const parse = c => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const behind = node => {
    for (let n = node.parentElement; n; n = n.parentElement) {
      const c = parse(getComputedStyle(n).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.9)) return c.slice(0, 3);
    }
    const c = parse(getComputedStyle(document.documentElement).backgroundColor);
    return c.length >= 3 && (c.length === 3 || c[3] > 0) ? c.slice(0, 3) : [255, 255, 255];
  };
  const style = getComputedStyle(el);
  const ring = parse(style.outlineColor).slice(0, 3);
  const [a, b] = [lum(ring), lum(behind(el))];
  return {
    what: window.qwDescribe(el),
    visible: style.outlineStyle !== 'none' && style.outlineStyle !== 'auto' && parseFloat(style.outlineWidth) >= 2,
    contrast: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05),
  };
}"""

DESCRIBE = """() => {
  window.qwDescribe = el => [
    el.tagName.toLowerCase(), el.id, el.getAttribute('name'), el.getAttribute('href'), el.getAttribute('type'),
    // A text's figures are left out: live ones (a rate, a count) change between counting and walking.
    (el.getAttribute('aria-label') || el.textContent.replace(/[\\d.,]+/g, '#') || el.value || '')
      .replace(/\\s+/g, ' ').trim().slice(0, 40),
  ].join('|');
}"""


INSIDE = "(root) => document.querySelector(root).contains(document.activeElement)"


def keyboard_walk(page, root: str, *, limit: int = 400, until: Counter | None = None) -> list[dict]:
    """Tab on from where the focus is until it leaves ``root`` or comes back round; each
    stop's FOCUSED. With ``until`` (the controls to reach), coming back round does not end the
    walk: a live swap that drops the focus to <body> sends the next Tab back to the top, so the
    walk goes on until every control was reached (or ``limit`` presses)."""
    stops: list[dict] = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        stop = page.evaluate(FOCUSED)
        if stop is None or not page.evaluate(INSIDE, root):
            if until is None or stop is not None:
                break
            continue  # on <body> after a swap: the next Tab starts from the top
        if until is None and stops and stop["what"] == stops[0]["what"]:
            break
        stops.append(stop)
        if until is not None and not until - Counter(s["what"] for s in stops):
            break
    return stops


def assert_walk_reaches_every_control(page, where: str, root: str = "body", *, from_top: bool = True) -> None:
    page.evaluate(DESCRIBE)
    for _attempt in range(3):
        # The page stays live: a swap that replaces the focused row drops the focus to <body> and
        # ends the walk early. Such a walk is taken again (at most twice), from where it began,
        # against the controls the page has then.
        controls = Counter(page.evaluate(CONTROLS, root))
        if from_top:
            page.evaluate("() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); }")
        stops = keyboard_walk(page, root, until=controls if from_top else None)
        reached = Counter(s["what"] for s in stops)
        missed = controls - reached
        if not missed or not from_top:
            break
    assert stops, f"{where}: Tab reached nothing"
    assert not missed, f"{where}: not reached by Tab: {sorted(missed)}"
    unseen = [s["what"] for s in stops if not s["visible"]]
    assert not unseen, f"{where}: focus not visible on {unseen}"
    faint = [f"{s['what']} ({s['contrast']:.2f}:1)" for s in stops if s["contrast"] < 3]
    assert not faint, f"{where}: focus ring under 3:1 on {faint}"


@pytest.fixture
def keyboard_page(browser, live_app):
    context = browser.new_context(bypass_csp=True, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    log_in(page, live_app)
    yield page
    context.close()


@pytest.mark.slow
def test_keyboard_walks_reach_every_control_with_a_visible_focus(keyboard_page, live_app):
    page = keyboard_page
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        # The queue page, on its failed jobs (row checkboxes, links, bulk and queue actions).
        page.goto(live_app.url + "/q/default/bull/mixed/?state=failed")
        page.wait_for_load_state("networkidle")
        assert_walk_reaches_every_control(page, f"queue page ({scheme})")

        # A bulk preview asked for from the keyboard takes the focus, and its controls are reached.
        page.focus("button.bulk-retry-failed")
        page.keyboard.press("Enter")
        page.wait_for_selector("#bulk-panel .bulk-preview")
        page.wait_for_function("() => document.querySelector('#bulk-panel').contains(document.activeElement)")
        assert_walk_reaches_every_control(page, f"bulk preview ({scheme})", "#bulk-panel", from_top=False)

        # The alert rule form.
        page.goto(live_app.url + "/alerts/rules/new")
        page.wait_for_load_state("networkidle")
        assert_walk_reaches_every_control(page, f"alert rule form ({scheme})")


# Each chart's time labels, as drawn: how far the first starts before the canvas and the last
# ends after it (uPlot centres a label on its tick, and the canvas clips what overflows).
TIME_LABEL_OVERFLOW = """() => [...document.querySelectorAll('.chart[data-chart]')].filter(e => e.__qwPlot).map(e => {
  const u = e.__qwPlot, axis = u.axes[0];
  u.ctx.font = axis.font[0];
  const shown = axis._splits.map((v, i) => [v, axis._values[i]]).filter(([, t]) => t != null && String(t) !== '');
  const width = t => Math.max(...String(t).split('\\n').map(line => u.ctx.measureText(line).width));
  const [first, last] = [shown[0], shown[shown.length - 1]];
  return {
    chart: e.dataset.chart,
    before: width(first[1]) / 2 - u.valToPos(first[0], 'x', true),
    after: u.valToPos(last[0], 'x', true) + width(last[1]) / 2 - u.ctx.canvas.width,
  };
})"""


@pytest.mark.parametrize("language", ["en", "ar"])
def test_charts_keep_their_first_and_last_time_labels_whole(browser, live_app, language):
    context = browser.new_context(bypass_csp=True, locale=language, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        log_in(page, live_app)
        page.goto(live_app.url + "/q/default/bull/mixed/")
        page.wait_for_function("() => [...document.querySelectorAll('.chart[data-chart]')].some(e => e.__qwPlot)")
        page.wait_for_load_state("networkidle")
        charts = page.evaluate(TIME_LABEL_OVERFLOW)
        assert charts and all(c["before"] <= 0 and c["after"] <= 0 for c in charts), charts
    finally:
        context.close()
