"""The monitor with real Node BullMQ workers: failures and stalls reach a connected websocket
client; rates and history come from events; stream trimming is detected and reconciled."""
# Literal `bull:` keys kept: a monitor discovers every queue of its (whole, leased) database.

from __future__ import annotations

import re
import subprocess

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from dashboard.asgi import application
from dashboard.live.models import QueuePoint
from tests.support.live import monitor_thread, session_headers
from tests.support.servers import NODE_DIR, ensure_node_modules, run_node
from tests.support.waiting import receive_until, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.node]


@pytest.mark.asyncio
async def test_node_failure_reaches_a_connected_client(running_monitor, live_setup, redis_url, client, user):
    # The queue exists before the page opens (as a user would see it).
    await sync_to_async(run_node)("produce.mjs", "complete", redis_url, "orders", "1")
    await sync_to_async(wait_for)(
        lambda: running_monitor.stats["ticks"] >= 2 and any(q.name == "orders" for q in running_monitor.states)
    )
    headers = await sync_to_async(session_headers)(client, user)
    comm = WebsocketCommunicator(application, "/ws/queue/default/bull/orders/?state=failed&list=1", headers=headers)
    assert (await comm.connect(timeout=5))[0]

    result = await sync_to_async(run_node)("produce.mjs", "fail", redis_url, "orders", "1")
    failed_id = result["ids"][0]

    # The failed tab's count moves and the failed job row appears, without a reload.
    seen = []
    await receive_until(
        comm,
        lambda h: (
            seen.append(h)
            or (
                any(
                    'class="queue-live"' in x
                    and re.search(
                        r'failed <span class="count"><data class="qw-num qw-compact" value="1">1</data></span>', x
                    )
                    for x in seen
                )
                and any(f'data-job-id="{failed_id}"' in x and "live failure 0" in x for x in seen)
            )
        ),
    )
    await comm.disconnect()

    # The state document (for /metrics and health) carries the same figures, once per tick.
    from dashboard.core import dash_redis, state_store

    def orders_state():
        state = state_store.read_state(dash_redis.dashboard_redis()) or {"queues": []}
        # The count comes from the snapshot, the totals from events: one tick may see the
        # first before the second, the next tick sees both.
        return next(
            (
                q
                for q in state["queues"]
                if q["name"] == "orders" and q["counts"]["failed"] == 1 and q["events_total"]["failed"] == 1
            ),
            None,
        )

    orders = await sync_to_async(wait_for)(orders_state)
    assert orders["rates_per_min"]["failed"]["1"] > 0


@pytest.mark.asyncio
async def test_killed_worker_shows_stalled_live_then_the_stall_is_counted(
    running_monitor, live_setup, redis_url, client, user
):
    ensure_node_modules()
    url = redis_url
    await sync_to_async(run_node)("produce.mjs", "complete", url, "stally", "1")
    headers = await sync_to_async(session_headers)(client, user)
    comm = WebsocketCommunicator(application, "/ws/queue/default/bull/stally/?state=active&list=1", headers=headers)
    assert (await comm.connect(timeout=5))[0]

    stuck = subprocess.Popen(
        ["node", "stall_worker.mjs", url, "stally"], cwd=NODE_DIR, stdout=subprocess.PIPE, text=True
    )
    try:
        live_setup.lpush("bull:stally:wait", "placeholder")  # never processed: removed below
        live_setup.lrem("bull:stally:wait", 0, "placeholder")
        # Add the job the stuck worker will take (through BullMQ, from Python).
        from bullmq import Queue

        q = Queue("stally", {"connection": url})
        job = await q.add("slow", {"n": 1}, {"attempts": 3})
        await q.close()
        line = await sync_to_async(stuck.stdout.readline)()
        assert line.strip() == f"ACTIVE {job.id}"
        stuck.kill()  # SIGKILL: the lock expires ~2 s later while the job stays in active

        html = await receive_until(comm, lambda h: "stalled now" in h, timeout=20)
        assert "1 stalled now" in html
        await receive_until(comm, lambda h: f'data-job-id="{job.id}"' in h and "badge stalled" in h, timeout=10)
    finally:
        stuck.kill()
        stuck.wait()

    # A healthy worker's stall check recovers it; the `stalled` event is counted once.
    await sync_to_async(run_node)("produce.mjs", "recover", url, "stally", "4")
    await receive_until(comm, lambda h: 'class="queue-live"' in h and "stalled now" not in h, timeout=15)

    def stalled_total():
        return sum(QueuePoint.objects.filter(queue="stally").values_list("stalled", flat=True))

    assert await sync_to_async(wait_for)(lambda: stalled_total() == 1, timeout=10)
    await comm.disconnect()


def test_between_snapshots_counts_follow_events_without_reading_them(live_setup, redis_url, settings, monkeypatch):
    """The monitor reads a queue's counts once, then keeps them current from events alone:
    after real Node workers fail, retry and complete jobs, its counts equal getJobCounts()
    without another snapshot read."""
    from dashboard.monitor import tracking

    settings.QUEUEWATCH_RECONCILE_MS = 600_000  # no scheduled snapshot during the test
    from queues.quiet import QuietReads

    monkeypatch.setattr(tracking, "QuietReads", lambda: QuietReads(quiet_s=600))  # nor a quiet read: events alone
    url = redis_url
    run_node("produce.mjs", "add", url, "evq", "3")  # attempts 3: retried twice, then failed
    reads = []
    from queues.sources.redis_node import RedisNodeSource

    real = RedisNodeSource.snapshots
    monkeypatch.setattr(
        RedisNodeSource, "snapshots", lambda self, qs: reads.append([q.name for q in qs]) or real(self, qs)
    )
    with monitor_thread(tick=0.3, name="test-monitor") as monitor:

        def evq():
            return next((st for q, st in getattr(monitor, "states", {}).items() if q.name == "evq" and st.live), None)

        wait_for(lambda: evq() is not None and any(q.name == "evq" for q in monitor.applied_cursors))
        reads_before = len(reads)
        run_node("produce.mjs", "fail", url, "evq", "4")
        expected = run_node("produce.mjs", "complete", url, "evq", "5")["counts"]
        want = {s: expected[s] for s in ("waiting", "active", "delayed", "prioritized", "completed", "failed")}
        wait_for(lambda: {s: evq().live.counts[s] for s in want} == want)
        assert want["failed"] >= 4 and want["completed"] >= 5
        assert len(reads) == reads_before, "events, not snapshots, moved the counts"
