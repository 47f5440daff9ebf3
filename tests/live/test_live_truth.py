"""Quiet means exact, against real Node BullMQ 6.7 with the periodic snapshot pushed
out of reach (QUEUEWATCH_RECONCILE_MS = 10 minutes): after each workload stops, the figures
the monitor publishes (the state document /metrics, health and alert rules read) settle to
BullMQ's own getJobCounts() and to the number of lock-less active jobs.

Every queue exists before the monitor starts, so the monitor's one scheduled snapshot happens
before the workload: what settles the figures afterwards is the quiet read alone."""
# Literal `bull:` keys kept: a monitor discovers every queue of its (whole, leased) database.

from __future__ import annotations

import contextlib
import subprocess

import pytest

from dashboard.core import dash_redis, state_store
from tests.support.live import monitor_thread
from tests.support.servers import NODE_DIR, ensure_node_modules, node_available, run_node
from tests.support.waiting import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="needs Node.js and npm"),
]

SETTLE_S = 15  # generous: the figures settle within ~2 s of quiet; this only bounds a failing test


@pytest.fixture
def url(live_setup, redis_url):
    """The database the monitor under test watches (live_setup's lease)."""
    return redis_url


@pytest.fixture
def start_monitor(live_setup, settings):
    """Start a leading monitor (after the test created its queues); stopped at teardown."""
    from dashboard.monitor.loop import Monitor

    running = contextlib.ExitStack()

    def start(*queues: str, reconcile_ms: int = 600_000) -> Monitor:
        settings.QUEUEWATCH_RECONCILE_MS = reconcile_ms  # by default the periodic snapshot is out of reach
        monitor = running.enter_context(monitor_thread(tick=0.3, name="truth-monitor"))
        # Following every queue (its stream cursor is set): later events are counted live.
        wait_for(
            lambda: (
                set(queues) <= {q.name for q in getattr(monitor, "applied_cursors", {})}
                and published(queues[0]) is not None
            )
        )
        return monitor

    with running:
        yield start


def published(name: str) -> dict | None:
    state = state_store.read_state(dash_redis.dashboard_redis()) or {"queues": []}
    return next((q for q in state["queues"] if q["name"] == name), None)


def settles_to(name: str, counts: dict, **figures) -> dict:
    """Wait until the published figures of queue ``name`` equal ``counts`` (getJobCounts())
    and ``figures``; returns the entry. On failure, says what was published last."""

    def exact():
        entry = published(name)
        if entry and entry["counts"] == counts and all(entry.get(k) == v for k, v in figures.items()):
            return entry
        return None

    try:
        return wait_for(exact, timeout=SETTLE_S)
    except AssertionError:
        entry = published(name) or {}
        raise AssertionError(
            f"{name}: published {entry.get('counts')} "
            f"{ {k: entry.get(k) for k in figures} }, BullMQ says {counts} {figures}"
        ) from None


def create(url: str, *names: str) -> None:
    for name in names:
        run_node("truth.mjs", "counts", url, name)  # the Queue constructor writes its meta


@pytest.mark.parametrize("workload", ["prioritized", "trimmed", "aged", "backoff", "flow"])
def test_figures_equal_get_job_counts_once_the_queue_is_quiet(workload, start_monitor, url):
    """Prioritized add/promote/retry (plain `waiting` events), trimming by count and by age
    (`completed`/`failed` for jobs removed at once), backoff retries (`delayed` without prev),
    and a flow whose parent is released in its own queue."""
    name = f"truth-{workload}"
    create(url, name)
    start_monitor(name)
    expected = run_node("truth.mjs", workload, url, name)["counts"]
    settles_to(name, expected)


def test_legacy_paused_list_is_shown_apart_not_added_to_waiting(start_monitor, url, live_setup):
    name = "truth-legacy"
    create(url, name)
    live_setup.lpush(f"bull:{name}:paused", "v5-1", "v5-2", "v5-3")  # what BullMQ 5 left behind
    start_monitor(name)
    expected = run_node("truth.mjs", "eventless", url, name)["counts"]
    entry = settles_to(name, expected, legacy_paused_jobs=3)
    assert expected["waiting"] == 5 and entry["paused"]  # the migration warning stays


def test_a_queue_named_with_a_colon_by_python_bullmq_is_discovered_and_exact(start_monitor, url):
    import asyncio

    from bullmq import Queue

    async def add(n):
        q = Queue("orders:eu", {"connection": url})
        for i in range(n):
            await q.add("order", {"i": i}, {"priority": 2 if i % 2 else 0})
        counts = await q.getJobCounts()
        await q.close()
        return counts

    asyncio.run(add(1))
    start_monitor("orders:eu")
    expected = asyncio.run(add(6))
    settles_to("orders:eu", expected)


def test_a_python_bullmq_queue_only_paused_and_resumed_is_discovered(start_monitor, url, live_setup):
    """Python bullmq's Queue writes no meta; pause writes `paused` into it and resume deletes
    that field, the hash's only one: the queue is left with its events stream alone."""
    import asyncio

    from bullmq import Queue

    async def toggle(*steps):
        q = Queue("py-toggled", {"connection": url})
        for step in steps:
            await getattr(q, step)()
        await q.close()

    asyncio.run(toggle("pause", "resume"))
    assert live_setup.keys("bull:py-toggled:*") == [b"bull:py-toggled:events"]
    start_monitor("py-toggled")
    entry = settles_to("py-toggled", dict.fromkeys(published("py-toggled")["counts"], 0), paused=False)
    asyncio.run(toggle("pause"))
    settles_to("py-toggled", entry["counts"], paused=True)


@pytest.mark.parametrize("crash", ["before_the_monitor_starts", "while_it_follows"])
def test_a_crashed_fleet_of_160_jobs_shows_160_stalled_now(crash, start_monitor, url):
    """A worker with 160 jobs in hand is SIGKILLed: moveToActive put them at the head, but
    whatever the list's length every lock-less job is found, whether the monitor learns them
    from a read of the whole list or from their `active` events."""
    name = f"truth-fleet-{crash}"
    create(url, name)
    if crash == "while_it_follows":
        start_monitor(name)
    ensure_node_modules()
    crashed = subprocess.Popen(
        ["node", "truth.mjs", "crash", url, name, "160"], cwd=NODE_DIR, stdout=subprocess.PIPE, text=True
    )
    try:
        assert crashed.stdout.readline().strip() == "ACTIVE 160"
    finally:
        crashed.kill()
        crashed.wait()
    if crash == "before_the_monitor_starts":
        start_monitor(name)
    expected = run_node("truth.mjs", "counts", url, name)["counts"]
    assert expected["active"] == 160
    settles_to(name, expected, stalled_now=160)


def test_an_eventless_drain_is_exact_after_one_snapshot_period(start_monitor, url):
    name = "truth-drain"
    create(url, name)
    start_monitor(name, reconcile_ms=3000)
    settles_to(name, run_node("truth.mjs", "eventless", url, name)["counts"])
    expected = run_node("truth.mjs", "drain", url, name)["counts"]  # no event: quiet cannot see it
    assert expected["waiting"] == expected["prioritized"] == 0
    settles_to(name, expected)  # the next scheduled snapshot does


def attempt_failures_once_decided(monitor, name: str) -> int:
    """The published count of failed attempts once the monitor has decided every candidate
    event it saw and published a state document after that."""
    import time

    wait_for(lambda: monitor.tracker.attempts.undecided == 0)
    decided_at = time.time() * 1000
    entry = wait_for(
        lambda: (
            (state := state_store.read_state(dash_redis.dashboard_redis()))
            and state["taken_at"] > decided_at
            and published(name)
        )
    )
    return entry["events_total"].get("attempt_failed", 0)


def test_failed_attempts_that_will_be_retried_are_counted_apart_from_final_failures(start_monitor, url):
    name = "truth-attempts"
    create(url, name)
    monitor = start_monitor(name)
    done = run_node("truth.mjs", "backoff", url, name)  # 10 jobs fail twice then complete, 2 always fail
    entry = settles_to(name, done["counts"])
    assert attempt_failures_once_decided(monitor, name) == done["attempt_failures"] == 24
    assert entry["events_total"]["failed"] == done["final_failures"] == 2


def test_rate_limit_push_back_self_delay_and_stall_recovery_are_not_attempt_failures(start_monitor, url, redis_server):
    name = "truth-lookalikes"
    create(url, name)
    monitor = start_monitor(name)
    done = run_node("truth.mjs", "ratelimited", url, name)  # pushed back once / delayed itself once
    # A job whose worker froze, recovered by a healthy worker's stall check.
    stuck = subprocess.Popen(["node", "stall_worker.mjs", url, name], cwd=NODE_DIR, stdout=subprocess.PIPE, text=True)
    try:
        run_node("truth.mjs", "eventless", url, name)  # the stuck worker takes one of these
        assert stuck.stdout.readline().startswith("ACTIVE ")
    finally:
        stuck.kill()
        stuck.wait()
    run_node("produce.mjs", "recover", url, name, "4")
    expected = run_node("truth.mjs", "counts", url, name)["counts"]
    entry = settles_to(name, expected)
    assert expected["completed"] == done["counts"]["completed"] + 10 and entry["events_total"]["stalled"] == 1
    assert attempt_failures_once_decided(monitor, name) == done["attempt_failures"] == 0


def test_trimmed_sets_stay_within_the_bound_under_continuous_load(start_monitor, url, monkeypatch, live_setup):
    """removeOnComplete {count: 20} / removeOnFail {count: 10} on a queue that never goes quiet
    (about 100 jobs/s): no quiet read, no periodic snapshot, yet once at their caps the
    published finished sets stay within max(2, 1 %) of the truth, document after document."""
    import time

    from dashboard.monitor import tracking
    from queues.quiet import QuietReads
    from queues.sources.redis_node import RedisNodeSource

    monkeypatch.setattr(tracking, "QuietReads", lambda: QuietReads(quiet_s=600))  # never quiet, even between runs
    reads = []
    real = RedisNodeSource.snapshots
    monkeypatch.setattr(RedisNodeSource, "snapshots", lambda self, qs: reads.append(len(qs)) or real(self, qs))
    name = "truth-steady"
    create(url, name)
    start_monitor(name)
    reads_before = len(reads)
    ensure_node_modules()
    load = subprocess.Popen(["node", "truth.mjs", "steady", url, name], cwd=NODE_DIR, stdout=subprocess.PIPE, text=True)
    documents: dict[int, dict] = {}

    def within_bound():
        entry = published(name)
        return entry and abs(entry["counts"]["completed"] - 20) <= 2 and abs(entry["counts"]["failed"] - 10) <= 2

    try:
        assert load.stdout.readline().strip() == "CAPPED"
        try:
            wait_for(within_bound, timeout=SETTLE_S)
        except AssertionError:
            raise AssertionError(f"never within the bound: published {(published(name) or {}).get('counts')}") from None
        since = time.time() * 1000

        def collect():
            state = state_store.read_state(dash_redis.dashboard_redis())
            entry = published(name)
            if state and entry and state["taken_at"] > since:
                documents[state["taken_at"]] = entry["counts"]
            return len(documents) >= 8

        wait_for(collect, timeout=SETTLE_S)
        assert load.poll() is None, "the load ran throughout"
    finally:
        load.kill()
        load.wait()
    assert (live_setup.zcard(f"bull:{name}:completed"), live_setup.zcard(f"bull:{name}:failed")) == (20, 10)
    assert len(reads) == reads_before, "no exact read of the queue: the figures come from events alone"
    off = {t: c for t, c in documents.items() if abs(c["completed"] - 20) > 2 or abs(c["failed"] - 10) > 2}
    assert not off, f"published outside the bound under load: {off}"


def test_a_drain_done_from_queuewatch_is_exact_at_once(start_monitor, url, monkeypatch, live_setup):
    """The same eventless drain, made through Queuewatch's action service, with neither a quiet
    read nor a periodic snapshot in reach: the service asks, the monitor reads that queue."""
    from dashboard.actions import services
    from dashboard.monitor import tracking
    from queues.keys import QueueRef
    from queues.quiet import QuietReads
    from tests.support.accounts import user_with

    monkeypatch.setattr(tracking, "QuietReads", lambda: QuietReads(quiet_s=600))
    name = "truth-drain-here"
    create(url, name)
    start_monitor(name)
    wait_for(lambda: live_setup.pubsub_numsub(dash_redis.EXACT_READS_CHANNEL)[0][1] == 1)  # the monitor listens
    run_node("truth.mjs", "eventless", url, name)
    # Counted from the events alone (which cannot tell prioritized from waiting).
    wait_for(lambda: (published(name) or {}).get("counts", {}).get("waiting") == 10)
    result = services.queue_action(
        user=user_with("admin"), via="api", queue=QueueRef("default", "bull", name), action="drain", reason="test"
    )
    assert result.ok
    expected = run_node("truth.mjs", "counts", url, name)["counts"]
    assert expected["waiting"] == expected["prioritized"] == 0
    settles_to(name, expected)


def test_a_drain_done_from_queuewatch_that_releases_a_flow_parent_elsewhere_reads_its_queue_at_once(
    start_monitor, url, monkeypatch, live_setup
):
    """Draining the children's queue removes them as BullMQ's drain does (hard): their parent,
    in another queue, moves to wait without an event (``removeParentDependencyKey``). Neither a
    quiet read nor a periodic snapshot is in reach: only the action's exact reads can tell."""
    from dashboard.actions import services
    from dashboard.monitor import tracking
    from queues.keys import QueueRef
    from queues.quiet import QuietReads
    from tests.support.accounts import user_with

    monkeypatch.setattr(tracking, "QuietReads", lambda: QuietReads(quiet_s=600))
    create(url, "truth-parents", "truth-children")
    start_monitor("truth-parents", "truth-children")
    wait_for(lambda: live_setup.pubsub_numsub(dash_redis.EXACT_READS_CHANNEL)[0][1] == 1)  # the monitor listens
    before = run_node("truth.mjs", "crossflow", url, "truth-parents", "truth-children")["counts"]
    assert before["waiting-children"] == 1
    settles_to("truth-parents", before)  # from its events alone
    result = services.queue_action(
        user=user_with("admin"),
        via="api",
        queue=QueueRef("default", "bull", "truth-children"),
        action="drain",
        reason="test",
    )
    assert result.ok
    after = run_node("truth.mjs", "counts", url, "truth-parents")["counts"]
    assert (after["waiting-children"], after["waiting"]) == (0, 1)  # released, without an event
    settles_to("truth-parents", after)
