"""Beyond ``FULL_PASS_QUEUES`` queues the monitor reads its queues exactly in a rolling pass (at
most a share per tick, every queue once per snapshot period): a change no event tells of still
reaches the state document within a snapshot period, and no tick reads more than its share
once every queue has been read. (Lowered to a few queues here; the real threshold is 1,000.)
Which queues a tick takes: the due ones, oldest exact read first, and a queue read exactly for
another reason (gone quiet) is not read again until a period after that."""
# Literal `bull:` keys kept: a monitor discovers every queue of its (whole, leased) database.

from __future__ import annotations

import math

import pytest

from dashboard.core import dash_redis, state_store
from dashboard.monitor import loop
from dashboard.monitor.rolling import RollingPass
from queues.keys import QueueRef
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
        taken = monitor.rolling.taken
        wait_for(lambda: monitor.rolling.taken >= taken + QUEUES, timeout=PERIOD_MS / 1000 * 3 + 5)

    share = math.ceil(QUEUES * TICK / (PERIOD_MS / 1000))
    assert sizes and max(sizes) <= share, sizes


def test_the_pass_takes_the_queues_due_oldest_first_at_most_a_share():
    q = [QueueRef("default", "bull", f"q{i}") for i in range(6)]
    rolling = RollingPass()
    # Never read (0) is the oldest; among equals, the mapping's order.
    exact_at = {q[0]: 9_000, q[1]: 0, q[2]: 2_000, q[3]: 0, q[4]: 1_000, q[5]: 9_500}
    assert rolling.take(exact_at, 3, now_ms=10_000, due_after_ms=1_500) == [q[1], q[3], q[4]]
    # Fewer due than the share: only those (q0 and q5 were read exactly 1 s and 0.5 s ago).
    assert rolling.take(exact_at, 10, now_ms=10_000, due_after_ms=1_500) == [q[1], q[2], q[3], q[4]]
    assert rolling.take(exact_at, 10, now_ms=10_500, due_after_ms=1_500) == [q[0], q[1], q[2], q[3], q[4]]
    assert rolling.taken == 12


def test_a_queue_read_exactly_when_it_went_quiet_is_not_read_again_by_the_pass_until_due():
    """A period of 2 s, a tick of 0.5 s, 4 queues: one a tick. Queue 0 is read exactly (quiet)
    just before its turn: the pass reads the other three and comes back to it a period later."""
    q = [QueueRef("default", "bull", f"q{i}") for i in range(4)]
    rolling, exact_at, now = RollingPass(), dict.fromkeys(q, 0), 10_000
    taken_at: dict[QueueRef, list[int]] = {x: [] for x in q}
    exact_at[q[0]] = now  # its quiet read
    for tick in range(12):
        at = now + tick * 500
        for x in rolling.take(exact_at, 1, now_ms=at, due_after_ms=1_500):
            exact_at[x] = at
            taken_at[x].append(at)
    assert taken_at[q[0]][0] >= now + 1_500
    for times in taken_at.values():  # every queue read at least once a period, and no more often
        gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
        assert times and all(1_500 <= g <= 2_000 for g in gaps), taken_at
