"""The shell in real Chromium, with the Content-Security-Policy enforced: at phone (390 px) and
desktop (1,440 px) widths, light and dark, English and Arabic, the overview, a queue page with a
bulk preview, a job page and the alert pages never scroll the page sideways, every navigation
item is visible and clickable (through the menu on a phone), Arabic pages are right-to-left with
the navigation on the right while job ids and JSON stay left-to-right, and nothing logs an
error. Screenshots go to var/screenshots/ (git-ignored; CI keeps them as artefacts).

One browser, one app and one signed-in session for the module; each combination is one browser
context (viewport, colour scheme and Accept-Language), so ~40 page loads in all."""
# Literal `bull:` keys kept: the session's app (uvicorn) and monitor serve the Node-built database, prefix 'bull'.

from __future__ import annotations

import asyncio
import itertools

import pytest
from bullmq import FlowProducer, Queue, Worker

from dashboard.demo.runtime import close_worker
from tests.support.browser import log_in, run_async
from tests.support.servers import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.node]

SHOTS = ROOT / "var" / "screenshots"
QUEUE = "/q/default/bull/mixed/"
ALERT_PAGES = ["/alerts/", "/alerts/rules/", "/alerts/rules/new", "/alerts/silences/"]
COMBOS = list(itertools.product(("en", "ar"), (390, 1440), ("light", "dark")))
NAV_LINKS = 8  # Queues, Schedulers, Health, Alerts, Channels, Tasks, Audit log, Admin (staff)


@pytest.fixture(scope="module")
def session_state(browser, live_app):
    """Signed in once; each context starts from this cookie jar. Nothing here uses the language
    switcher, so the session carries no saved language and Accept-Language decides."""
    context = browser.new_context()
    page = context.new_page()
    log_in(page, live_app)
    state = context.storage_state()
    context.close()
    return state


@pytest.fixture(scope="module")
def job_path(node_fixture_db, bullmq_fixture):
    client = node_fixture_db.client()
    try:
        job_id = client.zrange("bull:mixed:failed", 0, 0)[0]
    finally:
        client.close()
    return f"{QUEUE}jobs/{job_id.decode() if isinstance(job_id, bytes) else job_id}"


def open_context(browser, state, *, lang="en", width=1440, scheme="light"):
    context = browser.new_context(
        storage_state=state, viewport={"width": width, "height": 900}, color_scheme=scheme, locale=lang
    )
    page = context.new_page()
    page.set_default_timeout(30_000)  # a ceiling for a loaded machine, not a speed check
    page.errors = []
    page.on(
        "console",
        lambda m: m.type == "error" and not m.text.startswith("Failed to load resource") and page.errors.append(m.text),
    )
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.on("response", lambda r: r.status >= 400 and page.errors.append(f"{r.status} {r.url}"))
    return context, page


def overflow(page) -> int:
    """How many pixels the page scrolls sideways (0 when nothing sticks out)."""
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


def sticking_out(page) -> list[str]:
    """The innermost elements reaching past the viewport's edges, for a failure message."""
    return page.evaluate("""() => {
        const w = document.documentElement.clientWidth, out = [];
        const clipped = el => { for (let a = el.parentElement; a && a !== document.body; a = a.parentElement)
            if (getComputedStyle(a).overflowX !== 'visible') return true; return false; };
        for (const el of document.body.querySelectorAll('*')) {
            if (clipped(el)) continue;  // inside its own scrolling box: cannot widen the page
            const b = el.getBoundingClientRect();
            if ((b.right > w + 0.5 || b.left < -0.5) && b.width > 0
                && ![...el.children].some(c => {
                    const r = c.getBoundingClientRect();
                    return r.right > w + 0.5 || r.left < -0.5;
                }))
                out.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '')
                    + (el.className && typeof el.className === 'string'
                       ? '.' + el.className.trim().split(/\\s+/).join('.') : '')
                    + (el.name ? '[name=' + el.name + ']' : '')
                    + ' ' + Math.round(b.left) + '..' + Math.round(b.right));
        }
        return out.slice(0, 8);
    }""")


def assert_fits(page, what: str) -> None:
    assert overflow(page) <= 0, (what, sticking_out(page))


def text_centre(page, selector: str) -> float:
    """The horizontal centre of an element's text (not of its box, which may be stretched)."""
    return page.locator(selector).first.evaluate(
        "el => { const r = document.createRange(); r.selectNodeContents(el); const b = r.getBoundingClientRect();"
        " return b.left + b.width / 2; }"
    )


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"layout-{name}.png"))


def check_shell(page, lang: str, width: int, name: str) -> None:
    html = page.locator("html")
    assert html.get_attribute("lang") == lang
    assert html.get_attribute("dir") == ("rtl" if lang == "ar" else "ltr")
    if width < 1000:  # the navigation is folded into the menu: closed first, then opened
        assert not page.locator(".site-nav").is_visible()
        page.click(".menu-toggle")
        assert page.locator(".menu-toggle").get_attribute("aria-expanded") == "true"
        shot(page, f"{name}-menu")
    links = page.locator(".site-nav .nav-links a")
    assert links.count() == NAV_LINKS
    items = [links.nth(i) for i in range(NAV_LINKS)] + [
        page.locator(s)
        for s in (
            "#live-status",
            "#theme-choice",
            ".language-switcher select",
            ".language-switcher button",
            ".whoami a",
            ".whoami button",
        )
    ]
    for item in items:
        assert item.is_visible(), item
        item.click(trial=True)  # actionable: visible, enabled, not covered by anything
    # The navigation starts on the reading side: the right in Arabic, the left in English.
    viewport = page.viewport_size["width"]
    for selector in (".brand", ".site-nav .nav-links a"):
        centre = text_centre(page, selector)
        assert (centre > viewport / 2) if lang == "ar" else (centre < viewport / 2), (selector, centre)
    assert_fits(page, "the shell")


@pytest.mark.parametrize(("lang", "width", "scheme"), COMBOS, ids=["-".join(map(str, combo)) for combo in COMBOS])
def test_pages_fit_and_navigation_works(browser, live_app, session_state, job_path, lang, width, scheme):
    context, page = open_context(browser, session_state, lang=lang, width=width, scheme=scheme)
    name = f"{lang}-{width}-{scheme}"
    try:
        page.goto(live_app.url + "/")
        page.wait_for_selector("table.queues")
        dark = page.evaluate("matchMedia('(prefers-color-scheme: dark)').matches")
        assert dark == (scheme == "dark")
        assert page.evaluate("getComputedStyle(document.documentElement).colorScheme") == scheme
        assert_fits(page, "overview")
        shot(page, f"{name}-overview")
        check_shell(page, lang, width, name)

        page.goto(live_app.url + QUEUE + "?state=failed")
        page.check("#bulk-form input[name=all_matching]")
        page.click("#bulk-form button.bulk-preview-button")
        page.wait_for_selector("#bulk-panel .bulk-preview")
        assert_fits(page, "queue page with a bulk preview")
        shot(page, f"{name}-bulk-preview")

        page.goto(live_app.url + job_path)
        page.wait_for_selector("pre.payload")
        assert_fits(page, "job page")
        for selector in ("h1 code", "pre.payload"):  # the id and the JSON read left to right
            assert page.locator(selector).first.evaluate("el => getComputedStyle(el).direction") == "ltr", selector
        shot(page, f"{name}-job")

        alert_page = ALERT_PAGES[COMBOS.index((lang, width, scheme)) % len(ALERT_PAGES)]
        page.goto(live_app.url + alert_page)
        page.wait_for_selector("main h1")
        assert_fits(page, alert_page)
        shot(page, f"{name}-{alert_page.strip('/').replace('/', '-')}")
        assert page.errors == [], page.errors
    finally:
        context.close()


def test_the_menu_opens_a_page_at_phone_width(browser, live_app, session_state):
    context, page = open_context(browser, session_state, width=390)
    try:
        page.goto(live_app.url + "/")
        page.click(".menu-toggle")
        page.click(".site-nav .nav-links a[href='/tasks/']")
        page.wait_for_url(live_app.url + "/tasks/")
        assert page.locator(".site-nav .nav-links a[aria-current=page]").get_attribute("href") == "/tasks/"
        page.keyboard.press("Escape")  # the menu starts closed on every page; Escape closes it too
        assert not page.locator(".site-nav").is_visible()
        assert page.errors == [], page.errors
    finally:
        context.close()


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_the_overview_fits_from_360_to_2560_pixels(browser, live_app, session_state, lang):
    context, page = open_context(browser, session_state, lang=lang, width=360)
    try:
        page.goto(live_app.url + "/")
        page.wait_for_selector("table.queues")
        # 1,030 px: just wide enough for the unfolded navigation, its tightest fit.
        for width in (360, 1030, 1280, 2560):
            page.set_viewport_size({"width": width, "height": 900})
            assert_fits(page, width)
            if width > 1024:  # unfolded: the links stay one row (the tools wrap under them)
                rows = page.eval_on_selector_all(
                    ".site-nav .nav-links a",
                    "links => new Set(links.map(a => Math.round(a.getBoundingClientRect().top))).size",
                )
                assert rows == 1, f"the navigation links take {rows} rows at {width} px"
            shot(page, f"{lang}-{width}-light-overview")
        assert page.errors == [], page.errors
    finally:
        context.close()


def test_the_theme_choice_is_remembered_and_applied_before_paint_and_the_favicon_loads(
    browser, live_app, session_state
):
    context, page = open_context(browser, session_state, scheme="light")
    background = "getComputedStyle(document.body).backgroundColor"
    try:
        page.goto(live_app.url + "/health/")
        icon = page.request.get(live_app.url + page.locator("link[rel=icon]").get_attribute("href"))
        assert icon.status == 200 and icon.headers["content-type"].startswith("image/svg+xml")
        light = page.evaluate(background)
        assert page.locator("#theme-choice").input_value() == "system"
        page.select_option("#theme-choice", "dark")
        assert page.evaluate(background) != light
        # A new page: the stored choice is on <html> before the body is parsed (the head
        # script is not deferred), so a dark page never flashes light.
        context.add_init_script(
            "new MutationObserver((records, observer) => { if (document.body) {"
            " window.__themeAtBody = document.documentElement.dataset.theme || 'none';"
            " observer.disconnect(); } }).observe(document, {childList: true, subtree: true});"
        )
        page.goto(live_app.url + "/schedulers/")
        assert page.evaluate("window.__themeAtBody") == "dark"
        assert page.locator("#theme-choice").input_value() == "dark"
        dark = page.evaluate(background)
        assert dark != light
        page.select_option("#theme-choice", "system")  # back to the system's (light) preference
        page.reload()
        assert page.evaluate("document.documentElement.hasAttribute('data-theme')") is False
        assert page.evaluate(background) == light
        assert page.errors == [], page.errors
    finally:
        context.close()


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_a_missing_page_is_friendly_with_the_shell(browser, live_app, session_state, lang):
    context, page = open_context(browser, session_state, lang=lang, width=390)
    try:
        response = page.goto(live_app.url + "/no/such/page")
        assert response.status == 404
        page.errors.clear()  # the 404 itself is the point here
        assert page.locator("header.topbar .menu-toggle").is_visible()
        assert page.locator("html").get_attribute("dir") == ("rtl" if lang == "ar" else "ltr")
        title = page.locator("main h1").inner_text()
        assert title == ("الصفحة غير موجودة" if lang == "ar" else "Page not found")
        page.click(".error-page .way-back a.button")
        page.wait_for_url(live_app.url + "/")
        assert_fits(page, "the shell")
        assert page.errors == [], page.errors
    finally:
        context.close()


PLOT_AXES = """() => {
    const el = [...document.querySelectorAll('.chart[data-chart]')].find(e => e.__qwPlot);
    const plot = el.__qwPlot, probe = document.createElement('span');
    probe.style.color = 'var(--qw-muted)';
    document.body.appendChild(probe);
    const muted = getComputedStyle(probe).color;
    probe.remove();
    return {side: plot.axes[1].side, stroke: plot.axes[0].stroke(plot, 0), muted};
}"""


@pytest.mark.parametrize("lang, side", [("en", 3), ("ar", 1)])  # uPlot: 3 = left, 1 = right
def test_charts_follow_the_theme_and_put_the_value_axis_at_the_start_of_the_line(
    browser, live_app, session_state, lang, side
):
    context, page = open_context(browser, session_state, lang=lang, scheme="dark")
    try:
        page.goto(live_app.url + QUEUE)
        page.wait_for_function("() => [...document.querySelectorAll('.chart[data-chart]')].some(e => e.__qwPlot)")
        dark = page.evaluate(PLOT_AXES)
        assert dark["side"] == side and dark["stroke"] == dark["muted"], dark
        page.select_option("#theme-choice", "light")  # the charts are drawn again in the light colours
        page.wait_for_function(f"() => ({PLOT_AXES})().stroke !== {dark['stroke']!r}")
        light = page.evaluate(PLOT_AXES)
        assert light["stroke"] == light["muted"] != dark["muted"] and light["side"] == side, light
        assert page.errors == [], page.errors
    finally:
        context.close()


async def add_gallery_flow(url: str) -> str:
    """A flow as the demo's producer adds one: a parent whose children get BullMQ's own ids (UUIDs),
    so the page lists long child keys (prefix:queue:uuid), and whose children complete with the
    demo's return values (long storage URLs), which the page shows beside each child."""
    opts = {"connection": url, "prefix": "bull"}
    thumbnails = Queue("e2e-thumbnails", opts)
    done_before = (await thumbnails.getJobCounts("completed"))["completed"]
    flow = FlowProducer(opts=opts)
    try:
        children = [{"name": "resize", "queueName": "e2e-thumbnails", "data": {"part": i}} for i in range(3)]
        added = await flow.add({"name": "publish-gallery", "queueName": "e2e-galleries", "children": children})
    finally:
        await flow.close()

    async def resize(job, token):
        return {"renditions": [f"s3://thumbs-prod/{size}/{job.id}.jpg" for size in (256, 512, 1024)]}

    worker = Worker("e2e-thumbnails", resize, {**opts, "autorun": False})
    runner = asyncio.ensure_future(worker.run())
    try:
        for _ in range(600):
            if (await thumbnails.getJobCounts("completed"))["completed"] >= done_before + 3:
                break
            await asyncio.sleep(0.1)
    finally:
        await thumbnails.close()
        await close_worker(worker, runner)
    return added["job"].id


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_a_flow_parents_job_page_fits_a_phone(browser, live_app, session_state, node_fixture_db, lang):
    # Its children are listed by their full job keys, and the page offers the actions of a job
    # waiting for its children: neither may widen the page.
    parent = run_async(add_gallery_flow, node_fixture_db.url)
    context, page = open_context(browser, session_state, lang=lang, width=390)
    try:
        page.goto(f"{live_app.url}/q/default/bull/e2e-galleries/jobs/{parent}")
        page.wait_for_selector("ul.children")
        assert page.locator("ul.children li").count() == 3
        assert page.locator("ul.children .child-outcome").count() == 3
        assert_fits(page, "a flow parent's job page")
        shot(page, f"{lang}-390-flow-parent")
        assert page.errors == [], page.errors
    finally:
        context.close()
