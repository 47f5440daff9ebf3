"""The markup the accessibility rules ask of the pages, checked on the server's HTML: a skip link
and labelled landmarks, no control inside another, no empty table header, the sorted column
named as sorted, retry confirmed without a danger button, queue settings with headings and
labels (and the pause asked for beside its sentence), long job ids kept whole for hover and
copy. tests/e2e/test_accessibility.py checks the rendered pages with axe-core and the keyboard."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
import redis
from django.contrib.auth.models import Group, User
from django.urls import reverse

from queues.keys import QueueRef
from tests.support.seeding import seed_failed

pytestmark = pytest.mark.django_db

Q = ("default", "bull", "markup")
QUEUE = QueueRef(*Q)
LONG_ID = "order-2026-12-04T13:46:00Z-" + "f" * 64


class Outline(HTMLParser):
    """What the checks need of a page: each element's tag, attributes and the tags it sits in,
    and each table header's text."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self, html: str):
        super().__init__()
        self.stack: list[str] = []
        self.elements: list[tuple[str, dict, tuple[str, ...]]] = []
        self.headers: list[str] = []
        self._header: list[str] | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs), tuple(self.stack)))
        if tag == "th":
            self._header = []
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in self.stack:
            while self.stack.pop() != tag:
                pass
        if tag == "th" and self._header is not None:
            self.headers.append("".join(self._header).strip())
            self._header = None

    def handle_data(self, data):
        if self._header is not None:
            self._header.append(data)

    def all(self, tag: str) -> list[tuple[dict, tuple[str, ...]]]:
        return [(attrs, inside) for t, attrs, inside in self.elements if t == tag]


def user_in(group: str, client) -> None:
    user = User.objects.create_user(f"user-{group}", password="pw")
    user.groups.add(Group.objects.get_or_create(name=group)[0])
    client.force_login(user)


@pytest.fixture
def failed(actions_redis):
    r = redis.Redis.from_url(actions_redis)
    r.hset(QUEUE.key("meta"), "opts.maxLenEvents", 10000)  # the queue exists
    ids = seed_failed(r, QUEUE, 3, reason=lambda i: f"KeyError: 'customer' {i}")
    r.hset(QUEUE.job_key(LONG_ID), mapping={**{k.decode(): v for k, v in r.hgetall(QUEUE.job_key(ids[0])).items()}})
    r.zadd(QUEUE.key("failed"), {LONG_ID: 2_000_000})
    return ids


def test_every_page_has_a_skip_link_to_main_and_labelled_navigation(client, failed):
    user_in("operator", client)
    for url in (
        reverse("overview"),
        reverse("queue", args=Q) + "?state=failed",
        reverse("queue_errors", args=Q),
        reverse("audit"),
        reverse("alert_rules"),
    ):
        page = Outline(client.get(url).content.decode())
        first_link = page.all("a")[0][0]
        assert first_link.get("class") == "skip-link" and first_link["href"] == "#main", url
        assert [attrs.get("id") for attrs, _ in page.all("main")] == ["main"], url
        navs = page.all("nav")
        unlabelled = [attrs for attrs, _ in navs if not attrs.get("aria-label") and attrs.get("role") != "tablist"]
        assert not unlabelled, url
        names = [attrs.get("aria-label") for attrs, _ in navs if attrs.get("role") != "tablist"]
        assert len(names) == len(set(names)), (url, names)  # each landmark told apart by its name


def test_no_control_inside_a_summary_and_no_empty_table_header(client, failed):
    user_in("operator", client)
    page = Outline(client.get(reverse("queue_errors", args=Q)).content.decode())
    assert page.all("summary")  # the stack traces are still behind a toggle
    for tag in ("a", "button", "input", "select", "textarea"):
        assert not [attrs for attrs, inside in page.all(tag) if "summary" in inside], tag
    assert page.headers and all(page.headers), page.headers


def test_the_sorted_column_is_named_as_sorted(client, failed):
    user_in("operator", client)
    page = Outline(client.get(reverse("overview"), {"sort": "name", "dir": "desc"}).content.decode())
    sorted_headers = [attrs["aria-sort"] for attrs, _ in page.all("th") if "aria-sort" in attrs]
    assert sorted_headers == ["descending"]
    page = Outline(client.get(reverse("overview")).content.decode())  # by connection: no column
    assert not [attrs for attrs, _ in page.all("th") if "aria-sort" in attrs]
    timings = client.get(reverse("queue_timings", args=Q), {"sort": "failed", "dir": "asc"})
    marked = [attrs["aria-sort"] for attrs, _ in Outline(timings.content.decode()).all("th") if "aria-sort" in attrs]
    assert marked == ["ascending"]


def test_a_retry_is_confirmed_with_a_primary_button_a_discard_with_a_danger_one(client, failed):
    user_in("operator", client)
    for action, style in (("retry", "primary"), ("redrive", "primary"), ("discard", "danger")):
        html = client.post(
            reverse("bulk_preview", args=Q), {"action": action, "state": "failed", "scope": "matching"}
        ).content.decode()
        confirm = [attrs for attrs, inside in Outline(html).all("button") if "form" in inside]
        assert [b.get("class") for b in confirm] == [style], action


def test_queue_settings_have_headings_labelled_fields_and_pause_beside_its_sentence(client, failed):
    user_in("admin", client)
    html = client.get(reverse("queue_settings", args=Q)).content.decode()
    page = Outline(html)
    for words in ("Global concurrency", "Global rate limit", "Drain", "Obliterate"):
        assert f">{words}</h2>" in html, words
    # Every field a person fills is inside its label (no field named only for screen readers).
    fields = [
        (attrs, inside)
        for tag in ("input", "textarea", "select")
        for attrs, inside in page.all(tag)
        if attrs.get("type") not in ("hidden", "submit") and "main" in inside
    ]
    assert fields and all("label" in inside for _, inside in fields), [a for a, i in fields if "label" not in i]
    # Not paused: the sentence that says to pause comes with the pause button, with its reason.
    pause_first = html[html.index('class="muted pause-first"') :]
    form = pause_first[: pause_first.index("</form>")]
    assert 'class="queue-pause"' in form and 'name="reason"' in form


def test_a_long_job_id_is_cut_by_the_page_but_kept_whole_for_hover_and_copy(client, failed):
    user_in("operator", client)
    html = client.get(reverse("queue", args=Q), {"state": "failed"}).content.decode()
    assert f'<code class="qw-id" title="{LONG_ID}" dir="ltr">{LONG_ID}</code>' in html
