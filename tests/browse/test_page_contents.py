"""Page contents over queues written by real Node BullMQ: the overview a page at a time, the
queue page (job list first, actions only when they apply, a page past the end), raw values
for the browser to format, collapsible JSON and copy buttons."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from dashboard.browse import views

pytestmark = [pytest.mark.node, pytest.mark.django_db]

ROW = re.compile(r'<tr id="row-')


@pytest.fixture
def operator_logged_in(client, django_user_model):
    from django.contrib.auth.models import Group

    operator = django_user_model.objects.create_user("op", password="pw")
    operator.groups.add(Group.objects.get_or_create(name="operator")[0])
    client.force_login(operator)
    return client


def test_overview_shows_a_page_of_queues_with_a_pager(logged_in, node_queues, monkeypatch):
    monkeypatch.setattr(views, "OVERVIEW_PAGE_SIZE", 3)
    every = len(ROW.findall(logged_in.get(reverse("overview"), {"page": 1, "sort": "failed"}).content.decode()))
    assert every == 3
    html = logged_in.get(reverse("overview"), {"sort": "name"}).content.decode()
    assert len(ROW.findall(html)) == 3
    assert html.index(">dedup</a>") < html.index(">flows</a>")  # the first three by name
    assert ">mixed</a>" not in html and 'class="pager overview-pager"' in html
    # Past the end: the last page, never "Page 99 of 3".
    last = logged_in.get(reverse("overview"), {"sort": "name", "page": 99}).content.decode()
    pages = re.search(
        r'Page <data class="qw-num" value="(\d+)">\d+</data> of <data class="qw-num" value="(\d+)">', last
    )
    assert pages and pages.group(1) == pages.group(2)
    assert 1 <= len(ROW.findall(last)) <= 3
    # Sorting and the filter still see every queue, not only the page.
    html = logged_in.get(reverse("overview"), {"sort": "failed", "dir": "desc"}).content.decode()
    assert ">mixed</a>" in html  # the most failed jobs: first page
    html = logged_in.get(reverse("overview"), {"q": "stack"}).content.decode()
    assert ">stacky</a>" in html and len(ROW.findall(html)) == 1


def test_overview_counts_are_raw_values_and_zeros_are_not_links(logged_in, node_queues):
    html = logged_in.get(reverse("overview"), {"q": "paused-q"}).content.decode()
    row = html[html.index('<tr id="row-') :]
    row = row[: row.index("</tr>")]
    assert re.search(r'<a href="[^"]*\?state=waiting"><data class="qw-num qw-compact" value="\d+">', row)
    assert '<td class="num state-failed"><span class="zero">0</span></td>' in row


def test_queue_page_puts_the_job_list_first_and_clamps_the_page(logged_in, node_queues):
    url = reverse("queue", args=["default", "bull", "mixed"])
    html = logged_in.get(url, {"state": "failed"}).content.decode()
    assert html.index('id="job-list"') < html.index('class="qw-rates-box"') < html.index('id="queue-charts"')
    assert '<span class="qw-unit">/min</span>' in html  # every rate window has its unit
    assert 'class="qw-copy" data-copy="mixed"' in html
    far = logged_in.get(url, {"state": "failed", "page": 99999}).content.decode()
    pages = re.search(r'Page <data class="qw-num" value="(\d+)">\d+</data> of <data class="qw-num" value="(\d+)">', far)
    assert pages and pages.group(1) == pages.group(2)
    assert "data-job-id=" in far  # the last page's jobs, not an empty page


def test_queue_actions_only_when_something_matches(operator_logged_in, node_queues):
    # Rendered either way and hidden while nothing matches, so the live counts can show them
    # (tests/e2e/test_live.py); the forms of a state with jobs are not hidden.
    def hidden(html: str, marker: str) -> bool:
        tag = re.search(
            r'<(?:form|span)[^>]*data-qw-shown-when="[^"]*"[^>]*>(?:(?!</(?:form|span)>).)*' + re.escape(marker),
            html,
            re.S,
        )
        return " hidden>" in tag.group(0).split(">", 1)[0] + ">"

    html = operator_logged_in.get(reverse("queue", args=["default", "bull", "mixed"])).content.decode()
    assert not hidden(html, "bulk-retry-failed") and not hidden(html, "Failed jobs by error")
    html = operator_logged_in.get(reverse("queue", args=["default", "bull", "flows"])).content.decode()
    assert hidden(html, "bulk-retry-failed") and hidden(html, "bulk-promote-delayed")
    assert hidden(html, "Failed jobs by error")
    links = re.search(r'<nav class="queue-links"[^>]*>(.*?)</nav>', html, re.S).group(1)
    assert "·" not in links  # separators come from CSS, so none is left over for an absent link
    assert 'value="redrive"' not in html  # redrive is for dead-letter queues only


def test_job_page_json_collapses_and_times_are_instants(logged_in, node_queues):
    failed = logged_in.get(reverse("queue", args=["default", "bull", "mixed"]), {"state": "failed"}).content.decode()
    job_id = re.search(r'data-job-id="([^"]+)"', failed).group(1)
    html = logged_in.get(reverse("job", args=["default", "bull", "mixed", job_id])).content.decode()
    assert re.search(r'<details class="qw-json" id="json-data" data-qw-remember open>', html)
    assert re.search(r'<details class="qw-json" id="json-opts" data-qw-remember>', html)  # options start closed
    assert re.search(r'<time datetime="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z" data-qw-time="s" dir="ltr">', html)
    assert f'data-copy="{job_id}"' in html
