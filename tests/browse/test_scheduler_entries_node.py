"""Entries of a queue's ``repeat`` set that are not job schedulers, named as real Node BullMQ 6.7
treats them: a member with no definition hash and no legacy key shape is not "legacy, BullMQ 6
throws on it" — ``getJobSchedulers()`` deletes it — and the page says so, offering no migration."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.support.servers import node_available, run_node

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="needs node and npm"),
]


def test_an_entry_without_a_definition_is_named_as_node_treats_it(logged_in, prefixed_queues):
    r = prefixed_queues.client
    q = prefixed_queues.queue("orphans")
    r.hset(q.key("meta"), "opts.maxLenEvents", 10000)
    r.zadd(q.key("repeat"), {"lost-scheduler": 1700000000000})
    html = logged_in.get(reverse("queue_schedulers", args=prefixed_queues.args("orphans"))).content.decode()
    assert "badge legacy" in html and "No definition is stored for this entry" in html
    assert "BullMQ 6 throws on it" not in html and "scheduler-migrate" not in html

    # What the page promises: Node lists no scheduler and deletes the entry, without throwing.
    listed = run_node("toolbox.mjs", "schedulers", prefixed_queues.url, "orphans", prefix=prefixed_queues.prefix)
    assert listed == {"schedulers": []}
    assert r.zscore(q.key("repeat"), "lost-scheduler") is None
