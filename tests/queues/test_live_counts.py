"""Counts kept current from events between snapshots (queues.live_counts)."""

import pytest
import redis

from queues.events import Event
from queues.keep_counts import KEEP_ALL, keep_count
from queues.keys import QueueRef
from queues.live_counts import JobStates, LiveCounts
from queues.redis.events import EventsFollower
from queues.redis.snapshot import read_snapshots
from queues.snapshot import QueueSnapshot
from tests.support.servers import node_available, run_node

Q = QueueRef("default", "bull", "counted")
STATES = ("waiting", "active", "delayed", "prioritized", "waiting-children", "completed", "failed")


def snap(last_event_id="10-0", oldest=None, **counts):
    return QueueSnapshot(
        queue=Q,
        counts={s: counts.get(s.replace("-", "_"), 0) for s in STATES},
        paused=False,
        schedulers=0,
        oldest_waiting_id=oldest,
        oldest_waiting_ts=1000 if oldest else None,
        last_event_id=last_event_id,
    )


def ev(ms, name, job="", **fields):
    return Event(Q, f"{ms}-0", name, {"jobId": job, **fields} if job else fields)


def play(live, known, *events):
    changed = set()
    for e in events:
        changed |= live.apply(e, known)
    return changed


def test_a_job_moves_from_count_to_count_as_its_events_say():
    live, known = LiveCounts(snap()), JobStates()
    assert play(live, known, ev(11, "added", "1", jobName="x"), ev(11, "waiting", "1")) == {"waiting", "prioritized"}
    assert live.counts["waiting"] == 1
    play(live, known, ev(12, "active", "1", prev="waiting"))
    assert (live.counts["waiting"], live.counts["active"]) == (0, 1)
    assert play(live, known, ev(13, "failed", "1", prev="active", failedReason="boom")) == {"active", "failed"}
    assert (live.counts["active"], live.counts["failed"]) == (0, 1)
    play(live, known, ev(14, "waiting", "1", prev="failed"))  # retried by an operator
    assert (live.counts["failed"], live.counts["waiting"]) == (0, 1)
    play(live, known, ev(15, "removed", "1", prev="wait"))  # the name of the list it was in
    assert live.counts["waiting"] == 0
    play(live, known, ev(15, "added", "p"), ev(15, "waiting", "p"))
    play(live, known, ev(15, "removed", "p", prev="prioritized"))  # ...or of the set
    assert live.counts["prioritized"] == 0 and live.counts["waiting"] == 1
    play(live, known, ev(16, "added", "2"), ev(16, "delayed", "2", delay="99999"))
    assert live.counts["delayed"] == 1
    moves, lost = live.take_moves()
    assert moves == [("1", "active", "failed"), ("1", "failed", "waiting")] and not lost


def test_events_already_in_the_snapshot_are_not_counted_twice():
    live, known = LiveCounts(snap(last_event_id="20-0", active=1, failed=3)), JobStates()
    changed = play(live, known, ev(19, "active", "7", prev="waiting"), ev(20, "failed", "6", prev="active"))
    assert live.counts == snap(active=1, failed=3).counts
    # ...but the lists still hear of them: a list read before the snapshot lacks job 6.
    assert changed == {"waiting", "prioritized", "active", "failed"}
    assert live.take_moves()[0] == [("6", "active", "failed")]  # finished sets only
    play(live, known, ev(21, "failed", "7", prev="active"))  # known from its earlier event
    assert (live.counts["active"], live.counts["failed"]) == (0, 4)


def test_a_finished_set_that_did_not_grow_is_treated_as_capped_until_it_does():
    live, known = LiveCounts(snap(failed=100, active=5)), JobStates()
    play(live, known, *(ev(11 + i, "failed", str(i), prev="active") for i in range(3)))
    assert live.counts["failed"] == 103
    live.reset(snap(last_event_id="20-0", failed=100, active=2))  # removeOnFail trimmed it
    play(live, known, ev(21, "failed", "a", prev="active"))
    assert (live.counts["failed"], live.counts["active"]) == (100, 1)
    live.reset(snap(last_event_id="30-0", failed=101))  # retention was raised
    play(live, known, ev(31, "failed", "b", prev="active"))
    assert live.counts["failed"] == 102


def test_a_finished_set_is_clamped_to_the_keep_count_its_jobs_options_give():
    live, known = LiveCounts(snap(completed=5, active=30)), JobStates()
    live.set_keep("completed", 20)
    play(live, known, *(ev(11 + i, "completed", str(i), prev="active") for i in range(30)))
    assert live.counts["completed"] == 20  # trimmed in the same script, no event says so
    play(live, known, ev(50, "waiting", "29", prev="completed"))  # retried by an operator
    assert live.counts["completed"] == 19
    play(live, known, ev(51, "completed", "29", prev="active"))
    assert live.counts["completed"] == 20
    live.reset(snap(last_event_id="60-0", completed=25))  # other jobs keep more: reads win
    play(live, known, ev(61, "completed", "x", prev="active"))
    assert live.counts["completed"] == 26
    live.set_keep("completed", KEEP_ALL)
    play(live, known, ev(62, "completed", "y", prev="active"))
    assert live.counts["completed"] == 27


@pytest.mark.parametrize(
    "opts, completed, failed",
    [
        ({"removeOnComplete": {"count": 20}, "removeOnFail": 10}, 20, 10),
        ({"removeOnComplete": True, "removeOnFail": False}, 0, KEEP_ALL),
        ({"removeOnComplete": {"age": 60, "count": 5}, "removeOnFail": {}}, None, KEEP_ALL),  # age trims by time
        ({"attempts": 3}, None, None),  # the worker's default applies: not stored anywhere
        ({"removeOnComplete": {"count": -1}, "removeOnFail": "x"}, KEEP_ALL, None),
    ],
)
def test_keep_count_reads_the_options_as_bullmq_does(opts, completed, failed):
    assert (keep_count(opts, "completed"), keep_count(opts, "failed")) == (completed, failed)


def test_cleaned_asks_for_a_snapshot_and_waiting_falls_back_to_prioritized():
    live, known = LiveCounts(snap(prioritized=2)), JobStates()
    play(live, known, ev(11, "active", "p", prev="waiting"))
    assert (live.counts["prioritized"], live.counts["waiting"], live.counts["active"]) == (1, 0, 1)
    play(live, known, ev(12, "cleaned", count="5"))
    assert live.needs_snapshot


def test_oldest_waiting_age_follows_the_jobs_that_are_still_waiting():
    live, known = LiveCounts(snap(waiting=1, oldest="old")), JobStates()
    assert live.snapshot(5000).oldest_waiting_ts == 1000
    play(live, known, ev(2000, "waiting", "n1"), ev(3000, "waiting", "n2"))
    play(live, known, ev(4000, "active", "old", prev="waiting"))
    assert live.snapshot(5000).oldest_waiting_ts == 2000
    play(live, known, ev(4100, "active", "n1", prev="waiting"), ev(4200, "active", "n2", prev="waiting"))
    assert live.snapshot(5000).oldest_waiting_ts is None


def test_job_memory_is_bounded():
    known = JobStates(capacity=3)
    for i in range(10):
        known.set((Q, str(i)), "waiting")
    assert known.get((Q, "9")) == "waiting" and known.get((Q, "0")) is None


@pytest.mark.node
@pytest.mark.skipif(not node_available(), reason="needs Node.js and npm")
def test_counts_from_real_bullmq_events_match_a_fresh_snapshot(redis_prefix):
    """Real Node BullMQ: waiting jobs with retries, a failing worker, completions. Counts
    from a snapshot plus the events after it equal a snapshot taken at the end."""
    url, q, redis_client = redis_prefix.url, redis_prefix.queue("counted"), redis_prefix.client
    run_node("produce.mjs", "add", url, q.name, "12", "", q.prefix)  # attempts 3: each is retried twice
    base = read_snapshots(redis_client, [q])[0]
    assert base.counts["waiting"] == 12 and base.last_event_id
    follower = EventsFollower(redis.Redis.from_url(url), block_ms=100)
    follower.follow([q], {q: base.last_event_id})
    live, known = LiveCounts(base), JobStates()
    run_node("produce.mjs", "fail", url, q.name, "5", "", q.prefix)
    run_node("produce.mjs", "complete", url, q.name, "7", "", q.prefix)
    while True:
        events, gaps = follower.read()
        assert not gaps
        if not events:
            break
        for e in events:
            live.apply(e, known)
    final = read_snapshots(redis_client, [q])[0]
    assert live.counts == final.counts
    assert final.counts["failed"] >= 5 and final.counts["completed"] >= 7


def test_the_one_minute_rate_slides_across_minute_boundaries():
    from queues.rates import MINUTE_MS, QueueSeries

    series = QueueSeries()
    start = 100 * MINUTE_MS
    series.bucket(start).failed = 60  # a steady 60/min in the minute before
    assert series.per_minute("failed", now_ms=start + MINUTE_MS + 1000, window_min=1) > 55  # 1 s into the next
    series.bucket(start + MINUTE_MS).failed = 30  # ...and 30 in the first half of this one
    assert series.per_minute("failed", now_ms=start + MINUTE_MS + MINUTE_MS // 2, window_min=1) == 60
    assert series.per_minute("failed", now_ms=start + 3 * MINUTE_MS, window_min=1) == 0


def test_oldest_waiting_counts_from_when_a_job_became_ready_not_from_its_creation():
    live, known = LiveCounts(snap(delayed=1)), JobStates()
    # Created a day before, promoted at 90_000: ready since then, whatever its timestamp says.
    play(live, known, ev(90_000, "waiting", "d1", prev="delayed"))
    estimate = live.snapshot(95_000)
    assert estimate.oldest_waiting_ts == 90_000 and not estimate.oldest_waiting_bound
    assert estimate.oldest_waiting_age_ms == 5_000


def test_waiting_jobs_not_seen_entering_make_the_age_a_bound_from_the_first_event():
    base = snap(waiting=2, oldest="a")
    base.oldest_waiting_ts, base.oldest_waiting_bound = 7_000, True  # read from a lifo tail, say
    live, known = LiveCounts(base), JobStates()
    play(live, known, ev(8_000, "waiting", "n1"), ev(8_500, "active", "a", prev="waiting"))
    estimate = live.snapshot(10_000)
    # "a" left; the other job of the snapshot entered before the first event followed (8_000).
    assert (estimate.oldest_waiting_ts, estimate.oldest_waiting_bound) == (8_000, True)


def test_prioritized_jobs_have_an_age_too():
    live, known = LiveCounts(snap()), JobStates()
    play(live, known, ev(3_000, "waiting", "p1"), ev(3_100, "waiting", "p2"))
    live.counts["waiting"], live.counts["prioritized"] = 0, 2  # events do not tell them apart
    assert live.snapshot(4_000).oldest_waiting_age_ms == 1_000


def test_a_stalled_job_back_in_wait_is_ready_since_its_recovery_and_other_events_do_not_move_it():
    live, known = LiveCounts(snap(active=1)), JobStates()
    known.set((Q, "s1"), "active")
    # moveStalledJobsToWait: `waiting` (prev active), then `stalled` for the same job.
    play(live, known, ev(5_000, "waiting", "s1", prev="active"), ev(5_000, "stalled", "s1"))
    play(live, known, ev(6_000, "duplicated", "s1"))
    estimate = live.snapshot(9_000)
    assert (estimate.oldest_waiting_ts, estimate.oldest_waiting_bound) == (5_000, False)


def test_a_kind_that_counts_a_paused_queue_s_ready_jobs_apart_keeps_them_there():
    """BullMQ on PostgreSQL: a paused queue's ready jobs are under ``paused`` (ids without a time)."""
    base = QueueSnapshot(
        queue=Q,
        counts={**dict.fromkeys(STATES, 0), "paused": 2},
        paused=True,
        schedulers=0,
        oldest_waiting_id="1",
        oldest_waiting_ts=1000,
        last_event_id="10",
    )
    live, known = LiveCounts(base), JobStates()

    def pg(event_id, name, job="", **fields):
        return Event(Q, str(event_id), name, {"jobId": job, **fields} if job else fields, at_ms=5000 + event_id)

    play(live, known, pg(11, "added", "3"), pg(12, "waiting", "3"))
    assert (live.counts["paused"], live.counts["waiting"]) == (3, 0)
    assert live.snapshot(9000).oldest_waiting_ts == 1000  # ready jobs, though paused
    play(live, known, pg(13, "resumed"))
    assert (live.counts["paused"], live.counts["waiting"]) == (0, 3)
    play(live, known, pg(14, "active", "1", prev="waiting"))
    assert live.counts["waiting"] == 2
    play(live, known, pg(15, "paused"), pg(16, "removed", "3", prev="wait"))
    assert (live.counts["paused"], live.counts["waiting"], live.counts["active"]) == (1, 0, 1)
