"""Fragment or full page (dashboard/web/htmx.py): an htmx swap gets the fragment, htmx's history
restore (a cache miss on back/forward) and a plain request get the whole page, and every
answer says it varies on the htmx headers, so no cache hands one to the other."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse
from django.utils.cache import has_vary_header

pytestmark = pytest.mark.django_db

PLAIN: dict = {}
SWAP = {"HTTP_HX_REQUEST": "true"}
HISTORY_RESTORE = {"HTTP_HX_REQUEST": "true", "HTTP_HX_HISTORY_RESTORE_REQUEST": "true"}

# (URL name, the fragment's marker); the fragment is the partial the page itself includes.
PAGES = [("overview", 'id="queue-tables"'), ("queue", 'id="job-list"')]


@pytest.fixture
def urls(prefixed_queues):
    orders = prefixed_queues.queue("orders")
    prefixed_queues.client.hset(orders.key("meta"), "opts.maxLenEvents", 10000)  # a queue, found by discovery
    return {
        "overview": reverse("overview"),
        "queue": reverse("queue", args=prefixed_queues.args("orders")),
        "discard": reverse("job_action", args=[*prefixed_queues.args("orders"), "discard", "1"]),
    }


def is_full_page(html: str) -> bool:
    return html.lstrip().lower().startswith("<!doctype html>") and 'class="topbar"' in html


def assert_varies_on_htmx(response) -> None:
    assert has_vary_header(response, "HX-Request") and has_vary_header(response, "HX-History-Restore-Request")


@pytest.mark.parametrize(("name", "marker"), PAGES)
def test_a_swap_gets_the_fragment(logged_in, urls, name, marker):
    response = logged_in.get(urls[name], **SWAP)
    html = response.content.decode()
    assert response.status_code == 200 and marker in html and not is_full_page(html)
    assert_varies_on_htmx(response)


@pytest.mark.parametrize("headers", [HISTORY_RESTORE, PLAIN], ids=["history-restore", "plain"])
@pytest.mark.parametrize(("name", "marker"), PAGES)
def test_a_history_restore_and_a_plain_request_get_the_whole_page(logged_in, urls, name, marker, headers):
    response = logged_in.get(urls[name], **headers)
    html = response.content.decode()
    assert response.status_code == 200 and marker in html and is_full_page(html)
    assert_varies_on_htmx(response)


@pytest.fixture
def operator(client):
    user = User.objects.create_user("op", password="pw")
    user.groups.add(Group.objects.get_or_create(name="operator")[0])
    client.force_login(user)
    return client


def test_an_action_result_is_a_fragment_for_htmx_and_a_page_otherwise(operator, urls):
    url = urls["discard"]  # no reason: refused
    swapped = operator.post(url, {"reason": ""}, **SWAP)
    assert swapped.status_code == 200 and not is_full_page(swapped.content.decode())  # 200: htmx swaps it in
    page = operator.post(url, {"reason": ""})
    assert page.status_code == 400 and is_full_page(page.content.decode())
    for response in (swapped, page):
        assert_varies_on_htmx(response)
