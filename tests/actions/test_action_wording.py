"""What the action pages say: a bulk retry that resets the counters is named so in the dialog
that confirms it, the menus say how the two retries differ, a message about a new job links to
it, and one navigation item is current."""

from __future__ import annotations

import pytest
import redis
from django.contrib.auth.models import Group, User
from django.urls import reverse

from queues.keys import QueueRef
from tests.support.seeding import seed_failed

pytestmark = pytest.mark.django_db

Q = ("default", "bull", "wording")
QUEUE = QueueRef(*Q)


@pytest.fixture
def operator_client(client):
    user = User.objects.create_user("op", password="pw")
    user.groups.add(Group.objects.get_or_create(name="operator")[0])
    client.force_login(user)
    return client


@pytest.fixture
def failed(actions_redis):
    r = redis.Redis.from_url(actions_redis)
    r.hset(QUEUE.key("meta"), "opts.maxLenEvents", 10000)  # the queue exists
    return seed_failed(r, QUEUE, 18, reason=lambda i: f"timeout after {i} ms")


def test_a_retry_with_counters_reset_is_named_so_where_it_is_confirmed(operator_client, failed):
    html = operator_client.post(
        reverse("bulk_preview", args=Q),
        {"action": "redrive", "state": "failed", "scope": "matching"},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    assert "<h2>Retry 18 jobs, counters reset?</h2>" in html
    assert "Confirm: retry 18 jobs, counters reset</button>" in html
    assert "Redrive" not in html and "redrive 18" not in html
    plain = operator_client.post(
        reverse("bulk_preview", args=Q), {"action": "retry", "state": "failed", "scope": "matching"}
    ).content.decode()
    assert "<h2>Retry 18 jobs?</h2>" in plain and "Confirm: retry 18 jobs</button>" in plain


def test_the_menus_say_how_the_two_retries_differ(operator_client, failed):
    for url in (reverse("queue", args=Q) + "?state=failed", reverse("queue_errors", args=Q)):
        html = operator_client.get(url).content.decode()
        assert "retry, counters reset</option>" in html
        assert 'class="muted retry-choices-hint"' in html and "always resets them" in html, url


def test_a_message_about_an_added_job_links_to_it(operator_client, failed):
    added = operator_client.post(
        reverse("queue_action", args=[*Q, "add"]), {"name": "send", "data": "{}"}, HTTP_HX_REQUEST="true"
    ).content.decode()
    new_id = added.split("Job ", 1)[1].split(" ", 1)[0]
    assert f'class="new-job" href="{reverse("job", args=[*Q, new_id])}"' in added, added
    copied = operator_client.post(
        reverse("job_action", args=[*Q, "duplicate", failed[0]]), HTTP_HX_REQUEST="true"
    ).content.decode()
    copy_id = copied.split("duplicated as job ", 1)[1].split(".", 1)[0]
    assert copy_id != failed[0]
    assert f'class="new-job" href="{reverse("job", args=[*Q, copy_id])}"' in copied, copied
    page = operator_client.post(reverse("job_action", args=[*Q, "duplicate", failed[1]])).content.decode()
    assert 'class="new-job" href="' in page  # the page a form without htmx gets, too


@pytest.mark.parametrize(
    "url, current",
    [
        (reverse("schedulers"), "/schedulers/"),
        (reverse("queue_schedulers", args=Q), "/"),
        (reverse("tasks"), "/tasks/"),
    ],
)
def test_one_navigation_item_is_current(operator_client, failed, url, current):
    html = operator_client.get(url).content.decode()
    nav = html.split('class="nav-links"', 1)[1].split("</nav>", 1)[0]
    assert nav.count('aria-current="page"') == 1, url
    assert f'href="{current}" aria-current="page"' in nav
