"""The monitor discovers queues incrementally, within a budget.

A full SCAN every 10 s costs a whole Redis core on a 10M-key production Redis. Discovery is
now one resumable SCAN pass advanced by a fixed number of SCAN calls per step. These tests
count the SCAN calls a real redis-server received (``INFO commandstats``), never time: each
step stays within its budget, a pass needs many steps on a large keyspace, queues known
before keep being listed while a pass runs, a queue created mid-pass is found within one
complete pass after its creation and a deleted one leaves the list."""
# Literal `bull:` keys kept: redis-servers of the tests' own (discovery over a whole keyspace).

from __future__ import annotations

import pytest

from dashboard.core import dash_redis
from dashboard.monitor import discovering
from queues.keys import QueueRef
from queues.redis.discovery_pass import DiscoveryPass
from tests.support.servers import RedisServer
from tests.support.waiting import wait_for

FILLER = 20_000
SCAN_COUNT = 1000
KEYS_PER_STEP = 2 * SCAN_COUNT  # two SCAN calls per step


def scans(r) -> int:
    return r.info("commandstats").get("cmdstat_scan", {}).get("calls", 0)


def make_queue(r, name: str) -> None:
    r.hset(f"bull:{name}:meta", mapping={"opts.maxLenEvents": 10000})


def fill(r, count: int) -> None:
    pipe = r.pipeline(transaction=False)
    for start in range(0, count, 1000):
        pipe.mset({f"filler:{i}": "x" for i in range(start, start + 1000)})
    pipe.execute()


def ref(name: str) -> QueueRef:
    return QueueRef("default", "bull", name)


@pytest.fixture(scope="module")
def big_redis():
    server = RedisServer()
    r = server.client()
    fill(r, FILLER)
    yield r
    r.close()
    server.stop()


@pytest.fixture
def queues(big_redis):
    names = ["a", "b", "c"]
    for name in names:
        make_queue(big_redis, name)
    yield names
    big_redis.delete(*(k for k in big_redis.scan_iter(match="bull:*")))


def walker(r, **options) -> DiscoveryPass:
    return DiscoveryPass(
        r,
        connection="default",
        prefixes=["bull"],
        keys_per_step=KEYS_PER_STEP,
        scan_count=SCAN_COUNT,
        min_pass_s=0,
        **options,
    )


def test_each_step_stays_within_its_budget_and_a_pass_walks_everything(big_redis, queues):
    walk = walker(big_redis)
    per_step = []
    while walk.passes == 0:
        before = scans(big_redis)
        walk.step()
        per_step.append(scans(big_redis) - before)
    assert max(per_step) == walk.calls_per_step == 2
    # 20,000 keys at ~1,000 examined per call: the pass is spread over many steps, not one
    assert sum(per_step) >= FILLER // SCAN_COUNT // 2
    assert len(per_step) >= FILLER // KEYS_PER_STEP // 2
    assert walk.queues == [ref(n) for n in queues]


def test_known_queues_stay_listed_and_a_new_one_is_found_within_one_pass(big_redis, queues):
    walk = walker(big_redis, known=[ref("a"), ref("b"), ref("c")])
    for _ in range(3):
        walk.step()
        assert {ref("a"), ref("b"), ref("c")} <= set(walk.queues)  # followed while the pass runs
    assert walk.passes == 0
    make_queue(big_redis, "created-mid-pass")
    passes_at_creation = walk.passes
    while walk.passes < passes_at_creation + 2 and ref("created-mid-pass") not in walk.queues:
        walk.step()
    assert ref("created-mid-pass") in walk.queues


def test_a_deleted_queue_leaves_the_list_when_a_pass_ends(big_redis, queues):
    walk = walker(big_redis)
    while walk.passes == 0:
        walk.step()
    assert ref("b") in walk.queues
    walk.step()  # the next pass is under way
    big_redis.delete("bull:b:meta")
    assert ref("b") in walk.queues  # a pass only removes at its end
    passes = walk.passes
    while walk.passes < passes + 2 and ref("b") in walk.queues:
        walk.step()
    assert walk.queues == [ref("a"), ref("c")]


def test_names_with_colons_are_checked_once(big_redis, queues):
    make_queue(big_redis, "orders:eu")  # a Python BullMQ queue named with ':'
    big_redis.hset("bull:a:job:meta", mapping={"name": "x", "data": "{}"})  # job 'job:meta' of queue 'a'
    walk = walker(big_redis)
    while walk.passes == 0:
        walk.step()
    assert walk.queues == [ref("a"), ref("b"), ref("c"), ref("orders:eu")]


@pytest.mark.django_db
def test_the_monitor_steps_discovery_within_budget(private_redis, settings, monkeypatch):
    """The wiring: each of the monitor's discovery steps sends at most its budget of SCAN
    calls, publishes the list every step, and follows what the pass finds and loses."""
    from dashboard.monitor.loop import Monitor

    r = private_redis
    fill(r, FILLER)
    make_queue(r, "old")
    settings.QUEUEWATCH_DISCOVERY_KEYS_PER_S = KEYS_PER_STEP  # one step per second
    monkeypatch.setattr(discovering, "DISCOVERY_INTERVAL", 0)  # passes back to back
    monitor = Monitor(tick=1.0, name="budget-test")
    monitor.intake.start()
    try:
        budget = KEYS_PER_STEP // SCAN_COUNT
        cursors: dict = {}

        def step() -> None:
            before = scans(r)
            monitor.discover(cursors)
            assert scans(r) - before <= budget

        def passes() -> int:
            return monitor.queue_lists.walks["default"].passes

        step()
        while passes() == 0:
            step()
        assert ref("old") in monitor.states
        step()
        make_queue(r, "new")
        r.delete("bull:old:meta")
        assert ref("old") in monitor.states  # still followed until the pass ends
        start = passes()
        while passes() < start + 2:
            step()
        assert ref("new") in monitor.states and ref("old") not in monitor.states
        assert dash_redis.read_queue_list(r, "default") == [ref("new")]
    finally:
        monitor.intake.stop()


def test_a_kind_without_a_resumable_walk_is_discovered_whole_once_per_pass_interval():
    from queues.discovery_pass import WholeDiscovery, discovery_for

    class WholeOnly:  # a source kind with discover() only (e.g. docs/sources.md's recipe kind)
        calls = 0

        def discover(self):
            self.calls += 1
            return [ref("x")]

    source, now = WholeOnly(), [100.0]
    assert isinstance(discovery_for(source, keys_per_step=KEYS_PER_STEP, min_pass_s=10), WholeDiscovery)
    walk = WholeDiscovery(source.discover, min_pass_s=10, clock=lambda: now[0])
    assert walk.step() and walk.queues == [ref("x")]
    assert not walk.step() and source.calls == 1  # resting until 10 s after the pass began
    now[0] += 10
    assert not walk.step() and source.calls == 2  # walked again, nothing changed


def test_a_whole_discovery_in_the_background_never_holds_the_step_up():
    """The monitor's steps return at once while a pass runs on its thread: the last list stands
    meanwhile, the step after the pass ends takes its list, a failed pass raises its error
    there, and the next step starts another."""
    import threading

    from queues.discovery_pass import WholeDiscovery

    release, outcome = threading.Event(), [[ref("x"), ref("y")]]

    def blocking_discover():  # a SCAN of every primary of a busy Cluster
        release.wait(10)
        if isinstance(outcome[0], Exception):
            raise outcome[0]
        return outcome[0]

    walk = WholeDiscovery(blocking_discover, min_pass_s=0, known=[ref("x")], background=True, clock=lambda: 100.0)
    assert not walk.step() and walk.queues == [ref("x")]  # started, not waited for
    assert not walk.step() and walk.passes == 0  # still running
    release.set()
    wait_for(lambda: walk._running.done.is_set())
    assert walk.step() and walk.queues == [ref("x"), ref("y")] and walk.passes == 1
    outcome[0] = ConnectionError("primary 7001 unreachable")
    assert not walk.step()  # the next pass, started
    wait_for(lambda: walk._running.done.is_set())
    with pytest.raises(ConnectionError, match="unreachable"):
        walk.step()
    assert walk.queues == [ref("x"), ref("y")]  # the last list stands
    outcome[0] = [ref("y")]
    assert not walk.step()  # tried again at once
    wait_for(lambda: walk._running.done.is_set())
    assert walk.step() and walk.queues == [ref("y")]


def test_a_late_step_catches_up_to_the_budget_per_second_within_a_bound(big_redis, queues):
    """The budget is keys a second: when the monitor's steps come late (ticks taking seconds),
    a step walks the seconds it missed, up to five steps' worth, so a large keyspace is still
    walked at the stated rate."""
    from queues.redis.discovery_pass import CATCH_UP_STEPS

    now = [1000.0]
    walk = walker(big_redis, clock=lambda: now[0])

    def calls_of_a_step_after(seconds: float) -> int:
        now[0] += seconds
        before = scans(big_redis)
        walk.step()
        return scans(big_redis) - before

    assert calls_of_a_step_after(0) == walk.calls_per_step  # the first step
    assert calls_of_a_step_after(0.2) == walk.calls_per_step  # early: never less than a step's
    assert calls_of_a_step_after(3.4) == 3 * walk.calls_per_step
    assert calls_of_a_step_after(60) == CATCH_UP_STEPS * walk.calls_per_step


def test_a_slow_whole_discovery_runs_at_most_a_tenth_of_the_time():
    from queues.discovery_pass import WholeDiscovery

    now = [100.0]

    def slow_discover():  # a SCAN of every Cluster primary: seconds at 10,000 queues
        now[0] += 3.0
        return [ref("x")]

    walk = WholeDiscovery(slow_discover, min_pass_s=10, clock=lambda: now[0])
    assert walk.step() and walk.last_pass_s == 3.0
    now[0] = 100.0 + 29.9
    assert not walk.step()  # 30 s after the last began: not sooner
    now[0] = 100.0 + 30.0
    assert not walk.step() and walk.passes == 2


def test_a_viewed_queue_is_listed_at_once_when_it_is_a_queue(big_redis, queues):
    """A page opened on a queue the walk has not met yet (a new tenant's) lists it at once, if
    it is a queue under a prefix the walk covers; a made-up name, another prefix or another
    connection is not listed, and the end of the pass under way does not drop it."""
    now = [1000.0]
    walk = walker(big_redis, clock=lambda: now[0])
    walk.min_pass_s = 3600  # resting after its first pass: only adopting lists a new queue
    while walk.passes == 0:
        walk.step()
    make_queue(big_redis, "opened")
    stranger = [ref("made-up"), QueueRef("default", "other", "opened"), QueueRef("elsewhere", "bull", "opened")]
    assert not walk.step() and ref("opened") not in walk.queues
    assert walk.adopt([ref("opened"), *stranger])
    assert walk.queues == [ref("a"), ref("b"), ref("c"), ref("opened")]
    assert not walk.adopt([ref("opened")])  # listed already: nothing read again
    now[0] += 3600
    while walk.passes < 2:
        walk.step()
    assert ref("opened") in walk.queues


@pytest.mark.django_db
def test_the_monitor_follows_a_queue_a_viewer_opened_before_discovery_found_it(private_redis, settings, monkeypatch):
    """The wiring: a viewer's nudge (``announce_watching``, as a page's socket sends it) for a
    queue discovery has not listed makes the next discovery step follow it and publish the
    list with it, though the walk rests; a nudge for a name that is not a queue changes nothing."""
    from dashboard.monitor.loop import Monitor

    r = private_redis
    make_queue(r, "old")
    monkeypatch.setattr(discovering, "DISCOVERY_INTERVAL", 3600)  # the walk rests after its first pass
    monitor = Monitor(tick=1.0, name="viewed-test")
    monitor.intake.start()
    try:
        cursors: dict = {}
        monitor.discover(cursors)
        assert ref("old") in monitor.states
        make_queue(r, "opened")
        # The intake's subscriber is listening (a channel keeps nothing for later).
        wait_for(lambda: r.pubsub_numsub(dash_redis.WATCHED_CHANNEL)[0][1] > 0, timeout=10)
        for name in ("opened", "made-up"):
            dash_redis.announce_watching(r, ref(name))

        def both_nudges_taken() -> bool:
            monitor.intake.take(0.1, set())
            return len(monitor.intake.unlisted_viewed) == 2

        wait_for(both_nudges_taken, timeout=10)
        monitor.discover(cursors)
        assert ref("opened") in monitor.states and ref("made-up") not in monitor.states
        assert dash_redis.read_queue_list(r, "default") == [ref("old"), ref("opened")]
    finally:
        monitor.intake.stop()
