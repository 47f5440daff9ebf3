"""The whole-set retry unpaced: its check reads a big set's priorities and options with one
SORT_RO per batch and still places a priority or lifo job as Job.retry would (a small
listpack-encoded set is read job by job and keeps its encoding), and the next batch sent before
the current one's reply is read (a follower) never moves a job twice, never skips one and
counts each exactly once, through a job that stays, a SCRIPT FLUSH, a cancel and a crash with
three batches unread. An edit of a big set reads and checks with SORT_RO too, and still places
priority and lifo jobs as Job.retry would."""

from __future__ import annotations

import pytest

from queues.bulk import BulkPlan, MemoryStore
from queues.keys import QueueRef
from queues.redis.bulk import run_bulk
from queues.redis.bulk.head import AHEAD
from queues.redis.bullmq_scripts import scripts_for
from queues.selection import JobFilter
from tests.support.seeding import seed_failed

Q = QueueRef("default", "bull", "head-ahead")
KEYS = [Q.key(s) for s in ("events", "failed", "wait", "meta", "active", "marker", "prioritized", "pc", "paused")]


@pytest.fixture
def r(redis_client):
    redis_client.hset(Q.key("meta"), "opts.maxLenEvents", 10000)
    return redis_client


def calls(r, command: str) -> int:
    return r.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0)


def plan(**kw) -> BulkPlan:
    return BulkPlan(queue=Q, action="retry", before_ms=2_000_000, filt=JobFilter(), rate=None, **kw)


def waiting(r) -> list[int]:
    return sorted(int(m) for m in r.lrange(Q.key("wait"), 0, -1))


def test_a_big_set_is_checked_with_one_sort_per_batch_and_priority_and_lifo_go_as_job_retry_puts_them(r):
    seed_failed(r, Q, 2500)
    r.hset(Q.job_key("1500"), "priority", 3)
    r.hset(Q.job_key("2300"), "opts", '{"attempts":2,"lifo":true}')
    sorts, hmgets = calls(r, "sort_ro"), calls(r, "hmget")
    final = run_bulk(r, plan=plan(), store=MemoryStore())
    assert (final.moved, final.skipped, final.failed) == (2500, 0, 0)
    # One SORT_RO per batch (both fields), and no HMGET per job for the check: the 1,500 HMGETs are
    # reprocessJob's (the queue's meta, per job) on the slow road of the two batches with the
    # priority and lifo jobs.
    assert calls(r, "sort_ro") - sorts == 3 and calls(r, "hmget") - hmgets < 1500 + 10
    assert r.zscore(Q.key("prioritized"), "1500") is not None and b"1500" not in r.lrange(Q.key("wait"), 0, -1)
    assert r.lindex(Q.key("wait"), -1) == b"2300"  # lifo: the next to run
    assert waiting(r) == [i for i in range(1, 2501) if i != 1500]
    assert all(r.hmget(Q.job_key(str(i)), ["atm", "ats", "failedReason"]) == [None] * 3 for i in (1, 1500, 2300, 2500))


def test_a_small_set_is_read_job_by_job_and_keeps_its_encoding(r):
    seed_failed(r, Q, 40)
    r.zadd(Q.key("failed"), {"later": 3_000_000})  # failed after the task began: it stays
    r.hset(Q.job_key("later"), mapping={"opts": "{}", "data": "{}"})
    assert r.object("encoding", Q.key("failed")) == b"listpack"
    sorts = calls(r, "sort_ro")
    final = run_bulk(r, plan=plan(), store=MemoryStore())
    assert (final.moved, final.skipped) == (40, 0) and calls(r, "sort_ro") == sorts
    assert r.object("encoding", Q.key("failed")) == b"listpack" and r.zrange(Q.key("failed"), 0, -1) == [b"later"]


def test_a_job_that_stays_stops_the_follower_and_the_next_batch_steps_over_it(r):
    seed_failed(r, Q, 3500)
    r.zadd(Q.key("failed"), {"ghost": 1_001_500.5})  # a member without its job, in the second batch
    final = run_bulk(r, plan=plan(), store=MemoryStore())
    assert (final.moved, final.skipped, final.skipped_by) == (3500, 1, {"missing": 1})
    assert waiting(r) == list(range(1, 3501)) and r.zrange(Q.key("failed"), 0, -1) == [b"ghost"]
    assert r.xlen(Q.key("events")) == 3500  # one "waiting" event per job: none moved twice


def test_a_script_flush_during_the_run_loses_and_repeats_nothing(r):
    seed_failed(r, Q, 5500)
    final = run_bulk(r, plan=plan(), store=MemoryStore(), on_progress=lambda p: r.script_flush())
    assert (final.moved, final.skipped, final.failed) == (5500, 0, 0)
    assert waiting(r) == list(range(1, 5501)) and r.xlen(Q.key("events")) == 5500


def test_a_cancel_counts_the_batches_already_sent(r):
    seed_failed(r, Q, (AHEAD + 2) * 1000)
    final = run_bulk(r, plan=plan(), store=MemoryStore(), should_cancel=iter([False, True]).__next__)
    assert (final.state, final.moved) == ("cancelled", AHEAD * 1000)  # the one read, and the followers sent with it
    assert waiting(r) == list(range(1, AHEAD * 1000 + 1)) and r.zcard(Q.key("failed")) == 2000


@pytest.mark.parametrize("ran", [0, 1, 2, 3])
def test_a_crash_with_three_batches_unread_resumes_exactly_from_the_receipt(r, ran):
    n = (AHEAD + 3) * 1000 + 500
    seed_failed(r, Q, n)
    store = MemoryStore()
    run_bulk(r, plan=plan(), store=store, should_cancel=iter([False, True]).__next__)
    crashed = store.load()
    assert (crashed.moved, crashed.head_batch, crashed.head_pending) == (AHEAD * 1000, AHEAD, 0)
    # The runner dies with three more batches journalled and sent (each following the one
    # before), their replies unread; Redis ran the first `ran` of them.
    crashed.state, crashed.head_batch, crashed.head_pending = "running", AHEAD + 3, 3
    store.save(crashed)
    for batch in range(AHEAD + 1, AHEAD + 1 + ran):
        reply = scripts_for(r).retry_head(
            keys=KEYS + [crashed.receipt_key],
            args=[
                Q.base,
                "failed",
                "failedReason",
                "1",
                "(2000000",
                0,
                1000,
                batch,
                "" if batch == AHEAD + 1 else batch - 1,
            ],
        )
        assert reply[:2] == [1000, 1000]
    final = run_bulk(r, plan=plan(), store=store)
    assert (final.state, final.moved, final.skipped) == ("done", n, 0)
    assert waiting(r) == list(range(1, n + 1)) and r.xlen(Q.key("events")) == n
    assert not r.exists(crashed.receipt_key)


def test_a_follower_does_nothing_unless_the_batch_before_it_moved_a_full_batch(r):
    seed_failed(r, Q, 30)
    r.zadd(Q.key("failed"), {"ghost": 1_000_003.5})
    receipt = "queuewatch:bulk-receipt:test"
    first = scripts_for(r).retry_head(
        keys=KEYS + [receipt], args=[Q.base, "failed", "failedReason", "1", "(2000000", 0, 10, 1, ""]
    )
    assert first[:2] == [10, 9] and r.get(receipt) == b"1:9"
    before = r.zcard(Q.key("failed"))
    follower = scripts_for(r).retry_head(
        keys=KEYS + [receipt], args=[Q.base, "failed", "failedReason", "1", "(2000000", 0, 10, 2, "1"]
    )
    assert follower[0] == -1 and r.zcard(Q.key("failed")) == before and r.get(receipt) == b"1:9"


def test_an_edit_of_a_big_set_reads_with_sort_and_still_places_priority_and_lifo_as_job_retry(r):
    seed_failed(r, Q, 900, data=lambda i: {"i": i, "amount": 5})
    r.hset(Q.job_key("850"), "priority", 2)  # all three in the last chunk of 200: the first four
    r.hset(Q.job_key("870"), "opts", '{"attempts":2,"lifo":true}')  # take the fast road
    r.hset(Q.job_key("880"), "data", "{not json")
    sorts, zscores = calls(r, "sort_ro"), calls(r, "zscore")
    final = run_bulk(
        r,
        plan=BulkPlan(
            queue=Q, action="edit-retry", before_ms=2_000_000, filt=JobFilter(), rate=None, patch={"amount": 1}
        ),
        store=MemoryStore(),
    )
    assert (final.moved, final.skipped, final.skipped_by) == (899, 1, {"bad_data": 1})
    assert calls(r, "sort_ro") - sorts >= 9  # each chunk's data read, and the fast chunks' checks
    assert calls(r, "zscore") - zscores < 200  # a ZSCORE per job only in the last chunk (the slow road)
    assert r.zscore(Q.key("prioritized"), "850") is not None and r.lindex(Q.key("wait"), -1) == b"870"
    assert waiting(r) == [i for i in range(1, 901) if i not in (850, 880)]
    assert r.zrange(Q.key("failed"), 0, -1) == [b"880"] and r.hget(Q.job_key("880"), "data") == b"{not json"
    assert all(r.hget(Q.job_key(str(i)), "data") == b'{"i":%d,"amount":1}' % (i - 1) for i in (1, 850, 870, 900))
    assert all(r.hmget(Q.job_key(str(i)), ["atm", "ats", "failedReason"]) == [None] * 3 for i in (1, 850, 870, 900))


def test_an_edit_chunk_at_the_head_whose_data_changed_after_it_was_read_moves_all_but_that_job(r):
    from queues.bulk.edit_patch import patched
    from queues.redis.bulk.edit import EDIT_RETRY_BATCH, chunk_digest

    seed_failed(r, Q, 300, data=lambda i: {"i": i})
    ids = [str(i) for i in range(1, 201)]  # the head of a skiplist-encoded set, read with SORT_RO
    raws = [r.hget(Q.job_key(i), "data") for i in ids]
    made = [patched(raw, {"ok": 1}) for raw in raws]
    r.hset(Q.job_key("150"), "data", '{"i":149,"changed":true}')  # a producer wrote between the read and the edit
    args = [Q.base, "1", "+inf", chunk_digest(raws), *(x for i, (sha, new) in zip(ids, made) for x in (i, sha, new))]
    assert EDIT_RETRY_BATCH(keys=KEYS, args=args, client=r) == [1] * 149 + [-4] + [1] * 50
    assert r.zrange(Q.key("failed"), 0, 0) == [b"150"] and r.zcard(Q.key("failed")) == 101
    assert r.hget(Q.job_key("150"), "data") == b'{"i":149,"changed":true}'
    assert r.hget(Q.job_key("149"), "data") == b'{"i":148,"ok":1}' and r.hget(Q.job_key("149"), "atm") is None


def test_a_chunk_digest_joins_the_data_so_it_cannot_be_split_two_ways():
    import hashlib

    from queues.redis.bulk.edit import chunk_digest

    assert chunk_digest([b'{"a":1}', b"", b"[2]"]) == hashlib.sha1(b'{"a":1}\0\0[2]').hexdigest()
    # Data holding a NUL could make two different chunks join alike: such a chunk has no digest,
    # which matches nothing, so each job is checked against its own SHA-1.
    assert chunk_digest([b"a\0", b"b"]) == "" and chunk_digest([b"a", b"\0b"]) == ""
