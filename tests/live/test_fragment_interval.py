"""A queue's header is rendered at most every ``FRAGMENT_MIN_INTERVAL`` for the events of a busy
queue, but a tick's render does not start that interval: the event just after a tick is shown at
once (held back behind the tick's render, a viewer waited up to half a second for it)."""

from __future__ import annotations

import pytest

from dashboard.core.dash_redis import Watch, watch
from dashboard.live import channels as live
from queues.keys import QueueRef

pytestmark = pytest.mark.django_db

QUEUE = QueueRef("default", "bull", "interval")


@pytest.fixture
def monitor(private_redis):
    from dashboard.monitor.loop import Monitor

    private_redis.hset(QUEUE.key("meta"), "opts.maxLenEvents", 10000)
    private_redis.lpush(QUEUE.key("wait"), "j0")
    monitor = Monitor(tick=0.5, name="interval-monitor")
    monitor.tracker.add_queues([QUEUE])
    yield monitor
    monitor.publisher.close()


def test_a_tick_render_does_not_hold_back_the_next_event_but_a_burst_is_held(monitor, private_redis):
    watch(private_redis, Watch.queue_page(QUEUE), "tab-1")
    headers: list[str] = []
    real_publish = monitor.publisher.publish

    def publish(group, element_id, html, **options):
        if group == live.queue_group(QUEUE):
            headers.append(element_id)
        return real_publish(group, element_id, html, **options)

    monitor.publisher.publish = publish
    monitor.refresh([QUEUE], full=True, exact=True)  # the tick
    assert len(headers) == 1

    private_redis.lpush(QUEUE.key("wait"), "j1")
    monitor.refresh([QUEUE], full=False, exact=True)  # an event's refresh just after the tick
    assert len(headers) == 2, "held back behind the tick's render"
    assert QUEUE not in monitor.queue_publisher.held_back

    private_redis.lpush(QUEUE.key("wait"), "j2")
    monitor.refresh([QUEUE], full=False, exact=True)  # the next event, within the interval
    assert len(headers) == 2
    assert QUEUE in monitor.queue_publisher.held_back
