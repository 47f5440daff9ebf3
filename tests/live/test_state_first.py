"""The state document (/metrics, health checks, alert rules) is written as soon as a refresh
knows the figures, before it renders any fragment (rendering every queue took up to a
second on a loaded machine, and a document written after it carried figures that much older than
its ``taken_at``). Real Node BullMQ 6.7: a flow in one queue, then one full refresh of a real
monitor."""

from __future__ import annotations

import pytest

from dashboard.core import dash_redis, state_store
from queues.keys import QueueRef
from tests.support.health import queue_state
from tests.support.servers import node_available, run_node

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="needs Node.js and npm"),
]


def test_a_refresh_writes_the_state_document_before_rendering_and_it_is_exact(live_setup, redis_url, monkeypatch):
    from dashboard.monitor.loop import Monitor

    expected = run_node("truth.mjs", "flow", redis_url, "state-first")["counts"]  # a parent and 4 children, all done
    q = QueueRef("default", "bull", "state-first")
    monitor = Monitor(tick=0.3, name="state-first-monitor")
    monitor.tracker.add_queues([q])
    steps: list[str] = []
    real_state, real_render = monitor.publish_state, monitor.queue_publisher.publish_queue

    def state():
        steps.append("state")
        real_state()

    def render(*args, **kwargs):
        steps.append("render")
        return real_render(*args, **kwargs)

    monkeypatch.setattr(monitor, "publish_state", state)
    monkeypatch.setattr(monitor.queue_publisher, "publish_queue", render)
    monitor.refresh([q], full=True, exact=True)
    monitor.publisher.close()
    assert steps == ["state", "render"]
    entry, _ = queue_state("state-first")
    assert entry["counts"] == expected and expected["completed"] == 5
    assert state_store.read_state(dash_redis.dashboard_redis())["monitor"] == "state-first-monitor"
