"""A refresh of many queues runs a chunk at a time, watched queues first, and between chunks the
monitor applies the events that arrived and refreshes at once the watched queues they changed:
at 10,000 queues a tick or a burst of quiet reads refreshed thousands of queues in one step of up
to two seconds, and a viewer's update waited for all of it. Each chunk writes its queues' entries
of the state document before rendering them; the last one the whole document on a tick."""
# Literal `bull:` keys kept: a redis-server of its own (private_redis).

from __future__ import annotations

import pytest

from dashboard.core import state_store
from dashboard.core.dash_redis import Watch, watch
from dashboard.monitor import refreshing
from queues.keys import QueueRef

pytestmark = pytest.mark.django_db

QUEUES = [QueueRef("default", "bull", f"chunk{i}") for i in range(7)]


@pytest.fixture
def monitor(private_redis, monkeypatch):
    from dashboard.monitor.loop import Monitor

    monkeypatch.setattr(refreshing, "REFRESH_CHUNK", 3)
    for i, q in enumerate(QUEUES):
        private_redis.hset(f"bull:{q.name}:meta", "opts.maxLenEvents", 10000)
        private_redis.lpush(f"bull:{q.name}:wait", *[f"j{n}" for n in range(i + 1)])
    monitor = Monitor(tick=0.5, name="chunk-monitor")
    monitor.tracker.add_queues(QUEUES)
    yield monitor
    monitor.publisher.close()


def test_a_long_refresh_runs_in_chunks_watched_first_and_serves_viewers_between_them(monitor, private_redis):
    watch(private_redis, Watch.queue_page(QUEUES[5]), "tab-1")
    refreshed: list[list[str]] = []
    published: list[object] = []
    between: list[int] = []
    real_refresh = monitor.refresher.refresh

    def refresh(queues, **options):
        refreshed.append([q.name for q in queues])
        return real_refresh(queues, **options)

    monitor.refresher.refresh = refresh
    real_publish = monitor.publish_state

    def publish_state(only=None):
        published.append(None if only is None else sorted(q.name for q in only))
        real_publish(only=only)

    monitor.publish_state = publish_state
    monitor.refresher.serve_watched = lambda arrived, publish_some: between.append(len(refreshed))
    monitor.refresh(list(QUEUES), full=True, exact=True)

    assert refreshed == [["chunk5", "chunk0", "chunk1"], ["chunk2", "chunk3", "chunk4"], ["chunk6"]]
    assert between == [1, 2]  # after each chunk but the last
    # Each chunk's entries as it is read, the whole document after the last.
    assert published == [["chunk0", "chunk1", "chunk5"], ["chunk2", "chunk3", "chunk4"], None]
    counts = {e["name"]: e["counts"]["waiting"] for e in state_store.read_state(private_redis)["queues"]}
    assert counts == {q.name: i + 1 for i, q in enumerate(QUEUES)}


def test_between_chunks_only_the_watched_queues_events_changed_are_refreshed(monitor, private_redis):
    """The events applied between chunks: the watched queues they changed are refreshed at once,
    the others wait in ``Monitor.arrived``, which the loop makes dirty once the steps are done (a
    tick empties the dirty set it started with, so they are not mixed into it)."""
    monitor.refresh(list(QUEUES), full=True, exact=True)  # every queue read once
    watch(private_redis, Watch.queue_page(QUEUES[1]), "tab-1")
    monitor.intake.take = lambda timeout, into: into.update({QUEUES[0], QUEUES[1], QUEUES[2]})
    refreshed: list[list[QueueRef]] = []
    written: list[list[QueueRef]] = []
    real_refresh, real_publish = monitor.refresher.refresh, monitor.publish_state

    def refresh(queues, **options):
        refreshed.append(list(queues))
        return real_refresh(queues, **options)

    def publish_state(only=None):
        written.append(only)
        real_publish(only=only)

    monitor.refresher.refresh = refresh
    monitor.publish_state = publish_state
    monitor.serve_watched()
    assert refreshed == [[QUEUES[1]]] and written == [[QUEUES[1]]]
    assert monitor.arrived == {QUEUES[0], QUEUES[2]}


def test_when_the_loop_wakes_the_watched_queues_events_changed_are_refreshed_at_once(monitor, private_redis):
    """Not at the next publish of changes, which at 10,000 queues waited behind the quiet reads
    and the due steps: the rest are dirty for it."""
    monitor.refresh(list(QUEUES), full=True, exact=True)
    watch(private_redis, Watch.queue_page(QUEUES[4]), "tab-1")
    monitor.intake.take = lambda timeout, into: into.update({QUEUES[3], QUEUES[4]})
    refreshed: list[list[QueueRef]] = []
    real_refresh = monitor.refresher.refresh

    def refresh(queues, **options):
        refreshed.append(list(queues))
        return real_refresh(queues, **options)

    monitor.refresher.refresh = refresh
    dirty: set[QueueRef] = set()
    monitor.take_arrivals(0, dirty)
    assert refreshed == [[QUEUES[4]]]
    assert dirty == {QUEUES[3]} and monitor.arrived == set()
