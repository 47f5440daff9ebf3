"""A job's parent in a queue whose name contains ':' (Python BullMQ accepts such names) is
linked to the right queue and job, not split at the first ':'."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_a_parent_in_a_colon_queue_is_linked_to_its_own_queue(logged_in, prefixed_queues):
    r, prefix = prefixed_queues.client, prefixed_queues.prefix
    for queue in ("orders:eu", "orders", "payments"):
        r.hset(f"{prefix}:{queue}:meta", mapping={"opts.maxLenEvents": 10000, "version": "bullmq:6.7.0"})
    r.hset(f"{prefix}:orders:eu:7", mapping={"name": "parent", "data": "{}", "opts": "{}", "timestamp": 1})
    r.zadd(f"{prefix}:orders:eu:waiting-children", {"7": 1})
    r.hset(
        f"{prefix}:payments:1",
        mapping={
            "name": "child",
            "data": json.dumps({"x": 1}),
            "opts": "{}",
            "timestamp": 2,
            "parentKey": f"{prefix}:orders:eu:7",
            "parent": json.dumps({"id": "7", "queueKey": f"{prefix}:orders:eu"}),
        },
    )
    r.lpush(f"{prefix}:payments:wait", "1")
    html = logged_in.get(reverse("job", args=["default", prefix, "payments", "1"])).content.decode()
    assert reverse("job", args=["default", prefix, "orders:eu", "7"]) in html
    assert reverse("job", args=["default", prefix, "orders", "eu:7"]) not in html
