"""The queue page, jobs first: the tab it opens on, one filter shared by the list and "all
matching", the select-all box, per-row actions through the job actions' own endpoints (role,
CSRF, audit, reasons), and the workers and charts after the list."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse

from dashboard.audit.models import AuditEntry
from dashboard.browse.params import opening_state
from tests.support.seeding import seed_failed

pytestmark = pytest.mark.django_db


def seed_queue(p, name: str, *, failed: int = 0, waiting: int = 0, completed: int = 0, job_name=lambda i: "job"):
    """A queue under the test's prefix with jobs written in BullMQ's layout."""
    q = p.queue(name)
    r = p.client
    r.hset(q.key("meta"), mapping={"opts.maxLenEvents": 10000})
    if failed:
        seed_failed(r, q, failed, name=job_name, data=lambda i: {"customer": {"id": f"cus_{i}"}, "i": i})
    for i in range(waiting):
        job_id = f"w{i}"
        r.hset(q.job_key(job_id), mapping={"name": job_name(i), "data": "{}", "opts": "{}", "timestamp": 1000 + i})
        r.lpush(q.key("wait"), job_id)
    for i in range(completed):
        job_id = f"c{i}"
        r.hset(
            q.job_key(job_id),
            mapping={"name": "done", "data": "{}", "opts": "{}", "timestamp": 1000, "finishedOn": 2000 + i},
        )
        r.zadd(q.key("completed"), {job_id: 2000 + i})
    return q


@pytest.fixture
def operator(client):
    user = User.objects.create_user("op", password="pw")
    user.groups.add(Group.objects.get_or_create(name="operator")[0])
    client.force_login(user)
    return client


def opened_state(html: str) -> str:
    return html.split('<section id="job-list" data-state="', 1)[1].split('"', 1)[0]


def test_the_opening_tab_is_failed_when_there_are_failures_else_the_busiest_else_waiting():
    assert opening_state({"waiting": 50, "failed": 1}) == "failed"
    assert opening_state({"waiting": 2, "completed": 9, "failed": 0}) == "completed"
    assert opening_state({"waiting": 1, "paused": 5, "delayed": 4}) == "waiting"  # legacy paused counts as waiting
    assert opening_state({"active": 3, "delayed": 3}) == "active"  # a tie: the first tab
    assert opening_state({}) == "waiting"


def test_queue_page_opens_on_failed_then_on_the_busiest_state(logged_in, prefixed_queues):
    p = prefixed_queues
    seed_queue(p, "mixed", failed=2, waiting=5)
    seed_queue(p, "quiet", waiting=1, completed=3)
    seed_queue(p, "empty")
    assert opened_state(logged_in.get(reverse("queue", args=p.args("mixed"))).content.decode()) == "failed"
    assert opened_state(logged_in.get(reverse("queue", args=p.args("quiet"))).content.decode()) == "completed"
    assert opened_state(logged_in.get(reverse("queue", args=p.args("empty"))).content.decode()) == "waiting"
    # A tab named in the URL is kept.
    url = reverse("queue", args=p.args("mixed")) + "?state=waiting"
    assert opened_state(logged_in.get(url).content.decode()) == "waiting"


def test_one_filter_the_list_and_all_matching_share_it(operator, prefixed_queues):
    p = prefixed_queues
    seed_queue(p, "orders", failed=6, job_name=lambda i: "SendOrder" if i % 2 else "bill")
    url = reverse("queue", args=p.args("orders"))
    html = operator.get(url, {"state": "failed", "name": "order"}).content.decode()
    # One job-name field on the page: the list's filter; the bulk form carries it along.
    assert html.count('name="name"') == 1
    assert "job name (exact)" not in html and 'name="reason_contains"' not in html
    assert '<input type="hidden" name="name_contains" value="order">' in html
    assert 'name="all_matching"' in html and "all Failed jobs named like" in html.replace("failed", "Failed")
    assert 'class="qw-select-page"' in html
    # "All matching" selects what the list shows: names containing the text, any case.
    preview = operator.post(
        reverse("bulk_preview", args=p.args("orders")),
        {"state": "failed", "name_contains": "order", "all_matching": "yes", "scope": "selected", "action": "retry"},
    )
    body = preview.content.decode()
    assert preview.status_code == 200 and 'data-count="3"' in body, body[:2000]
    assert "whose name contains “order”" in body
    # Ticked jobs are still previewed alone when the box is not ticked.
    preview = operator.post(
        reverse("bulk_preview", args=p.args("orders")),
        {"state": "failed", "ids": ["1"], "scope": "selected", "action": "retry"},
    )
    assert 'data-count="1"' in preview.content.decode()


def test_workers_and_charts_come_after_the_list_and_actions_are_one_bar(operator, prefixed_queues):
    p = prefixed_queues
    seed_queue(p, "orders", failed=1)
    html = operator.get(reverse("queue", args=p.args("orders"))).content.decode()
    assert html.index('id="job-list"') < html.index('id="queue-history-box"')
    assert html.index('id="job-list"') < html.index('id="queue-workers"')
    assert html.index('class="queue-actions qw-action-bar"') < html.index('id="job-list"')
    assert html.count('class="queue-actions qw-action-bar"') == 1


def test_row_actions_retry_and_discard_through_the_job_actions(operator, prefixed_queues):
    p = prefixed_queues
    q = seed_queue(p, "orders", failed=3)
    html = operator.get(reverse("queue", args=p.args("orders")), {"state": "failed"}).content.decode()
    retry_url = reverse("job_action", args=[*p.args("orders"), "retry", "2"])
    discard_url = reverse("job_action", args=[*p.args("orders"), "discard", "3"])
    assert f'action="{retry_url}"' in html and f'action="{discard_url}"' in html
    assert html.count('class="row-retry"') == 3 and html.count("row-discard") >= 3
    assert 'class="row-open"' in html

    response = operator.post(retry_url, {"shown_on": "queue-list"}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200 and 'id="job-actions"' not in body  # the message, not the job page's parts
    assert p.client.zscore(q.key("failed"), "2") is None and p.client.lrange(q.key("wait"), 0, -1) == [b"2"]
    assert AuditEntry.objects.filter(action="job.retry", job_ids=["2"]).exists()

    # Discard takes a reason, as on the job page.
    refused = operator.post(discard_url, {"shown_on": "queue-list"}, HTTP_HX_REQUEST="true")
    assert "Say why" in refused.content.decode() and p.client.exists(q.job_key("3"))
    operator.post(discard_url, {"shown_on": "queue-list", "reason": "duplicate"}, HTTP_HX_REQUEST="true")
    assert not p.client.exists(q.job_key("3"))
    assert AuditEntry.objects.get(action="job.discard").reason == "duplicate"


def test_viewers_get_no_row_actions_and_cannot_post_them(logged_in, prefixed_queues):
    p = prefixed_queues
    q = seed_queue(p, "orders", failed=1)
    html = logged_in.get(reverse("queue", args=p.args("orders"))).content.decode()
    assert 'class="can-operate"' not in html  # row actions (also in live fragments) are hidden by CSS
    response = logged_in.post(reverse("job_action", args=[*p.args("orders"), "retry", "1"]), HTTP_HX_REQUEST="true")
    assert response.status_code == 403 and p.client.zscore(q.key("failed"), "1") is not None


def test_phone_cards_carry_labels_and_the_full_failure_reason(logged_in, prefixed_queues):
    p = prefixed_queues
    q = seed_queue(p, "orders")
    seed_failed(p.client, q, 1, reason=lambda i: "KeyError: 'customer' " + "x" * 150)
    html = logged_in.get(reverse("queue", args=p.args("orders"))).content.decode()
    assert 'class="jobs qw-job-cards"' in html
    assert 'data-label="Failure reason">KeyError: &#x27;customer&#x27; ' + "x" * 150 + "</td>" in html
    assert json.dumps("queue-page.css")[1:-1] in html
