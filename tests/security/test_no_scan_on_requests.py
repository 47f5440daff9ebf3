"""Requests never make the monitored Redis walk its keyspace.

The monitor publishes the queue list; pages read it. A queue named in a URL that is not on the
list costs one EXISTS (shared by concurrent requests), not a rescan; and with no monitor
running, a web process scans once per discovery TTL whatever the number of requests."""
# Literal `bull:` keys kept: a private redis-server (its commandstats prove no SCAN).

from __future__ import annotations

import threading

import pytest
from django.urls import reverse

from dashboard.connections.registry import get_registry, reset_registry
from dashboard.core.dash_redis import publish_queue_list
from queues.keys import QueueRef

pytestmark = pytest.mark.django_db


def calls(client, command: str) -> int:
    return client.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0)


def make_queue(r, name: str) -> None:
    r.hset(f"bull:{name}:meta", mapping={"opts.maxLenEvents": 10000})


def test_pages_and_unknown_queues_do_not_scan(private_redis, logged_in):
    r = private_redis
    for i in range(20):
        make_queue(r, f"q{i}")
    publish_queue_list(r, "default", [QueueRef("default", "bull", f"q{i}") for i in range(20)])
    make_queue(r, "created-later")  # exists, but the monitor has not published it yet
    scans, exists = calls(r, "scan"), calls(r, "exists")

    assert logged_in.get(reverse("overview")).status_code == 200
    assert logged_in.get(reverse("queue", args=["default", "bull", "q3"])).status_code == 200
    for _ in range(5):  # the attack: five requests for a queue that does not exist
        assert logged_in.get(reverse("queue", args=["default", "bull", "no-such-queue"])).status_code == 404
    assert logged_in.get(reverse("api_queue", args=["default", "bull", "no-such-queue"])).status_code == 404
    assert logged_in.get(reverse("queue", args=["default", "bull", "created-later"])).status_code == 200

    assert calls(r, "scan") == scans, "a request scanned the monitored Redis"
    # one EXISTS for the missing name (its answer is reused), one for the new queue
    assert calls(r, "exists") - exists == 2


def test_concurrent_requests_share_one_exists(private_redis):
    r = private_redis
    publish_queue_list(r, "default", [])
    registry = get_registry()
    before = calls(r, "exists")
    results = []
    threads = [threading.Thread(target=lambda: results.append(_resolves(registry, "ghost"))) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [False] * 10
    # the first asks; the others wait for its answer or find it kept
    assert calls(r, "exists") - before == 1


def _resolves(registry, name: str) -> bool:
    from queues.errors import QueueNotFound

    try:
        registry.queue("default", "bull", name)
        return True
    except QueueNotFound:
        return False


def test_without_a_monitor_one_scan_serves_concurrent_requests(private_redis, settings):
    """With the default discovery TTL, one scan per TTL: requests that wait for a scan in
    progress take its result, later ones the cached list."""
    settings.QUEUEWATCH_DISCOVERY_TTL = 10
    reset_registry()
    r = private_redis
    for i in range(5):
        make_queue(r, f"q{i}")
    assert r.get("queuewatch:queues:default") is None  # no monitor has published
    registry = get_registry()
    before = calls(r, "scan")
    found = []
    threads = [threading.Thread(target=lambda: found.append(len(registry.queues("default")))) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert found == [5] * 10
    assert calls(r, "scan") - before == 1  # one pass (a tiny keyspace is one SCAN call)


def test_with_the_monitor_stopped_requests_show_its_last_list_as_stale_and_never_scan(
    private_redis, logged_in, settings
):
    """The attack (or accident): the monitor stops publishing (crashed, or its leader lock held by
    someone who publishes nothing). Its list lapses after a minute, and every web process then
    scanned the whole monitored keyspace once per discovery TTL. Now the last list it published is
    kept and shown as stale; requests send no SCAN (counted by the private server)."""
    settings.QUEUEWATCH_DISCOVERY_TTL = 0  # every request asks again: the worst case
    reset_registry()
    r = private_redis
    for i in range(6):
        make_queue(r, f"q{i}")
    publish_queue_list(r, "default", [QueueRef("default", "bull", f"q{i}") for i in range(5)])
    r.delete("queuewatch:queues:default")  # the fresh list lapsed: no monitor refreshed it
    scans = calls(r, "scan")
    for _ in range(5):
        page = logged_in.get(reverse("overview"))
        assert page.status_code == 200
    html = page.content.decode()
    assert "This queue list is stale" in html
    assert all(f">q{i}<" in html for i in range(5)) and ">q5<" not in html  # the last list, as published
    assert logged_in.get(reverse("queue", args=["default", "bull", "q5"])).status_code == 200  # still reachable
    assert calls(r, "scan") == scans, "a request scanned the monitored Redis"

    publish_queue_list(r, "default", [QueueRef("default", "bull", f"q{i}") for i in range(6)])  # a monitor again
    html = logged_in.get(reverse("overview")).content.decode()
    assert "This queue list is stale" not in html and ">q5<" in html
