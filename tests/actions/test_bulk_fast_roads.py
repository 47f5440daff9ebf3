"""The bulk engine's fast roads. The whole-set retry and the whole-set edit count what stays
behind the cursor only once a job has stayed (until then the next batch is the head of the set),
and an edit resumed after a cancel finishes exactly once per job. The edit's patched data is what
the standard library would write (orjson only where the two agree; exact text kept where orjson
would change a number), and its chunks, sent without waiting on one another, still all run when
Redis has to load the script first (a fresh server, or a ``SCRIPT FLUSH`` while chunks are in
flight)."""

from __future__ import annotations

import json

import pytest

from queues.bulk import BulkPlan, MemoryStore
from queues.bulk.edit_patch import patched
from queues.edit_retry import merge_patch
from queues.keys import QueueRef
from queues.redis.bulk import run_bulk
from queues.redis.bulk.edit import CHUNK
from queues.selection import JobFilter
from tests.support.seeding import seed_failed

Q = QueueRef("default", "bull", "edit-unit")
PATCH = {"amount": 1, "note": {"fixed": True, "by": "Zoë ✓"}, "drop": None}


@pytest.fixture
def r(redis_client):
    redis_client.hset(Q.key("meta"), "opts.maxLenEvents", 10000)
    return redis_client


@pytest.mark.parametrize(
    "raw",
    [
        '{"order":7,"amount":1000,"drop":[1,{"x":null}]}',
        '{"name":"Zoë \\u2028 😀 \\u0001","f":0.1,"e":1e-7,"neg":-0.0,"big":9007199254740993,"t":true,"n":null}',
        '{"id":18446744073709551616,"low":-9223372036854775809,"note":{"fixed":false,"keep":[]}}',  # beyond 64 bits
        '{"card":"4111111111111111111","amount":1}',
        "[1,2]",
        '"text"',
        "3",
        '{"a":{"b":{"c":[{}]}}}',
    ],
)
def test_patched_data_equals_the_standard_library_merge_patch(raw):
    sha, text = patched(raw.encode(), PATCH)
    text = text.decode() if isinstance(text, bytes) else text
    expected = merge_patch(json.loads(raw), PATCH)
    assert json.loads(text) == expected and repr(json.loads(text)) == repr(expected)  # types too: 1 is not 1.0
    assert "18446744073709551616" in text if "18446744073709551616" in raw else True  # the exact integer, not a float


def test_patched_keeps_untouched_bytes_and_refuses_what_is_not_strict_json():
    same = b'{ "amount" : 1, "note": {"fixed": true, "by": "Zo\xc3\xab \xe2\x9c\x93"} }'
    assert patched(same, PATCH)[1] == same  # nothing to change: the stored bytes stay as they are
    for bad in (b'{"x":NaN}', b'{"x":-1e400}', b"{not json", b"\xff\xfe"):
        assert patched(bad, PATCH) is None
    assert json.loads(patched(None, PATCH)[1]) == {"amount": 1, "note": {"fixed": True, "by": "Zoë ✓"}}


def test_every_chunk_runs_when_the_scripts_are_flushed_in_the_middle_of_a_batch(r, monkeypatch):
    import queues.redis.bulk.edit as edit

    n = 6 * CHUNK + 7
    seed_failed(r, Q, n, data=lambda i: {"i": i, "amount": 5})
    calls, real = [0], edit.patched

    def flushing(raw, patch):  # a SCRIPT FLUSH while chunks are in flight: reads and edits sent after it fail
        calls[0] += 1
        if calls[0] == 2 * CHUNK + 1:
            r.script_flush()
        return real(raw, patch)

    monkeypatch.setattr(edit, "patched", flushing)  # where edit_batch looks it up
    final = run_bulk(
        r,
        plan=BulkPlan(
            queue=Q, action="edit-retry", before_ms=2_000_000, filt=JobFilter(), rate=None, patch={"amount": 1}
        ),
        store=MemoryStore(),
    )
    assert (final.moved, final.skipped, final.failed) == (n, 0, 0)
    assert r.zcard(Q.key("failed")) == 0 and r.llen(Q.key("wait")) == n and r.xlen(Q.key("events")) == n
    assert all(
        json.loads(d) == {"i": i, "amount": 1}
        for i, d in enumerate(r.hget(Q.job_key(str(i + 1)), "data") for i in range(n))
    )


def test_every_chunk_runs_when_redis_must_load_the_script_first(r):
    n = 2 * CHUNK + 7
    seed_failed(r, Q, n, data=lambda i: {"i": i, "amount": 5})
    r.script_flush()
    final = run_bulk(
        r,
        plan=BulkPlan(
            queue=Q, action="edit-retry", before_ms=2_000_000, filt=JobFilter(), rate=None, patch={"amount": 1}
        ),
        store=MemoryStore(),
    )
    assert (final.moved, final.skipped, final.failed) == (n, 0, 0)
    assert r.zcard(Q.key("failed")) == 0 and r.llen(Q.key("wait")) == n
    assert all(
        json.loads(d) == {"i": i, "amount": 1}
        for i, d in enumerate(r.hget(Q.job_key(str(i + 1)), "data") for i in range(n))
    )


def test_whole_set_retry_counts_what_stays_behind_only_once_a_job_stayed(r):
    seed_failed(r, Q, 100)  # finish times 1,000,000 + i
    r.zadd(Q.key("failed"), {"ghost": 1_000_049.5})  # a member without its job, in the sixth batch of ten
    zcounts = lambda: r.info("commandstats").get("cmdstat_zcount", {}).get("calls", 0)  # noqa: E731
    before = zcounts()
    final = run_bulk(
        r,
        plan=BulkPlan(queue=Q, action="retry", before_ms=2_000_000, filt=JobFilter(), rate=40),
        store=MemoryStore(),
        sleep=lambda s: None,
    )  # 10 jobs per batch
    assert (final.moved, final.skipped, final.skipped_by) == (100, 1, {"missing": 1})
    assert sorted(int(m) for m in r.lrange(Q.key("wait"), 0, -1)) == list(range(1, 101))
    assert r.zrange(Q.key("failed"), 0, -1) == [b"ghost"]
    # One for the count of the preview, then batches 7 to 11 step over the ghost; batches 2 to 6 needed none.
    assert zcounts() - before == 1 + 5


def test_edit_of_the_whole_set_steps_over_jobs_that_stay_and_resumes_after_a_cancel(r):
    seed_failed(r, Q, 60, data=lambda i: {"i": i, "amount": 5})
    r.hset(Q.job_key("15"), "data", "{not json")  # stays failed (bad_data) in the second batch
    plan = BulkPlan(
        queue=Q, action="edit-retry", before_ms=2_000_000, filt=JobFilter(), rate=40, patch={"amount": 1}
    )  # 10 jobs per batch
    store = MemoryStore()
    first = run_bulk(
        r, plan=plan, store=store, should_cancel=iter([False, False, False, True]).__next__, sleep=lambda s: None
    )
    assert (first.state, first.moved, first.skipped) == ("cancelled", 29, 1)
    first.state = "running"  # the operator resumes it
    store.save(first)
    final = run_bulk(r, plan=plan, store=store, sleep=lambda s: None)
    assert (final.state, final.moved, final.skipped, final.skipped_by) == ("done", 59, 1, {"bad_data": 1})
    assert r.zrange(Q.key("failed"), 0, -1) == [b"15"]
    assert sorted(int(m) for m in r.lrange(Q.key("wait"), 0, -1)) == [i for i in range(1, 61) if i != 15]
    assert all(json.loads(r.hget(Q.job_key(str(i + 1)), "data")) == {"i": i, "amount": 1} for i in range(60) if i != 14)
