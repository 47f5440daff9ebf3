"""What a page watches, as stored for the monitor: one format, parsed and written in one place;
each tab holds its own entry, so one tab closing ends only its own watch."""

from __future__ import annotations

import pytest

from dashboard.core.dash_redis import SEP, WATCH_KEY, Watch, unwatch, watch, watched
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
    assert watched(redis_client) == [failed, job]  # each once, whatever the number of tabs
    unwatch(redis_client, [failed, job], "tab-1")
    assert watched(redis_client) == [failed]  # tab 2 still watches the list
    unwatch(redis_client, [failed], "tab-2")
    assert watched(redis_client) == []


def test_a_member_written_before_tabs_held_their_own_is_still_read(redis_client):
    redis_client.zadd(WATCH_KEY, {Watch.job_list(QUEUE, "failed").member(): 2e10})
    assert watched(redis_client) == [Watch.job_list(QUEUE, "failed")]
