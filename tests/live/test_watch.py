"""What a page watches, as stored for the monitor: one format, parsed and written in one place;
each tab holds its own entry, so one tab closing ends only its own watch; the monitor reads them
by queue, so tabs watching one queue cost nothing to the refresh of another."""
# Literal `bull:` keys kept: a redis-server of its own (private_redis).

from __future__ import annotations

import pytest

from dashboard.core.dash_redis import SEP, Watch, unwatch, watch, watched
from queues.keys import QueueRef

QUEUE = QueueRef("default", "bull", "orders:eu")


@pytest.mark.parametrize(
    "item", [Watch.queue_page(QUEUE), Watch.job_list(QUEUE, "failed"), Watch.job(QUEUE, "a:b/c 1")]
)
def test_a_watch_survives_its_stored_form(item):
    assert Watch.parse(item.member()) == item


@pytest.mark.parametrize(
    "member",
    [
        SEP.join(("list", "default", "bull", "orders")),  # too short: no state
        SEP.join(("page", "default", "bull", "orders", "1")),  # not a kind the monitor renders
        SEP.join(("job", "default", "bull", "orders", "a", "b")),  # the separator inside a part
    ],
)
def test_malformed_members_are_ignored(member):
    assert Watch.parse(member) is None


def test_a_thing_two_tabs_watch_is_watched_once_until_the_last_tab_closes(redis_client):
    failed, job = Watch.job_list(QUEUE, "failed"), Watch.job(QUEUE, "a\x1eb")  # a separator inside an id
    watch(redis_client, failed, "tab-1")
    watch(redis_client, job, "tab-1")
    watch(redis_client, failed, "tab-2")
    assert sorted(watched(redis_client), key=Watch.member) == [job, failed]  # each once, whatever the tabs
    unwatch(redis_client, [failed, job], "tab-1")
    assert watched(redis_client) == [failed]  # tab 2 still watches the list
    unwatch(redis_client, [failed], "tab-2")
    assert watched(redis_client) == []


@pytest.mark.django_db
def test_the_monitors_refresh_of_a_queue_costs_the_same_however_many_tabs_watch_another(private_redis):
    """The attack: thousands of sockets watching one queue made every refresh of every other
    queue read all their entries (the monitor's per-tick cost grew with the sockets). Now the
    monitor reads an index of watched queues, then only the watches of the queues it refreshes:
    the bytes the dashboard Redis sends for a refresh of an unwatched queue stay the same."""
    from dashboard.monitor.loop import Monitor

    crowded, quiet = QueueRef("default", "bull", "crowded"), QueueRef("default", "bull", "quiet")
    private_redis.hset("bull:quiet:meta", "opts.maxLenEvents", 10000)
    private_redis.zadd("bull:quiet:completed", {"1": 1})
    monitor = Monitor(tick=0.5, name="watch-index-monitor")
    monitor.tracker.add_queues([quiet])

    def bytes_sent_for_a_refresh() -> int:
        before = private_redis.info("stats")["total_net_output_bytes"]
        monitor.refresh([quiet], full=False, exact=False, state=False)
        monitor.publisher.drain()
        return private_redis.info("stats")["total_net_output_bytes"] - before

    try:
        for tab in range(10):
            watch(private_redis, Watch.job(crowded, f"job-{tab % 3}"), f"tab-{tab}")
        monitor.refresh([quiet], full=True, exact=True, state=False)  # the first render, not measured
        monitor.publisher.drain()
        few = bytes_sent_for_a_refresh()
        for tab in range(10, 3000):
            watch(private_redis, Watch.job(crowded, f"job-{tab % 3}"), f"tab-{tab}")
        many = bytes_sent_for_a_refresh()
    finally:
        monitor.publisher.close()
    assert many - few < 500, f"a refresh read {many - few} more bytes with 2,990 more tabs on another queue"
    assert watched(private_redis) == [Watch.job(crowded, f"job-{i}") for i in range(3)]
