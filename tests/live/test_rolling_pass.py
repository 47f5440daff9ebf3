"""Beyond ``FULL_PASS_QUEUES`` queues the monitor reads its queues exactly in a rolling pass (a
share per tick, every queue once per snapshot period): a change no event tells of still
reaches the state document within a snapshot period, and no tick reads more than its share
once every queue has been read. (Lowered to a few queues here; the real threshold is 1,000.)"""
# Literal `bull:` keys kept: a monitor discovers every queue of its (whole, leased) database.

from __future__ import annotations

import math

import pytest

from dashboard.core import dash_redis, state_store
from dashboard.monitor import loop
from tests.support.live import monitor_thread
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True)]

QUEUES, TICK, PERIOD_MS = 8, 0.25, 2000


def published_waiting() -> dict[str, int]:
    state = state_store.read_state(dash_redis.dashboard_redis()) or {"queues": []}
    return {q["name"]: q["counts"]["waiting"] for q in state["queues"]}


def test_a_change_without_events_is_read_within_a_snapshot_period_a_share_at_a_time(live_setup, settings, monkeypatch):
    monkeypatch.setattr(loop, "FULL_PASS_QUEUES", 3)
    settings.QUEUEWATCH_RECONCILE_MS = PERIOD_MS
    r = live_setup
    pipe = r.pipeline(transaction=False)
    for i in range(QUEUES):
        pipe.hset(f"bull:roll{i}:meta", mapping={"opts.maxLenEvents": 10000})
        pipe.lpush(f"bull:roll{i}:wait", *[f"a{n}" for n in range(i + 1)])
    pipe.execute()
    truth = {f"roll{i}": i + 1 for i in range(QUEUES)}

    with monitor_thread(tick=TICK, name="rolling-monitor") as monitor:
        wait_for(lambda: published_waiting() == truth, timeout=30)
        sizes: list[int] = []
        take = monitor.tracker.take_snapshots

        def counted(source, queues, now):
            sizes.append(len(queues))
            return take(source, queues, now)

        monitor.tracker.take_snapshots = counted
        # Jobs pushed with no event at all (as an eventless script would): only exact reads see them.
        pipe = r.pipeline(transaction=False)
        for i in range(QUEUES):
            pipe.lpush(f"bull:roll{i}:wait", *[f"b{n}" for n in range(5)])
        pipe.execute()
        truth = {name: n + 5 for name, n in truth.items()}
        wait_for(lambda: published_waiting() == truth, timeout=PERIOD_MS / 1000 * 3 + 5)
        rounds = monitor.rolling.rounds
        wait_for(lambda: monitor.rolling.rounds > rounds, timeout=PERIOD_MS / 1000 * 3 + 5)

    share = math.ceil(QUEUES * TICK / (PERIOD_MS / 1000))
    assert sizes and max(sizes) <= share, sizes
