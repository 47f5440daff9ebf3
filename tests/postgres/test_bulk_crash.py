"""Crash safety of the PostgreSQL bulk engine, the trial the Redis one passes
(tests/actions/test_bulk_crash.py): a runner subprocess is SIGKILLed at random moments and
restarted until it finishes; afterwards every job is in the target exactly once, none is left
behind, and the counts are exact, for failed -> waiting (retry with counters reset), an explicit
selection, and dead-letter queue -> source (redrive). Jobs are failed and dead-lettered by real
Node BullMQ on PostgreSQL, a queue of each trial's own."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid

import pytest

from queues.bulk import BulkPlan, MemoryStore
from queues.keys import QueueRef
from queues.postgres.bulk import run_bulk
from queues.postgres.connection import PostgresConnection
from queues.selection import JobFilter
from tests.support.parallel import heavy_trial
from tests.support.servers import ROOT, finish, run_node

JOBS = 300
RATE = 300  # jobs/s: a trial runs about a second, in batches of 75, so kills land mid-run

pytestmark = [pytest.mark.postgres, pytest.mark.node]


@pytest.fixture(scope="module")
def pg_url(postgres_server) -> str:
    return postgres_server.create_database("pg_bulk_crash")


def rows(url: str, query: str, *params) -> list[tuple]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(query, params).fetchall()


def run_with_kills(url: str, plan: BulkPlan, path: str, rng: random.Random, kills: int) -> tuple[dict, int]:
    """Start the runner, SIGKILL it ``kills`` times at random moments (each once it has moved
    something, so every run makes progress), then let it finish. Returns the final progress and
    how many kills landed while it was still working."""
    landed = 0
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", "tests.support.pg_bulk_runner", url, json.dumps(plan.as_dict()), path]
    for attempt in range(kills + 1):
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "READY", proc.stderr.read()
        if attempt < kills:
            time.sleep(rng.uniform(0.05, JOBS / RATE / (kills + 1)))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                landed += 1
            proc.wait(30)
            proc.stdout.close()
            proc.stderr.close()
            continue
        out, err = finish(proc, timeout=120)
        assert proc.returncode == 0, err
        return json.loads(out.strip().splitlines()[-1]), landed
    raise AssertionError("unreachable")


@pytest.mark.slow  # a kill-and-restart trial (docs/testing.md, Markers)
@heavy_trial
def test_killed_retries_resume_with_every_job_moved_once(pg_url, tmp_path):
    seed = random.randrange(1 << 30)
    landed = 0
    for trial, explicit in enumerate((False, False, True)):
        name = f"crash-{uuid.uuid4().hex[:8]}"
        failed = run_node("pg_bulk.mjs", "mix", pg_url, name, str(JOBS), "0", timeout=180)["failed"]
        queue = QueueRef("pg", "bullmq", name)
        before = int(time.time() * 1000)
        plan = (
            BulkPlan(queue=queue, action="retry", before_ms=before, job_ids=tuple(failed), rate=RATE)
            if explicit
            else BulkPlan(queue=queue, action="retry", before_ms=before, filt=JobFilter(), rate=RATE)
        )
        progress, n = run_with_kills(pg_url, plan, str(tmp_path / name), random.Random(seed + trial), kills=2)
        landed += n
        waiting = rows(
            pg_url,
            "SELECT id, attempts_made, attempts_started FROM bullmq.job WHERE queue = %s AND state = 'waiting' "
            "AND name = 'boom'",
            name,
        )
        assert sorted(i for i, _, _ in waiting) == sorted(failed), f"seed {seed}, {name}: duplicated or missing jobs"
        assert all((made, started) == (0, 0) for _, made, started in waiting)  # counters reset on each job
        assert rows(pg_url, "SELECT count(*) FROM bullmq.job WHERE queue = %s AND state = 'failed'", name) == [(0,)]
        assert (progress["state"], progress["moved"], progress["skipped"], progress["failed"]) == (
            "done",
            JOBS,
            0,
            0,
        ), f"seed {seed}, {name}: {progress}"
        assert "journal" not in progress["cursor"]
        # Each job was moved by one committed batch: BullMQ published one "waiting" event per job.
        events = rows(
            pg_url,
            "SELECT count(*) FROM bullmq.event WHERE queue = %s AND event = 'waiting' AND data ->> 'prev' = 'failed'",
            name,
        )
        assert events == [(JOBS,)], f"seed {seed}, {name}"
    assert landed >= 4, f"seed {seed}: only {landed} kills landed mid-run"


@pytest.mark.slow
@heavy_trial
def test_killed_redrive_from_a_dlq_resumes_with_every_job_in_the_source_once(pg_url, tmp_path):
    seed = random.randrange(1 << 30)
    landed = 0
    for trial in range(2):
        tag = uuid.uuid4().hex[:6]
        dlq, source = f"orders{tag}-dlq", f"orders{tag}"
        ids = run_node("pg_bulk.mjs", "dlq", pg_url, dlq, str(JOBS), source, timeout=180)["ids"][:-1]
        plan = BulkPlan(
            queue=QueueRef("pg", "bullmq", dlq),
            action="redrive",
            before_ms=int(time.time() * 1000) + 1,
            filt=JobFilter(state="waiting"),
            rate=RATE,
            payload_field="data",
        )
        progress, n = run_with_kills(pg_url, plan, str(tmp_path / dlq), random.Random(seed + trial), kills=2)
        landed += n
        in_source = rows(
            pg_url, "SELECT id, data FROM bullmq.job WHERE queue = %s AND state = 'waiting' AND name = 'work'", source
        )
        expected = sorted(f"redrive-{dlq}-{i}" for i in ids)
        assert sorted(i for i, _ in in_source) == expected, f"seed {seed}, {dlq}: duplicated or missing jobs"
        assert sorted(d["i"] for _, d in in_source) == list(range(JOBS))  # the envelopes were opened
        left = rows(pg_url, "SELECT id FROM bullmq.job WHERE queue = %s", dlq)
        assert left == [("order-7",)], f"seed {seed}, {dlq}: jobs left behind"  # prioritized: not "waiting"
        assert (progress["state"], progress["moved"], progress["skipped"], progress["failed"]) == (
            "done",
            JOBS,
            0,
            0,
        ), f"seed {seed}, {dlq}: {progress}"
        assert progress["kept_by"] == {"new_id": JOBS, "unwrapped": JOBS}
    assert landed >= 3, f"seed {seed}: only {landed} kills landed mid-run"


class Crash(Exception):
    """The process dying at one exact point (the random kills rarely land there)."""


class CrashingStore(MemoryStore):
    """A store that dies once: right after a batch committed, before its progress was saved
    (``after_commit``), or with the journal saved but before the commit (otherwise)."""

    def __init__(self, *, after_commit: bool, at_batch: int):
        super().__init__()
        self.after_commit, self.at_batch, self.journals, self.armed = after_commit, at_batch, 0, True

    def save(self, progress) -> None:
        journalled = "journal" in progress.cursor
        self.journals += journalled
        if self.armed and self.journals == self.at_batch:
            if self.after_commit and not journalled:  # the first save after the journalled commit
                self.armed = False
                raise Crash
            if not self.after_commit and journalled:
                super().save(progress)
                self.armed = False
                raise Crash  # inside the batch's transaction: it rolls back
        super().save(progress)


@pytest.mark.parametrize("after_commit", [True, False])
def test_a_crash_either_side_of_a_commit_resumes_with_exact_counts(pg_url, after_commit):
    name = f"exact-{uuid.uuid4().hex[:8]}"
    failed = run_node("pg_bulk.mjs", "mix", pg_url, name, "50", "0")["failed"]
    queue = QueueRef("pg", "bullmq", name)
    # Batches of 20 (a quarter of a second's jobs at 80/s).
    plan = BulkPlan(queue=queue, action="retry", before_ms=int(time.time() * 1000), filt=JobFilter(), rate=80.0)
    store = CrashingStore(after_commit=after_commit, at_batch=2)
    db = PostgresConnection(pg_url, read_only=False)
    try:
        with pytest.raises(Crash):
            run_bulk(db, plan=plan, store=store)
        # What the store holds now: the journal of batch 2, its transaction committed or not.
        journal = store.load().cursor["journal"]
        status = rows(pg_url, "SELECT pg_xact_status(%s::xid8)", journal["txid"])[0][0]
        assert status == ("committed" if after_commit else "aborted")
        moved_now = rows(
            pg_url, "SELECT count(*) FROM bullmq.job WHERE queue = %s AND state = 'waiting' AND name = 'boom'", name
        )
        # Batch 2's journal says what was moved once it commits; before it, what was moved
        # already (a whole-set batch may be cut short of 20 at a tie on the finish time).
        saved = store.load()
        expected = journal["after"]["moved"] if after_commit else saved.moved
        assert 0 < saved.moved < journal["after"]["moved"] <= 40
        assert moved_now == [(expected,)]
        final = run_bulk(db, plan=plan, store=store)
    finally:
        db.close()
    assert (final.state, final.total, final.moved, final.skipped, final.failed) == ("done", 50, 50, 0, 0)
    waiting = rows(pg_url, "SELECT id FROM bullmq.job WHERE queue = %s AND state = 'waiting' AND name = 'boom'", name)
    assert sorted(i for (i,) in waiting) == sorted(failed)
