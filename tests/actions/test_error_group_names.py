"""Error groups keep what names the error (a quoted key, the exception class from the stack
trace) while values that vary still merge; group ids an older version gave still select."""

from __future__ import annotations

import hashlib
import json

import pytest
import redis
from django.contrib.auth.models import Group, User
from django.urls import reverse

from queues.error_groups import fingerprint, headline, matches_fingerprint, normalize
from queues.keys import QueueRef
from tests.support.seeding import seed_failed

Q = ("default", "bull", "names")
QUEUE = QueueRef("default", "bull", "names")


@pytest.mark.parametrize(
    "reason,normal",
    [
        ("'customer'", "'customer'"),
        ("KeyError: 'order_id'", "KeyError: 'order_id'"),
        ('relation "invoices" does not exist', 'relation "invoices" does not exist'),
        ("ValidationError: name: Path `name` is required.", "ValidationError: name: Path `name` is required."),
        ("'cus_8f3K2'", "'<value>'"),
        ('payment 4711 failed: "insufficient funds"', 'payment <n> failed: "<value>"'),
        ("template 'newsletter-2019' is retired", "template '<value>' is retired"),
        ("no user 'bob@example.com'", "no user '<value>'"),
    ],
)
def test_quoted_names_are_kept_and_quoted_values_are_not(reason, normal):
    assert normalize(reason) == normal


def test_different_keys_are_different_groups_and_values_still_merge():
    assert fingerprint("'customer'") != fingerprint("'order'")
    assert fingerprint("'cus_8f3K2'") == fingerprint("'cus_77aa'")
    assert fingerprint("KeyError: '8f0c2a8e-1b2c-4d3e-9f00-0123456789ab'") == fingerprint("KeyError: 'ab12cd34ef'")


def test_a_group_is_named_by_its_stack_trace_when_that_says_more():
    trace = "Traceback (most recent call last):\n  File \"p.py\", line 76, in run\nKeyError: 'customer'\n"
    assert headline("'customer'", trace) == "KeyError: 'customer'"
    assert headline("", trace) == "KeyError: 'customer'"  # no reason at all: the stack's last line
    assert headline("boom 7", "Error: boom 7\n    at work (w.js:1:1)") == "boom <n>"  # a JS frame says less


def test_an_id_an_older_version_gave_still_selects_its_group_and_only_it():
    legacy = hashlib.sha1(b"'<value>'").hexdigest()[:12]  # what "'customer'" was grouped under
    assert matches_fingerprint("'customer'", legacy)
    assert matches_fingerprint("'customer'", fingerprint("'customer'"))
    assert not matches_fingerprint("'customer'", fingerprint("'a value'"))  # today's "'<value>'" group


@pytest.fixture
def operator_client(client):
    user = User.objects.create_user("op", password="pw")
    user.groups.add(Group.objects.get_or_create(name="operator")[0])
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_the_errors_page_names_a_python_key_error_and_its_retry_takes_that_group(operator_client, actions_redis):
    r = redis.Redis.from_url(actions_redis)
    r.hset(QUEUE.key("meta"), "opts.maxLenEvents", 10000)  # the queue exists
    seed_failed(r, QUEUE, 5, reason=lambda i: "'customer'" if i < 3 else f"'cus_{i}f3K2'")
    trace = "Traceback (most recent call last):\n  File \"processors.py\", line 76\nKeyError: 'customer'\n"
    for job_id in ("1", "2", "3"):
        r.hset(QUEUE.job_key(job_id), "stacktrace", json.dumps([trace]))
    html = operator_client.get(reverse("queue_errors", args=Q)).content.decode()
    assert "KeyError: &#x27;customer&#x27;" in html
    shown = operator_client.post(
        reverse("bulk_preview", args=Q),
        {"action": "discard", "state": "failed", "fingerprint": fingerprint("'customer'"), "scope": "matching"},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    assert 'data-count="3"' in shown
