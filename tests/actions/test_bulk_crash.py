"""Crash safety of the bulk engine: a runner subprocess is SIGKILLed at random moments and
restarted until it finishes; afterwards every job is in the target exactly once and none is
left behind, for failed -> waiting (retry with counters reset) and dead-letter queue -> source
(redrive). Jobs are failed and dead-lettered by real Node BullMQ, under a key prefix of each
test's own on database 0."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from queues.bulk import BulkPlan
from queues.redis.bulk import RedisStore
from queues.redis.redrive import redrive_job_id
from queues.selection import JobFilter
from tests.support.parallel import heavy_trial
from tests.support.servers import ROOT, finish, node_available, run_node

JOBS_PER_TRIAL = 300
RATE = 300  # jobs/s: a trial runs about a second, in batches of 75, so kills land mid-run
UNPACED_KILLS_PER_TRIAL = 3

pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="Node.js and npm are needed for interop tests"),
]


def run_with_kills(url: str, plan: BulkPlan, key: str, rng: random.Random, kills: int) -> tuple[dict, int]:
    """Start the runner, SIGKILL it ``kills`` times at random moments, then let it finish.
    Returns the final progress and how many kills landed while it was still working."""
    landed = 0
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", "tests.support.bulk_runner", url, json.dumps(plan.as_dict()), key]
    for attempt in range(kills + 1):
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "READY", proc.stderr.read()
        if attempt < kills:
            time.sleep(rng.uniform(0, JOBS_PER_TRIAL / RATE / (kills + 1)))
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


@pytest.mark.slow  # > 20 s (--durations)
@heavy_trial
def test_killed_redrive_of_the_failed_set_resumes_with_every_job_moved_once(redis_prefix):
    r, url, prefix = redis_prefix.client, redis_prefix.url, redis_prefix.prefix
    names = [f"crash-{n}" for n in range(6)]
    seeded = run_node("actions.mjs", "fail", url, ",".join(names), str(JOBS_PER_TRIAL), "1", prefix, timeout=180)[
        "byQueue"
    ]
    seed = random.randrange(1 << 30)
    rngs = [random.Random(seed + n) for n in range(len(names))]

    def trial(n: int):
        queue = redis_prefix.queue(names[n])
        plan = BulkPlan(queue=queue, action="retry", before_ms=int(time.time() * 1000), filt=JobFilter(), rate=RATE)
        return run_with_kills(url, plan, f"{prefix}:crash:{queue.name}", rngs[n], kills=1 + n % 3)

    with ThreadPoolExecutor(3) as pool:  # trials are independent queues; pacing leaves room
        outcomes = list(pool.map(trial, range(len(names))))
    for name, (progress, _) in zip(names, outcomes):
        queue = redis_prefix.queue(name)
        ids = seeded[name]
        waiting = [m.decode() for m in r.lrange(queue.key("wait"), 0, -1)]
        assert sorted(waiting) == sorted(ids), f"seed {seed}, {name}: duplicated or missing jobs"
        assert r.zcard(queue.key("failed")) == 0, f"seed {seed}, {name}: jobs left behind"
        assert (progress["state"], progress["moved"], progress["skipped"], progress["failed"]) == (
            "done",
            len(ids),
            0,
            0,
        ), f"seed {seed}, {name}: {progress}"
        pipe = r.pipeline()
        for i in ids:
            pipe.hmget(queue.job_key(i), ["atm", "ats", "finishedOn"])
        assert all(v == [None, None, None] for v in pipe.execute())  # counters reset on each job
        assert RedisStore(r, f"{prefix}:crash:{name}").load().in_flight == []
    landed = sum(n for _, n in outcomes)
    assert landed >= 6, f"seed {seed}: only {landed} kills landed mid-run"


@pytest.mark.slow  # > 20 s (--durations)
@heavy_trial
def test_killed_redrive_from_a_dlq_resumes_with_every_job_in_the_source_once(redis_prefix):
    r, url, prefix = redis_prefix.client, redis_prefix.url, redis_prefix.prefix
    seed = random.randrange(1 << 30)
    pairs = [(redis_prefix.queue(f"orders{n}-dlq"), redis_prefix.queue(f"orders{n}")) for n in range(5)]
    seeded = {
        dlq.name: run_node("actions.mjs", "dlq", url, dlq.name, str(JOBS_PER_TRIAL), source.name, prefix)["ids"]
        for dlq, source in pairs
    }

    def trial(n: int):
        dlq = pairs[n][0]
        plan = BulkPlan(
            queue=dlq,
            action="redrive",
            before_ms=int(time.time() * 1000) + 1,
            filt=JobFilter(state="waiting"),
            rate=RATE,
            payload_field="data",
        )
        return run_with_kills(url, plan, f"{prefix}:crash:{dlq.name}", random.Random(seed + n), kills=1 + n % 3)

    with ThreadPoolExecutor(3) as pool:
        outcomes = list(pool.map(trial, range(len(pairs))))
    for (dlq, source), (progress, _) in zip(pairs, outcomes):
        ids = seeded[dlq.name]
        expected = sorted(redrive_job_id(dlq_name=dlq.name, job_id=i) for i in ids)
        in_source = [m.decode() for m in r.lrange(source.key("wait"), 0, -1)]
        assert sorted(in_source) == expected, f"seed {seed}, {dlq.name}: duplicated or missing jobs"
        assert r.llen(dlq.key("wait")) == 0 and not any(r.exists(dlq.job_key(i)) for i in ids), (
            f"seed {seed}, {dlq.name}: jobs left behind"
        )
        assert json.loads(r.hget(source.job_key(expected[0]), "data"))["i"] in range(JOBS_PER_TRIAL)
        assert (progress["state"], progress["moved"], progress["skipped"]) == ("done", len(ids), 0), (
            f"seed {seed}, {dlq.name}: {progress}"
        )
    landed = sum(n for _, n in outcomes)
    assert landed >= 5, f"seed {seed}: only {landed} kills landed mid-run"


@pytest.mark.slow  # a kill-and-restart trial (docs/testing.md, Markers)
@heavy_trial
def test_killed_unpaced_whole_set_retry_resumes_with_every_job_moved_once(redis_prefix):
    # Unpaced, the whole-set retry keeps a second batch in flight (a follower), so a kill can land
    # with two batches journalled and their replies unread. Jobs in BullMQ's layout, seeded here.
    from tests.support.seeding import seed_failed

    r, url, prefix = redis_prefix.client, redis_prefix.url, redis_prefix.prefix
    seed = random.randrange(1 << 30)
    rng, landed, n = random.Random(seed), 0, 20_000
    in_flight = []  # batches journalled and unread at each kill
    for trial in range(3):
        queue = redis_prefix.queue(f"unpaced-{trial}")
        r.hset(queue.key("meta"), "opts.maxLenEvents", 10000)
        ids = seed_failed(r, queue, n)
        plan = BulkPlan(queue=queue, action="retry", before_ms=int(time.time() * 1000), filt=JobFilter(), rate=None)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        args = [
            sys.executable,
            "-m",
            "tests.support.bulk_runner",
            url,
            json.dumps(plan.as_dict()),
            f"{prefix}:u{trial}",
        ]
        for attempt in range(UNPACED_KILLS_PER_TRIAL + 1):
            left = r.zcard(queue.key("failed"))
            proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            assert proc.stdout.readline().strip() == "READY", proc.stderr.read()
            if attempt < UNPACED_KILLS_PER_TRIAL:
                # The kill waits until this run has moved something, then a random moment more:
                # so every restart makes progress and the trial ends however slow the machine is
                # (a fixed 0-50 ms window could kill a slow run before its first batch, forever).
                until = time.monotonic() + 60
                while proc.poll() is None and r.zcard(queue.key("failed")) >= left and time.monotonic() < until:
                    time.sleep(0.001)
                time.sleep(rng.uniform(0, 0.02))
                if proc.poll() is None:
                    proc.send_signal(signal.SIGKILL)
                    proc.wait(30)
                    landed += 0 < r.zcard(queue.key("failed")) < left  # killed with some batches done
                    in_flight.append(RedisStore(r, f"{prefix}:u{trial}").load().head_pending)
                    proc.stdout.close()
                    proc.stderr.close()
                    continue
            out, err = finish(proc, timeout=120)
            assert proc.returncode == 0, err
            progress = json.loads(out.strip().splitlines()[-1])
            break
        waiting = [m.decode() for m in r.lrange(queue.key("wait"), 0, -1)]
        assert sorted(waiting) == sorted(ids) and r.zcard(queue.key("failed")) == 0, f"seed {seed}, trial {trial}"
        assert (progress["state"], progress["moved"], progress["skipped"], progress["failed"]) == ("done", n, 0, 0), (
            f"seed {seed}, trial {trial}: {progress}"
        )
    assert landed >= 3, f"seed {seed}: only {landed} kills landed mid-run"
    assert max(in_flight) >= 2, f"seed {seed}: no kill landed with two batches in flight ({in_flight})"
