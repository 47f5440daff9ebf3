"""Finding a job: by id across every queue the user sees (one existence check per queue,
bounded, and the page says how many were checked), and by a field of its data within one state
of a queue (bounded steps that say "examined N of M" and continue where they stopped)."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from queues.data_search import BadQuery, DataQuery
from tests.support.seeding import seed_failed

pytestmark = pytest.mark.django_db


def text(html: str) -> str:
    """The words of a page (numbers are wrapped in <data> elements)."""
    return re.sub(r"<[^>]+>", "", html)


def make_queue(p, name: str, *, failed: int = 0, data=None):
    q = p.queue(name)
    p.client.hset(q.key("meta"), mapping={"opts.maxLenEvents": 10000})
    if failed:
        seed_failed(p.client, q, failed, data=data or (lambda i: {"customer": {"id": f"cus_{i}"}, "n": i}))
    return q


# --- the query ----------------------------------------------------------------------------


def test_a_data_query_is_a_path_and_a_value():
    q = DataQuery.parse("customer.id = cus_57e8")
    assert q.path == ("customer", "id") and q.value == "cus_57e8"
    assert q.matches({"customer": {"id": "cus_57e8"}}) and not q.matches({"customer": {"id": "cus_57e9"}})
    assert not q.matches({"customer": "cus_57e8"}) and not q.matches([1]) and not q.matches(None)
    assert DataQuery.parse("items.1.sku=B").matches({"items": [{"sku": "A"}, {"sku": "B"}]})
    assert not DataQuery.parse("items.² = B").matches({"items": ["A", "B", "C"]})  # no crash, no position
    assert not DataQuery.parse("items.٢ = C").matches({"items": ["A", "B", "C"]})
    assert DataQuery.parse("n = 42").matches({"n": 42}) and DataQuery.parse("n = 4.5").matches({"n": 4.5})
    assert DataQuery.parse("ok = true").matches({"ok": True}) and not DataQuery.parse("ok = 1").matches({"ok": True})
    assert DataQuery.parse("x = null").matches({"x": None})
    assert DataQuery.parse('title = "a = b"').matches({"title": "a = b"})
    for bad in ("cus_57e8", "= x", "a..b = 1", "a b = 1", "x" * 600 + " = 1"):
        with pytest.raises(BadQuery):
            DataQuery.parse(bad)


# --- by id --------------------------------------------------------------------------------


def test_find_by_id_opens_the_one_job_found_or_lists_every_queue_holding_it(logged_in, prefixed_queues):
    p = prefixed_queues
    make_queue(p, "orders", failed=3)
    make_queue(p, "emails", failed=1)
    make_queue(p, "empty")
    response = logged_in.get(reverse("find"), {"find": "3"})
    assert response.status_code == 302 and response["Location"] == reverse("job", args=[*p.args("orders"), "3"])

    html = logged_in.get(reverse("find"), {"find": "1"}).content.decode()
    assert 'data-found="2" data-checked="3"' in html
    assert "Checked all 3 queues (one existence check each)." in text(html)
    assert (
        reverse("job", args=[*p.args("orders"), "1"]) in html and reverse("job", args=[*p.args("emails"), "1"]) in html
    )

    html = logged_in.get(reverse("find"), {"find": "nope"}).content.decode()
    assert 'data-found="0"' in html and "No job with this id in the queues checked." in html


def test_find_by_id_is_bounded_and_says_so(logged_in, prefixed_queues, settings):
    p = prefixed_queues
    for name in ("a", "b", "c", "d"):
        make_queue(p, name, failed=1)
    settings.QUEUEWATCH_FIND_MAX_QUEUES = 2
    html = logged_in.get(reverse("find"), {"find": "1", "list": "1"}).content.decode()
    assert 'data-checked="2"' in html and "Checked the first 2 of your 4 queues" in text(html)
    api = logged_in.get(reverse("api_find"), {"id": "1"}).json()
    assert api["queues_checked"] == 2 and api["queues"] == 4 and api["bound_hit"] is True
    assert len(api["found"]) == 2


def test_find_by_id_looks_only_in_the_queues_a_scoped_user_sees(client, prefixed_queues):
    from dashboard.accounts.models import QueueGrant  # scoped grants: docs/auth.md

    p = prefixed_queues
    make_queue(p, "team-a", failed=1)
    make_queue(p, "team-b", failed=1)
    user = User.objects.create_user("scoped", password="pw")
    QueueGrant.objects.create(user=user, connection="default", queue_glob="team-a", role="viewer")
    client.force_login(user)
    api = client.get(reverse("api_find"), {"id": "1"}).json()
    assert [f["queue"] for f in api["found"]] == ["team-a"] and api["queues"] == 1


def test_the_header_has_the_find_box_on_every_page(logged_in, prefixed_queues):
    html = logged_in.get(reverse("overview")).content.decode()
    assert f'<form class="qw-find-box" method="get" action="{reverse("find")}" role="search"' in html


def test_a_data_query_typed_in_the_header_offers_the_queues_to_search(logged_in, prefixed_queues):
    p = prefixed_queues
    make_queue(p, "orders", failed=1)
    html = logged_in.get(reverse("find"), {"find": "customer.id = cus_0"}).content.decode()
    link = reverse("queue_find", args=p.args("orders")) + "?where=customer.id%20%3D%20cus_0"
    assert link in html


# --- by data ------------------------------------------------------------------------------


def test_find_by_data_within_a_state(logged_in, prefixed_queues):
    p = prefixed_queues
    make_queue(p, "orders", failed=40)
    url = reverse("queue_find", args=p.args("orders"))
    html = logged_in.get(url, {"state": "failed", "where": "customer.id = cus_17"}).content.decode()
    assert 'data-examined="40" data-in-state="40" data-matches="1"' in html
    assert "Examined all 40 failed jobs." in text(html)
    assert reverse("job", args=[*p.args("orders"), "18"]) in html
    api = logged_in.get(reverse("api_queue_find", args=p.args("orders")), {"state": "failed", "where": "n = 3"}).json()
    assert [j["id"] for j in api["jobs"]] == ["4"] and api["complete"] is True and api["examined"] == 40


def test_find_by_data_is_bounded_and_continues_where_it_stopped(logged_in, prefixed_queues, settings):
    p = prefixed_queues
    make_queue(p, "orders", failed=25)
    settings.QUEUEWATCH_SCAN_SAMPLE = 10
    api_url = reverse("api_queue_find", args=p.args("orders"))
    first = logged_in.get(api_url, {"state": "failed", "where": "customer.id = cus_3"}).json()
    # Failed jobs are listed newest first: ids 25..16 are the first ten examined.
    assert first["examined"] == 10 and first["in_state"] == 25 and first["next_offset"] == 10 and first["jobs"] == []
    second = logged_in.get(api_url, {"state": "failed", "where": "customer.id = cus_3", "offset": 10}).json()
    assert second["start"] == 10 and second["examined"] == 20 and second["jobs"] == []
    third = logged_in.get(api_url, {"state": "failed", "where": "customer.id = cus_3", "offset": 20}).json()
    assert [j["id"] for j in third["jobs"]] == ["4"] and third["complete"] is True and third["next_offset"] is None

    html = logged_in.get(
        reverse("queue_find", args=p.args("orders")), {"state": "failed", "where": "customer.id = cus_3"}
    ).content.decode()
    assert "Examined 10 of 25 failed jobs." in text(html)
    assert "offset=10" in html and 'class="button search-next"' in html


def test_find_by_data_never_matches_a_redacted_secret(logged_in, prefixed_queues):
    p = prefixed_queues
    make_queue(p, "orders", failed=2, data=lambda i: {"password": "hunter2", "user": f"u{i}"})
    api_url = reverse("api_queue_find", args=p.args("orders"))
    assert logged_in.get(api_url, {"state": "failed", "where": "password = hunter2"}).json()["jobs"] == []
    assert len(logged_in.get(api_url, {"state": "failed", "where": "user = u1"}).json()["jobs"]) == 1


def test_find_by_data_skips_data_over_the_payload_cap(logged_in, prefixed_queues, settings):
    p = prefixed_queues
    q = make_queue(p, "orders", failed=2)
    p.client.hset(q.job_key("1"), "data", json.dumps({"customer": {"id": "cus_0"}, "blob": "x" * 5000}))
    settings.QUEUEWATCH_PAYLOAD_CAP = 2000
    api = logged_in.get(
        reverse("api_queue_find", args=p.args("orders")), {"state": "failed", "where": "customer.id = cus_0"}
    ).json()
    assert api["jobs"] == [] and api["too_large"] == 1


def test_a_bad_data_query_says_what_to_type(logged_in, prefixed_queues):
    p = prefixed_queues
    make_queue(p, "orders", failed=1)
    html = logged_in.get(reverse("queue_find", args=p.args("orders")), {"where": "cus_57e8"}).content.decode()
    assert 'class="banner error bad-query"' in html and "customer.id = cus_57e8" in html
    api = logged_in.get(reverse("api_queue_find", args=p.args("orders")), {"where": "cus_57e8"})
    assert api.status_code == 400


def test_find_pages_need_a_login(client, prefixed_queues):
    make_queue(prefixed_queues, "orders")
    assert client.get(reverse("find"), {"find": "1"}).status_code == 302
    assert client.get(reverse("api_find"), {"id": "1"}).status_code == 401


def test_search_on_asks_for_each_next_step_until_the_end(logged_in, prefixed_queues, settings):
    p = prefixed_queues
    make_queue(p, "orders", failed=25)
    settings.QUEUEWATCH_SCAN_SAMPLE = 10
    url = reverse("queue_find", args=p.args("orders"))
    query = {"state": "failed", "where": "customer.id = cus_3"}
    page = logged_in.get(url, query).content.decode()
    assert 'class="search-on"' in page and "offset=10&amp;on=1" in page
    # Each step is a fragment: its matches, the progress out of band, and the request for the next.
    step = logged_in.get(url, {**query, "offset": 10, "on": "1"}, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in step and 'id="search-progress"' in step and 'hx-swap-oob="true"' in step
    assert 'data-examined="20"' in step and 'hx-trigger="load delay:100ms"' in step
    assert "offset=20&amp;on=1&amp;shown=0" in step and "Stop" in step
    last = logged_in.get(url, {**query, "offset": 20, "on": "1"}, HTTP_HX_REQUEST="true").content.decode()
    assert 'data-job-id="4"' in last and "Search finished." in last and 'hx-trigger="load' not in last


def test_search_on_pauses_after_enough_matches(logged_in, prefixed_queues, settings, monkeypatch):
    from dashboard.browse import find_views

    p = prefixed_queues
    make_queue(p, "orders", failed=25, data=lambda i: {"kind": "same"})
    settings.QUEUEWATCH_SCAN_SAMPLE = 10
    monkeypatch.setattr(find_views, "MAX_SHOWN_ON", 15)
    url = reverse("queue_find", args=p.args("orders"))
    step = logged_in.get(
        url, {"state": "failed", "where": "kind = same", "offset": 10, "on": "1", "shown": "10"}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert "Paused after" in text(step) and "20 matches" in text(step) and 'hx-trigger="load' not in step
