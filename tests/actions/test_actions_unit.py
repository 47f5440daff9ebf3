"""Unit tests of the actions domain: fingerprints, filters, previews, error groups, export, the
bulk engine's pacing/cancel/resume with a fake clock. Real Redis (a database of each test's
own); jobs are written in BullMQ 6's layout by ``seed_failed`` (the interop module checks the
same code paths against jobs failed by real Node workers)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from queues import dead_letters
from queues.bulk import BulkPlan, MemoryStore, Progress
from queues.error_groups import fingerprint, normalize
from queues.keys import QueueRef
from queues.redact import Redactor
from queues.redis import actions, redrive
from queues.redis.bulk import BulkLock, RedisStore, run_bulk
from queues.redis.error_groups import error_groups
from queues.redis.export import iter_jobs_csv, iter_jobs_jsonl
from queues.redis.selection import matching_ids, preview
from queues.selection import JobFilter
from tests.support.seeding import seed_failed

Q = QueueRef("default", "bull", "unit")


@pytest.fixture
def r(redis_client):
    return redis_client


# --- fingerprints -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "a,b",
    [
        ("Connection to 10.0.0.7:5432 timed out after 3001 ms", "Connection to 10.0.0.9:5432 timed out after 12 ms"),
        ("User 8f0c2a8e-1b2c-4d3e-9f00-0123456789ab not found", "User 00000000-1111-2222-3333-444444444444 not found"),
        ('payment 4711 failed: "insufficient funds"', 'payment 12 failed: "card expired"'),
        ("Order ord_12345 for cus_8f3K2 declined", "Order ord_9 for cus_77aa declined"),
        ("bad object at 0x7ffe12ab", "bad object at 0xdeadbeef"),
        ("commit 3f9a2c1e7b8d failed", "commit a1b2c3d4e5f6 failed"),
        ("mail to bob@example.com bounced", "mail to alice@mail.example.org bounced"),
        ("GET https://api.example.com/v1/u?id=3 returned 503", "GET https://api.example.com/v1/u?id=4 returned 502"),
        ("Timeout at 2026-11-30T02:00:00Z", "Timeout at 2025-01-01T13:14:15.123+01:00"),
        ("first line 1\n  at a (x.js:1:1)", "first line 2\n  at b (y.js:9:9)"),
    ],
)
def test_fingerprint_ignores_what_varies(a, b):
    assert fingerprint(a) == fingerprint(b), (normalize(a), normalize(b))


@pytest.mark.parametrize(
    "a,b",
    [
        ("Connection refused", "Connection reset"),
        ("TypeError: x is undefined", "RangeError: x is undefined"),
        ("payment failed", "refund failed"),
    ],
)
def test_fingerprint_keeps_what_differs(a, b):
    assert fingerprint(a) != fingerprint(b)


def test_normalize_reads_well():
    assert (
        normalize("Connection to 10.0.0.7:5432 timed out after 3001 ms") == "Connection to <ip> timed out after <n> ms"
    )
    assert normalize("") == ""


# --- dlq source, ids -----------------------------------------------------------------------------


def test_dlq_source_precedence():
    assert dead_letters.dlq_source(dlq_name="orders-dlq") == "orders"
    assert dead_letters.dlq_source(dlq_name="orders.dlq") == "orders"
    assert dead_letters.dlq_source(dlq_name="graveyard") is None
    assert dead_letters.dlq_source(dlq_name="graveyard", mapping={"graveyard": "billing"}) == "billing"
    assert dead_letters.dlq_source(dlq_name="orders-dlq", mapping={"orders-dlq": "x"}) == "x"
    assert dead_letters.dlq_source(dlq_name="orders-dlq", mapping={"orders-dlq": "a:b"}) is None  # not a queue name
    assert dead_letters.dlq_source(dlq_name="-dlq") is None
    assert dead_letters.dlq_source(dlq_name="dead-x", patterns=("dead-*",)) == "x"


def test_redrive_ids_are_deterministic_and_one_to_one():
    ids = ["1", "a:b", "a%3Ab", "a%b", "repeat:x:1"]
    made = [redrive.redrive_job_id(dlq_name="q-dlq", job_id=i) for i in ids]
    assert len(set(made)) == len(ids) and all(":" not in m and not m.isdigit() for m in made)
    assert made[0] == redrive.redrive_job_id(dlq_name="q-dlq", job_id="1") == "redrive-q-dlq-1"


# --- filters and previews -----------------------------------------------------------------------


def test_filter_validation_messages():
    with pytest.raises(ValueError, match="states"):
        JobFilter(state="active")
    with pytest.raises(ValueError, match="finished"):
        JobFilter(state="delayed", finished_from_ms=1)
    with pytest.raises(ValueError, match="after"):
        JobFilter(finished_from_ms=5, finished_to_ms=1)


def test_matching_is_oldest_first_and_fixed_at_confirmation(r):
    seed_failed(
        r,
        Q,
        30,
        reason=lambda i: f"timeout after {i} ms" if i % 3 else f"card {i} declined",
        name=lambda i: "pay" if i % 2 else "mail",
    )
    before = 1_000_000 + 20  # jobs 21..30 finished after confirmation
    assert list(matching_ids(r, queue=Q, filt=JobFilter(), before_ms=before)) == [str(i) for i in range(1, 21)]
    declined = JobFilter(fingerprint=fingerprint("card 1 declined"))
    assert list(matching_ids(r, queue=Q, filt=declined, before_ms=before)) == ["1", "4", "7", "10", "13", "16", "19"]
    named = JobFilter(name="pay", reason_contains="TIMEOUT")
    assert list(matching_ids(r, queue=Q, filt=named, before_ms=before)) == ["2", "6", "8", "12", "14", "18", "20"]
    ranged = JobFilter(finished_from_ms=1_000_005, finished_to_ms=1_000_007)
    assert list(matching_ids(r, queue=Q, filt=ranged, before_ms=before)) == ["6", "7", "8"]

    p = preview(r, queue=Q, filt=JobFilter(), before_ms=before, sample=3)
    assert p.count == 20 and [j.id for j in p.sample] == ["1", "2", "3"]
    p = preview(r, queue=Q, filt=declined, before_ms=before, sample=2)
    assert p.count == 7 and [j.id for j in p.sample] == ["1", "4"] and p.scanned == 20


def test_scan_cursor_survives_equal_scores_and_jobs_leaving(r):
    # 1200 jobs with the same finish time: the page offset is recomputed from member order.
    pipe = r.pipeline()
    for i in range(1200):
        pipe.hset(Q.job_key(f"j{i:04}"), mapping={"name": "n", "failedReason": "x", "timestamp": 1})
        pipe.zadd(Q.key("failed"), {f"j{i:04}": 5})
    pipe.execute()
    store = MemoryStore()
    plan = BulkPlan(queue=Q, action="discard", before_ms=10, filt=JobFilter(name="n"), rate=None)
    progress = run_bulk(r, plan=plan, store=store)
    assert (progress.state, progress.moved, progress.skipped) == ("done", 1200, 0)
    assert r.zcard(Q.key("failed")) == 0


# --- error groups --------------------------------------------------------------------------------


def test_error_groups_count_and_sample(r):
    seed_failed(r, Q, 10, reason=lambda i: f"timeout after {i} ms" if i < 7 else f"card {i} declined")
    groups = error_groups(r, queue=Q)
    assert groups.complete and groups.total == 10
    top, second = groups.groups
    assert (top.count, top.normalized, top.first_seen_ms, top.last_seen_ms) == (
        7,
        "timeout after <n> ms",
        1_000_000,
        1_000_006,
    )
    assert top.sample_job_id == "7" and "w.js:6" in top.sample_stack  # the newest job of the group
    assert (second.count, second.fingerprint) == (3, fingerprint("card 1 declined"))
    partial = error_groups(r, queue=Q, scan_limit=4, batch=3)
    assert partial.scanned == 4 and not partial.complete and partial.groups[0].count == 3


# --- export --------------------------------------------------------------------------------------


def test_export_streams_redacted_jsonl_and_csv(r):
    seed_failed(r, Q, 3, data=lambda i: {"i": i, "password": "hunter2", "note": "=HYPERLINK(1)"})
    chunks = list(iter_jobs_jsonl(r, queue=Q, filt=JobFilter(), before_ms=2_000_000, redactor=Redactor()))
    assert len(chunks) == 1  # one chunk per page read from Redis
    lines = chunks[0].splitlines(keepends=True)
    assert len(lines) == 3 and all(line.endswith("\n") for line in lines)
    first = json.loads(lines[0])
    assert first["id"] == "1" and first["data"]["password"] == "[redacted]" and first["attemptsMade"] == 2
    assert "hunter2" not in "".join(lines)
    rows = list(
        csv.reader(
            io.StringIO("".join(iter_jobs_csv(r, queue=Q, filt=JobFilter(), before_ms=2_000_000, redactor=Redactor())))
        )
    )
    assert rows[0][0] == "id" and len(rows) == 4
    assert "hunter2" not in json.dumps(rows) and json.loads(rows[1][rows[0].index("data")])["note"] == "=HYPERLINK(1)"
    assert rows[1][rows[0].index("failedReason")] == "boom 0"


# --- the bulk engine: pacing, cancel, resume, lock ----------------------------------------------


class FakeTime:
    def __init__(self):
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_paced_bulk_retry_keeps_the_rate_and_reports_progress(r):
    seed_failed(r, Q, 250)
    t = FakeTime()
    seen: list[Progress] = []
    plan = BulkPlan(queue=Q, action="retry", before_ms=2_000_000, filt=JobFilter(), rate=100)
    final = run_bulk(r, plan=plan, store=MemoryStore(), on_progress=seen.append, clock=t.clock, sleep=t.sleep)
    assert plan.batch_size == 25
    assert t.sleeps == [pytest.approx(0.25)] * 10  # 25 jobs per 0.25 s = 100 jobs/s
    assert (final.state, final.moved, final.skipped, final.remaining, final.percent) == ("done", 250, 0, 0, 100.0)
    assert final.rate == pytest.approx(100)
    assert [p.moved for p in seen[:3]] == [25, 50, 75] and seen[2].remaining == 175
    assert seen[4].rate == pytest.approx(100) and seen[4].eta_s == pytest.approx(125 / 100)  # 125 left
    assert r.llen(Q.key("wait")) == 250 and r.hget(Q.job_key("1"), "atm") is None
    assert [m.decode() for m in r.lrange(Q.key("wait"), -3, -1)] == ["3", "2", "1"]  # oldest runs first


def test_a_filter_that_reads_jobs_counts_its_total_as_it_goes_past_the_count_limit(r):
    # 1,000 failed jobs, every tenth named "a": counting them all before a task paced at 100/s
    # would read all 1,000 at full speed first. With a limit of 100, the total is left to the scan.
    # The last 100 failed after the confirmation (before_ms): outside the task, and outside what it
    # says it will examine.
    seed_failed(r, Q, 1000, name=lambda i: "a" if i % 10 == 0 else "b")
    plan = BulkPlan(queue=Q, action="retry", before_ms=1_000_900, filt=JobFilter(name="a"), rate=100)
    t, saved, seen = FakeTime(), [], []

    class Recording(MemoryStore):
        def save(self, progress):
            saved.append(progress.copy())
            super().save(progress)

    r.config_resetstat()
    cancel = iter([True])
    run_bulk(
        r,
        plan=plan,
        store=Recording(),
        should_cancel=lambda: next(cancel),
        count_limit=100,
        clock=t.clock,
        sleep=t.sleep,
    )
    stats = r.info("commandstats")
    reads = sum(stats.get(f"cmdstat_{c}", {}).get("calls", 0) for c in ("hget", "hmget", "hgetall"))
    assert 0 < reads <= 100, stats  # the jobs counting read before the first batch: at most the limit
    first = saved[0]
    assert (first.total, first.in_state, first.remaining, first.percent) == (None, 900, None, 0.0)

    # A fresh store: the same plan run to its end.
    final = run_bulk(
        r, plan=plan, store=MemoryStore(), on_progress=seen.append, count_limit=100, clock=t.clock, sleep=t.sleep
    )
    running = [p for p in seen if p.state == "running"]
    assert running and all(p.total is None and p.remaining is None and p.eta_s is None for p in running)
    percents = [p.percent for p in running]
    assert percents == sorted(percents) and 0 < percents[0] and percents[-1] < 100
    assert running[-1].examined == 900  # the scan passed exactly what it said it would
    assert (final.state, final.total, final.moved, final.skipped, final.percent, final.remaining) == (
        "done",
        90,
        90,
        0,
        100.0,
        0,
    )
    assert r.llen(Q.key("wait")) == 90 and r.zcard(Q.key("failed")) == 910

    # Within the limit the total is exact from the start, as before.
    seed_failed(r, QueueRef("default", "bull", "small"), 50, name=lambda i: "a" if i % 2 else "b")
    small = BulkPlan(
        queue=QueueRef("default", "bull", "small"),
        action="retry",
        before_ms=2_000_000,
        filt=JobFilter(name="a"),
        rate=None,
    )
    store = Recording()
    saved.clear()
    assert run_bulk(r, plan=small, store=store, count_limit=100).moved == 25 and saved[0].total == 25


def test_unpaced_bulk_never_sleeps(r):
    seed_failed(r, Q, 1100)
    t = FakeTime()
    final = run_bulk(
        r,
        plan=BulkPlan(queue=Q, action="retry", before_ms=2_000_000, filt=JobFilter(), rate=None),
        store=MemoryStore(),
        clock=t.clock,
        sleep=t.sleep,
    )
    assert t.sleeps == [] and final.moved == 1100


def test_cancel_keeps_what_moved_and_a_cancelled_task_stays_cancelled(r):
    seed_failed(r, Q, 100)
    store = RedisStore(r, "test:progress")
    calls = iter([False, False, True])
    plan = BulkPlan(queue=Q, action="retry", before_ms=2_000_000, filt=JobFilter(), rate=40)  # 10 per batch
    t = FakeTime()
    final = run_bulk(r, plan=plan, store=store, should_cancel=lambda: next(calls), clock=t.clock, sleep=t.sleep)
    assert (final.state, final.moved, final.remaining) == ("cancelled", 20, 80)
    assert r.zcard(Q.key("failed")) == 80 and r.llen(Q.key("wait")) == 20
    again = run_bulk(r, plan=plan, store=store, clock=t.clock, sleep=t.sleep)
    assert again.state == "cancelled" and r.zcard(Q.key("failed")) == 80


def test_resume_after_an_interrupted_batch_counts_every_job_once(r):
    seed_failed(r, Q, 60)
    plan = BulkPlan(queue=Q, action="retry", before_ms=2_000_000, filt=JobFilter(), rate=40)
    store = MemoryStore()
    t = FakeTime()
    # Simulate a crash right after the journal write of the second batch and its Redis work:
    # the store holds the first batch's counts plus the second batch in flight.
    run_bulk(r, plan=plan, store=store, should_cancel=iter([False, True]).__next__, clock=t.clock, sleep=t.sleep)
    crashed = store.load()
    crashed.state = "running"
    crashed.in_flight = [[str(i), "failed"] for i in range(11, 21)]
    for i in range(11, 16):  # half of the in-flight batch reached Redis before the crash
        actions.job_retry(r, queue=Q, job_id=str(i))
    store.save(crashed)
    final = run_bulk(r, plan=plan, store=store, clock=t.clock, sleep=t.sleep)
    assert (final.state, final.moved, final.skipped) == ("done", 60, 0)
    waiting = [m.decode() for m in r.lrange(Q.key("wait"), 0, -1)]
    assert sorted(waiting, key=int) == [str(i) for i in range(1, 61)]


def test_explicit_selection_skips_and_counts_what_it_cannot_touch(r):
    seed_failed(r, Q, 5)
    r.hset(Q.job_key("busy"), mapping={"name": "x", "timestamp": 1})
    r.lpush(Q.key("active"), "busy")
    plan = BulkPlan(queue=Q, action="retry", before_ms=2_000_000, job_ids=("1", "busy", "3", "gone", "5"), rate=None)
    final = run_bulk(r, plan=plan, store=MemoryStore())
    assert (final.moved, final.skipped, final.skipped_by) == (3, 2, {"wrong_state": 2})
    assert r.zcard(Q.key("failed")) == 2


def test_one_bulk_task_per_queue(r):
    a = BulkLock(r, queue=Q, owner="a", ttl_ms=10000)
    b = BulkLock(r, queue=Q, owner="b", ttl_ms=10000)
    assert a.acquire() and not b.acquire() and b.holder() == "a"
    assert a.extend() and not b.extend()
    b.release()
    assert a.holder() == "a"
    a.release()
    assert a.holder() is None and b.acquire()


def test_a_runner_that_lost_its_lock_stops(r):
    from queues.redis.bulk import LockLost

    seed_failed(r, Q, 10)
    lock = BulkLock(r, queue=Q, owner="me")
    with pytest.raises(LockLost):
        run_bulk(
            r,
            plan=BulkPlan(queue=Q, action="retry", before_ms=2_000_000, filt=JobFilter()),
            store=MemoryStore(),
            lock=lock,
        )  # never acquired
    assert r.zcard(Q.key("failed")) == 10


def test_plan_round_trips_and_rejects_nonsense():
    plan = BulkPlan(
        queue=Q,
        action="redrive",
        before_ms=5,
        filt=JobFilter(state="waiting", name="x"),
        rate=None,
        dlq_mapping=(("g", "orders"),),
        payload_field="data",
    )
    assert BulkPlan.from_dict(json.loads(json.dumps(plan.as_dict()))) == plan
    with pytest.raises(ValueError, match="cannot act on"):
        BulkPlan(queue=Q, action="promote", before_ms=5, filt=JobFilter())
    with pytest.raises(ValueError, match="either"):
        BulkPlan(queue=Q, action="retry", before_ms=5)
    with pytest.raises(ValueError, match="rate"):
        BulkPlan(queue=Q, action="retry", before_ms=5, filt=JobFilter(), rate=0)
    with pytest.raises(ValueError, match="Unknown"):
        BulkPlan(queue=Q, action="obliterate", before_ms=5, filt=JobFilter())


def test_bulk_retry_keeps_priorities_and_steps_around_orphans(r):
    seed_failed(r, Q, 6)
    r.hset(Q.job_key("2"), "priority", 3)
    r.zadd(Q.key("failed"), {"ghost": 1})  # a member without a job hash, oldest of all
    final = run_bulk(
        r, plan=BulkPlan(queue=Q, action="retry", before_ms=2_000_000, filt=JobFilter(), rate=None), store=MemoryStore()
    )
    assert (final.moved, final.skipped, final.skipped_by) == (6, 1, {"missing": 1})
    assert [m.decode() for m in r.zrange(Q.key("prioritized"), 0, -1)] == ["2"]
    assert sorted(m.decode() for m in r.lrange(Q.key("wait"), 0, -1)) == ["1", "3", "4", "5", "6"]
    assert r.zrange(Q.key("failed"), 0, -1) == [b"ghost"]  # never pushed to wait by our hand
    assert all(r.hmget(Q.job_key(str(i)), ["atm", "ats", "finishedOn"]) == [None, None, None] for i in range(1, 7))


def test_the_fast_path_resets_counters_like_the_per_job_path(r):
    seed_failed(r, Q, 1500)
    r.hset(Q.job_key("1200"), "stc", 2)
    exists_calls = lambda: r.info("commandstats").get("cmdstat_exists", {}).get("calls", 0)  # noqa: E731
    before = exists_calls()
    final = run_bulk(
        r, plan=BulkPlan(queue=Q, action="retry", before_ms=2_000_000, filt=JobFilter(), rate=None), store=MemoryStore()
    )
    assert final.moved == 1500 and r.zcard(Q.key("failed")) == 0
    assert r.hmget(Q.job_key("1200"), ["atm", "ats", "stc", "failedReason"]) == [None, None, None, None]
    assert r.xlen(Q.key("events")) == 1500  # one "waiting" event per job, as BullMQ emits them
    assert exists_calls() - before < 10  # reprocessJob (EXISTS per job) was not needed: the fast path ran


@pytest.mark.parametrize("state, field", [("failed", "failedReason"), ("completed", "returnvalue")])
def test_the_fast_path_without_the_reset_keeps_the_counters_as_move_jobs_to_wait_does(r, state, field):
    seed_failed(r, Q, 1200)
    if state == "completed":  # the same jobs, finished with a return value instead
        for i in range(1, 1201):
            r.hset(Q.job_key(str(i)), field, '"ok"')
        r.rename(Q.key("failed"), Q.key("completed"))
    r.hset(Q.job_key("1100"), "stc", 2)
    final = run_bulk(
        r,
        plan=BulkPlan(
            queue=Q, action="retry", before_ms=2_000_000, filt=JobFilter(state=state), rate=None, reset_counters=False
        ),
        store=MemoryStore(),
    )
    assert final.moved == 1200 and r.zcard(Q.key(state)) == 0 and r.llen(Q.key("wait")) == 1200
    assert r.hmget(Q.job_key("1100"), ["atm", "ats", "stc"]) == [b"2", b"2", b"2"]
    assert r.hmget(Q.job_key("1100"), ["finishedOn", "processedOn", field]) == [None] * 3


def test_dlq_redrive_walks_the_waiting_list_past_jobs_that_stay(r):
    dlq, source = QueueRef("default", "bull", "orders-dlq"), QueueRef("default", "bull", "orders")
    r.hset(source.key("meta"), "opts.maxLenEvents", 10000)  # the source queue exists (a redrive never creates one)
    for i in range(30):  # LPUSH: job 0 is the oldest, at the tail
        r.hset(
            dlq.job_key(str(i)),
            mapping={
                "name": "y" if i in (3, 17, 29) else "x",
                "timestamp": 100 + i,
                "data": json.dumps({"source": "orders", "i": i}),
                "opts": "{}",
            },
        )
        r.lpush(dlq.key("wait"), str(i))
    for i in (0, 6, 7, 20, 28):  # copies of an earlier redrive, still delayed in the source: not redriven twice
        earlier = redrive.redrive_job_id(dlq_name=dlq.name, job_id=str(i))
        r.hset(source.job_key(earlier), "name", "old")
        r.zadd(source.key("delayed"), {earlier: 5000 * 0x1000})
    t = FakeTime()
    plan = BulkPlan(queue=dlq, action="redrive", before_ms=1000, filt=JobFilter(state="waiting", name="x"), rate=20)
    final = run_bulk(r, plan=plan, store=MemoryStore(), clock=t.clock, sleep=t.sleep)
    assert (final.total, final.moved, final.skipped, final.skipped_by) == (27, 22, 5, {"target_exists": 5})
    assert final.kept_by == {"new_id": 22}  # generated ids are not kept: each copy says so
    left = sorted(int(m) for m in r.lrange(dlq.key("wait"), 0, -1))
    assert left == [0, 3, 6, 7, 17, 20, 28, 29]
    assert r.llen(source.key("wait")) == 22
    assert [m.decode() for m in r.lrange(source.key("wait"), -2, -1)] == [
        "redrive-orders-dlq-2",
        "redrive-orders-dlq-1",
    ]


@pytest.mark.parametrize("batch_ran", [True, False])
def test_whole_set_retry_resumes_exactly_from_its_receipt(r, batch_ran):
    from queues.redis.bulk import head_mode
    from queues.redis.bullmq_scripts import scripts_for
    from queues.selection import Cursor

    seed_failed(r, Q, 100)
    plan = BulkPlan(queue=Q, action="retry", before_ms=2_000_000, filt=JobFilter(), rate=40)  # 10 per batch
    assert head_mode(plan)
    store, t = MemoryStore(), FakeTime()
    run_bulk(r, plan=plan, store=store, should_cancel=iter([False, False, True]).__next__, clock=t.clock, sleep=t.sleep)
    crashed = store.load()
    assert (crashed.moved, crashed.head_batch) == (20, 2) and crashed.receipt_key
    # The runner dies during batch 3: journalled, and (maybe) run by Redis, reply never counted.
    crashed.state, crashed.head_batch, crashed.head_pending = "running", 3, True
    store.save(crashed)
    if batch_ran:
        cursor = Cursor.from_dict(crashed.cursor)
        keys = [
            Q.key(s) for s in ("events", "failed", "wait", "meta", "active", "marker", "prioritized", "pc", "paused")
        ]
        reply = scripts_for(r).retry_head(
            keys=keys + [crashed.receipt_key], args=[Q.base, "failed", "failedReason", "1", "(2000000", 0, 10, 3]
        )
        assert reply[:2] == [10, 10] and cursor.member == "20"
    final = run_bulk(r, plan=plan, store=store, clock=t.clock, sleep=t.sleep)
    assert (final.state, final.moved, final.skipped) == ("done", 100, 0)
    assert sorted(int(m) for m in r.lrange(Q.key("wait"), 0, -1)) == list(range(1, 101))
    assert not r.exists(crashed.receipt_key)  # cleaned up at the end


@pytest.mark.parametrize("selection", ["whole set", "explicit ids"])
def test_bulk_retry_honours_lifo_like_job_retry(r, selection):
    # Node's Job.retry RPUSHes a lifo job (the end workers take from); LPUSH for the others.
    seed_failed(r, Q, 6)
    for job_id in ("3", "5"):
        r.hset(Q.job_key(job_id), "opts", '{"attempts":2,"lifo":true}')
    chosen = dict(filt=JobFilter()) if selection == "whole set" else dict(job_ids=tuple(str(i) for i in range(1, 7)))
    final = run_bulk(
        r, plan=BulkPlan(queue=Q, action="retry", before_ms=2_000_000, rate=None, **chosen), store=MemoryStore()
    )
    assert final.moved == 6
    assert [m.decode() for m in r.lrange(Q.key("wait"), 0, -1)] == ["6", "4", "2", "1", "3", "5"]


def test_bulk_edit_retry_patches_each_stored_data_and_resets_counters(r):
    seed_failed(r, Q, 30, data=lambda i: {"i": i, "email": f"bad{i}@", "tags": [], "n": 10**17 + i})
    r.hset(Q.job_key("4"), "data", "{not json")  # one bad job affects no other
    r.hset(Q.job_key("7"), mapping={"opts": '{"attempts":2,"lifo":true}', "stc": 1})
    r.zadd(Q.key("failed"), {"ghost": 1})
    plan = BulkPlan(
        queue=Q,
        action="edit-retry",
        before_ms=2_000_000,
        filt=JobFilter(),
        rate=None,
        patch={"email": "fixed@example.com", "i": None, "retry": {"v": 2}},
    )
    final = run_bulk(r, plan=plan, store=MemoryStore())
    assert (final.moved, final.skipped, final.skipped_by) == (29, 2, {"bad_data": 1, "missing": 1})
    assert json.loads(r.hget(Q.job_key("1"), "data")) == {
        "email": "fixed@example.com",
        "tags": [],
        "n": 10**17,
        "retry": {"v": 2},
    }
    assert r.hget(Q.job_key("4"), "data") == b"{not json" and r.zscore(Q.key("failed"), "4") is not None
    assert all(r.hmget(Q.job_key(str(i)), ["atm", "ats", "stc", "failedReason"]) == [None] * 4 for i in (1, 7, 30))
    assert r.lindex(Q.key("wait"), -1) == b"7"  # lifo: the next to run, as Job.retry puts it


def test_bulk_edit_retry_leaves_a_job_whose_data_changed_after_it_was_read(r):
    from queues.bulk.edit_patch import patched
    from queues.redis.bulk.edit import EDIT_RETRY_BATCH, chunk_digest

    seed_failed(r, Q, 2)
    read = r.hget(Q.job_key("1"), "data")
    sha, new = patched(read, {"x": 1})
    r.hset(Q.job_key("1"), "data", '{"i":0,"changed":true}')  # a producer wrote in between
    keys = [Q.key(s) for s in ("events", "failed", "wait", "meta", "active", "marker", "prioritized", "pc", "paused")]
    assert EDIT_RETRY_BATCH(keys=keys, args=[Q.base, "1", "+inf", chunk_digest([read]), "1", sha, new], client=r) == [
        -4
    ]
    assert r.zscore(Q.key("failed"), "1") is not None and b"changed" in r.hget(Q.job_key("1"), "data")
    with pytest.raises(ValueError, match="merge patch"):
        BulkPlan(queue=Q, action="edit-retry", before_ms=5, filt=JobFilter(), patch={})
    with pytest.raises(ValueError, match="merge patch"):
        BulkPlan(queue=Q, action="retry", before_ms=5, filt=JobFilter(), patch={"a": 1})


def test_bulk_edit_retry_of_a_clean_head_takes_the_fast_road_with_the_same_result(r):
    seed_failed(r, Q, 1500, data=lambda i: {"i": i, "to": "bad@"})
    r.hset(Q.job_key("1200"), "stc", 2)
    zscores = lambda: r.info("commandstats").get("cmdstat_zscore", {}).get("calls", 0)  # noqa: E731
    before = zscores()
    final = run_bulk(
        r,
        plan=BulkPlan(
            queue=Q,
            action="edit-retry",
            before_ms=2_000_000,
            filt=JobFilter(),
            rate=None,
            patch={"to": "ok@example.com"},
        ),
        store=MemoryStore(),
    )
    assert final.moved == 1500 and r.zcard(Q.key("failed")) == 0 and r.llen(Q.key("wait")) == 1500
    assert json.loads(r.hget(Q.job_key("1200"), "data")) == {"i": 1199, "to": "ok@example.com"}
    assert r.hmget(Q.job_key("1200"), ["atm", "ats", "stc", "failedReason", "finishedOn"]) == [None] * 5
    assert r.xlen(Q.key("events")) == 1500  # one "waiting" event per job, as BullMQ emits them
    assert zscores() - before < 10  # the per-job road (ZSCORE per job) was not needed


def test_a_delayed_dead_letter_keeps_its_due_time_and_a_served_delay_is_not_served_again(r):
    import time

    dlq, source = QueueRef("default", "bull", "pay-dlq"), QueueRef("default", "bull", "pay")
    r.hset(source.key("meta"), "opts.maxLenEvents", 10000)
    now = int(time.time() * 1000)
    for job_id, due in (("later-1", now + 3_600_000), ("past-1", now - 1000)):
        r.hset(
            dlq.job_key(job_id),
            mapping={
                "name": "pay",
                "data": "{}",
                "timestamp": due - 5000,
                "opts": json.dumps({"delay": 5000, "priority": 4, "attempts": 3}),
            },
        )
        r.zadd(dlq.key("delayed"), {job_id: due * 0x1000})
    later = redrive.job_redrive_to_source(r, dlq=dlq, job_id="later-1", source=source)
    past = redrive.job_redrive_to_source(r, dlq=dlq, job_id="past-1", source=source)
    assert later.kept == ("job_id", "priority", "delay") and past.kept == ("job_id", "priority")
    due = int(r.zscore(source.key("delayed"), "later-1")) // 0x1000
    assert abs(due - (now + 3_600_000)) < 5000  # the same due time, not another hour from now
    assert r.zscore(source.key("prioritized"), "past-1") is not None  # runs now, by its priority
    assert json.loads(r.hget(source.job_key("later-1"), "opts"))["attempts"] == 3


def test_a_third_redrive_of_the_same_custom_id_gets_an_id_of_its_own_incarnation(r):
    dlq, source = QueueRef("default", "bull", "inv-dlq"), QueueRef("default", "bull", "inv")
    r.hset(source.key("meta"), "opts.maxLenEvents", 10000)
    for done_id in ("inv-9", "redrive-inv-dlq-inv-9"):  # two earlier copies, both completed
        r.hset(source.job_key(done_id), mapping={"name": "invoice", "data": "{}", "opts": "{}", "timestamp": 1})
        r.zadd(source.key("completed"), {done_id: 2})
    r.hset(
        dlq.job_key("inv-9"),
        mapping={"name": "invoice", "data": '{"try":3}', "opts": '{"jobId":"inv-9"}', "timestamp": 1700000000123},
    )
    r.lpush(dlq.key("wait"), "inv-9")
    third = redrive.job_redrive_to_source(r, dlq=dlq, job_id="inv-9", source=source)
    assert third.outcome == "done" and third.kept == ("new_id",)
    assert (
        "as job redrive-inv-dlq-inv-9-1700000000123; kept: a new id (inv-9 is taken by a completed job; "
        "redrive-inv-dlq-inv-9 is taken by a completed job)."
    ) in third.message
    assert r.lrange(source.key("wait"), 0, -1) == [b"redrive-inv-dlq-inv-9-1700000000123"]
    r.hset(dlq.job_key("inv-9"), mapping={"name": "invoice", "data": "{}", "opts": "{}", "timestamp": 1700000000123})
    r.lpush(dlq.key("wait"), "inv-9")  # the very same incarnation again: every id is taken
    assert redrive.job_redrive_to_source(r, dlq=dlq, job_id="inv-9", source=source).outcome == "target_exists"
    assert r.exists(dlq.job_key("inv-9"))


def test_bulk_edit_resumes_after_a_crash_between_chunks_with_every_job_edited_once(r, monkeypatch):
    from queues.redis.bulk import edit

    monkeypatch.setattr(edit, "CHUNK", 4)  # a batch of 10 is sent as chunks of 4, 4 and 2
    seed_failed(r, Q, 60, data=lambda i: {"i": i, "n": 0})
    plan = BulkPlan(queue=Q, action="edit-retry", before_ms=2_000_000, filt=JobFilter(), rate=40, patch={"n": 1})
    store, t = MemoryStore(), FakeTime()
    run_bulk(r, plan=plan, store=store, should_cancel=iter([False, True]).__next__, clock=t.clock, sleep=t.sleep)
    crashed = store.load()
    assert crashed.moved == 10
    # The runner died with batch 11-20 journalled and only its first chunk edited in Redis.
    crashed.state, crashed.in_flight = "running", [[str(i), "failed"] for i in range(11, 21)]
    assert (
        edit.edit_batch(r, Q, [str(i) for i in range(11, 15)], patch={"n": 1}, reset_counters=True, before_ms=2_000_000)
        == [None] * 4
    )
    store.save(crashed)
    final = run_bulk(r, plan=plan, store=store, clock=t.clock, sleep=t.sleep)
    assert (final.state, final.moved, final.skipped) == ("done", 60, 0)
    assert sorted(int(m) for m in r.lrange(Q.key("wait"), 0, -1)) == list(range(1, 61))
    assert all(json.loads(r.hget(Q.job_key(str(i)), "data")) == {"i": i - 1, "n": 1} for i in range(1, 61))
