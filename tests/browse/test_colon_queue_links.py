"""A job's parent in a queue whose name contains ':' (Python BullMQ accepts such names) is
linked to the right queue and job, not split at the first ':'."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from tests.support.redis_db import app_on

pytestmark = pytest.mark.django_db


def test_a_parent_in_a_colon_queue_is_linked_to_its_own_queue(logged_in, settings, redis_db):
    r = redis_db.client()
    for queue in ("orders:eu", "orders", "payments"):
        r.hset(f"bull:{queue}:meta", mapping={"opts.maxLenEvents": 10000, "version": "bullmq:6.7.0"})
    r.hset("bull:orders:eu:7", mapping={"name": "parent", "data": "{}", "opts": "{}", "timestamp": 1})
    r.zadd("bull:orders:eu:waiting-children", {"7": 1})
    r.hset(
        "bull:payments:1",
        mapping={
            "name": "child",
            "data": json.dumps({"x": 1}),
            "opts": "{}",
            "timestamp": 2,
            "parentKey": "bull:orders:eu:7",
            "parent": json.dumps({"id": "7", "queueKey": "bull:orders:eu"}),
        },
    )
    r.lpush("bull:payments:wait", "1")
    with app_on(settings, redis_db.url):
        html = logged_in.get(reverse("job", args=["default", "bull", "payments", "1"])).content.decode()
    assert reverse("job", args=["default", "bull", "orders:eu", "7"]) in html
    assert reverse("job", args=["default", "bull", "orders", "eu:7"]) not in html
