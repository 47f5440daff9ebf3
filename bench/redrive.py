"""Redrive 100,000 failed jobs: Queuewatch's bulk engine against BullMQ's retryJobs and bull-board 9.

    .venv/bin/python bench/redrive.py [--jobs 100000] [--small 10000] [--rounds 3]

On one private redis-server (started here), each round fills a fresh queue per tool with failed
jobs in BullMQ 6's layout (``attempts: 3``, attempts made 3, a stack trace) and empties it:

* **Queuewatch**: ``queues.redis.bulk.run_bulk`` unpaced, retry with counters reset (``atm``, ``ats``
  and ``stc`` deleted), in a child process so its peak RSS is its own; one more run on
  ``--small`` jobs shows whether memory grows with the number of jobs;
* **BullMQ ``Queue.retryJobs``** (Node, ``bench/node/retry_jobs.mjs``): the in-Redis limit,
  1000 jobs per script call, which resets nothing and drops priorities;
* **bull-board 9.10.1 "retry all"** (``PUT /api/queues/<q>/retry/failed``, ``bench/node``);
* **Queuewatch bulk edit-and-retry**: the same run with action ``edit-retry`` and a JSON merge
  patch (``PATCH``) applied to every job's stored data, checked on every job, against the plain
  bulk retry of the same round.

The machine is shared, so the tools take turns in a rotated order each round; the medians and
every round's own ratios are reported (the goal: >= 10x bull-board in every round). Each
result is checked: the failed set is empty and every job is in ``wait`` exactly once. Progress
goes to stderr; the last stdout line is one JSON object.

Needs ``(cd bench/node && npm ci)``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import BENCH_NODE, PY, ROOT, Procs, RedisServer, code_version, free_port, install_time_limit, log  # noqa: E402

SEED_BATCH = 5000
PATCH = {"amount": 1, "note": {"fixed": True}}  # the bulk edit-and-retry's merge patch


def seed_failed(client, queue: str, n: int) -> None:
    """``n`` failed jobs as Node BullMQ 6 leaves them after three failed attempts."""
    base = f"bull:{queue}:"
    client.hset(base + "meta", "opts.maxLenEvents", 10000)
    t0 = int(time.time() * 1000) - n - 1000
    stack = json.dumps(["Error: card declined\n    at charge (/app/worker.js:42:13)"] * 3)
    for start in range(0, n, SEED_BATCH):
        pipe = client.pipeline(transaction=False)
        members = {}
        for i in range(start, min(n, start + SEED_BATCH)):
            job_id = str(i + 1)
            finished = t0 + i
            pipe.hset(
                base + job_id,
                mapping={
                    "name": "charge-card",
                    "data": json.dumps({"order": i, "amount": 1000 + i % 97}),
                    "opts": '{"attempts":3,"backoff":{"type":"exponential","delay":1000}}',
                    "timestamp": finished - 5000,
                    "delay": 0,
                    "priority": 0,
                    "processedOn": finished - 20,
                    "finishedOn": finished,
                    "atm": 3,
                    "ats": 3,
                    "failedReason": f"card declined for order {i}",
                    "stacktrace": stack,
                },
            )
            members[job_id] = finished
        pipe.zadd(base + "failed", members)
        pipe.set(base + "id", min(n, start + SEED_BATCH))
        pipe.execute()


def check_moved(client, queue: str, n: int, *, reset: bool = False, edited: bool = False) -> None:
    base = f"bull:{queue}:"
    failed, waiting = client.zcard(base + "failed"), client.llen(base + "wait")
    distinct = len(set(client.lrange(base + "wait", 0, -1)))
    if failed or waiting != n or distinct != n:
        raise RuntimeError(f"{queue}: {failed} still failed, {waiting} waiting ({distinct} distinct), expected {n}")
    for start in range(0, n, SEED_BATCH) if reset or edited else ():
        pipe = client.pipeline(transaction=False)
        for i in range(start, min(n, start + SEED_BATCH)):
            pipe.hmget(base + str(i + 1), ["atm", "ats", "stc", "data"])
        for i, (atm, ats, stc, data) in enumerate(pipe.execute(), start):
            if reset and (atm, ats, stc) != (None, None, None):
                raise RuntimeError(f"{queue}: job {i + 1} kept its counters")
            if edited and json.loads(data) != {"order": i, "amount": 1, "note": {"fixed": True}}:
                raise RuntimeError(f"{queue}: job {i + 1} has data {data!r}, not the patched data")


def _drop_jobs(client, queue: str, n: int) -> None:
    """Free the moved jobs (a plain DEL of the bench's own data), so rounds do not add up."""
    for start in range(0, n, SEED_BATCH):
        client.delete(*[f"bull:{queue}:{i + 1}" for i in range(start, min(n, start + SEED_BATCH))])
    client.delete(*[f"bull:{queue}:{k}" for k in ("wait", "meta", "id", "events", "marker")])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(field: str = "VmRSS") -> float:
    """This process's resident set (``VmHWM``: its peak). Not ``ru_maxrss``: Linux carries the
    parent's peak into a child across exec, so it read the benchmark's own size, not the run's."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def child(url: str, queue: str, action: str = "retry") -> None:
    """Run in a fresh process: one unpaced bulk retry (or edit-and-retry) with counters reset."""
    import redis

    from queues.bulk import BulkPlan, MemoryStore
    from queues.keys import QueueRef
    from queues.redis.bulk import run_bulk
    from queues.selection import JobFilter

    client = redis.Redis.from_url(url)
    client.ping()
    start_rss = rss_mib()
    plan = BulkPlan(
        queue=QueueRef("default", "bull", queue),
        action=action,
        before_ms=int(time.time() * 1000),
        filt=JobFilter(),
        rate=None,
        reset_counters=True,
        patch=PATCH if action == "edit-retry" else None,
    )
    t0 = time.perf_counter()
    progress = run_bulk(client, plan=plan, store=MemoryStore())
    seconds = time.perf_counter() - t0
    peak = rss_mib("VmHWM")
    print(
        json.dumps(
            {
                "seconds": seconds,
                "moved": progress.moved,
                "skipped": progress.skipped,
                "failed": progress.failed,
                "rss_start_mib": round(start_rss, 1),
                "peak_rss_mib": round(peak, 1),
            }
        )
    )


def run_queuewatch(url: str, queue: str, action: str = "retry") -> dict:
    out = subprocess.run(
        [PY, str(Path(__file__).resolve()), "--child", url, queue, action],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_retry_jobs(procs: Procs, url: str, queue: str) -> dict:
    p = procs.start(
        "retry-jobs", ["node", "retry_jobs.mjs", "--redis", url, "--queue", queue], cwd=BENCH_NODE, json_stdout=True
    )
    result = p.expect("seconds", timeout=1800)
    procs.stop(p)
    return result


def run_bullboard(procs: Procs, url: str, queue: str) -> dict:
    port = free_port()
    p = procs.start(
        "bull-board",
        ["node", "bullboard.mjs", "--redis", url, "--port", str(port), "--queues", queue],
        cwd=BENCH_NODE,
        json_stdout=True,
    )
    p.expect("listening", timeout=60)
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/queues/{queue}/retry/failed", method="PUT")
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=3600) as resp:
        body = json.loads(resp.read())
    seconds = time.perf_counter() - t0
    rss = 0.0
    try:
        for line in Path(f"/proc/{p.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                rss = int(line.split()[1]) / 1024
    except OSError:
        pass
    procs.stop(p)
    return {"seconds": seconds, "response": body, "peak_rss_mib": round(rss, 1)}


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--small", type=int, default=10_000, help="a second Queuewatch run, to compare memory")
    ap.add_argument("--rounds", type=int, default=3, help="each tool runs once per round; medians are reported")
    args = ap.parse_args()
    if not (BENCH_NODE / "node_modules" / "@bull-board" / "api").exists():
        print("Run (cd bench/node && npm ci) first.", file=sys.stderr)
        return 2
    install_time_limit(3600)
    logdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"qw-bench-redrive-{os.getpid()}"
    logdir.mkdir(parents=True, exist_ok=True)
    procs = Procs(logdir)
    try:
        rds = RedisServer(procs, "redis")
        client = rds.client()
        url = rds.url()
        n = args.jobs
        log(f"seeding {args.small:,} failed jobs into qw-small")
        seed_failed(client, "qw-small", args.small)
        log("Queuewatch, small run (memory baseline)")
        small = run_queuewatch(url, "qw-small")
        check_moved(client, "qw-small", args.small, reset=True)
        small["jobs_per_s"] = round(args.small / small["seconds"])
        seed_failed(client, "qw-small-edit", args.small)
        small_edit = run_queuewatch(url, "qw-small-edit", "edit-retry")
        check_moved(client, "qw-small-edit", args.small, reset=True, edited=True)
        tools = {
            "queuewatch": lambda q: run_queuewatch(url, q),
            "queuewatch_edit": lambda q: run_queuewatch(url, q, "edit-retry"),
            "retry_jobs": lambda q: run_retry_jobs(procs, url, q),
            "bull_board": lambda q: run_bullboard(procs, url, q),
        }
        rounds: dict[str, list[dict]] = {k: [] for k in tools}
        order = list(tools)
        for rnd in range(args.rounds):
            # The machine is shared: each round runs every tool on a fresh set, in a rotated
            # order, and the medians are compared.
            for name in order:
                queue = f"{name}-{rnd}"
                log(f"round {rnd + 1}: seeding {n:,} failed jobs into {queue}")
                seed_failed(client, queue, n)
                log(f"round {rnd + 1}: {name}")
                redis_cpu = cpu_seconds(rds.proc.proc.pid)
                result = tools[name](queue)
                # Why a round is slow: redis-server's own CPU time for the run (the in-Redis
                # work; it barely moves between rounds) against the wall time, and the load.
                result["redis_cpu_s"] = round(cpu_seconds(rds.proc.proc.pid) - redis_cpu, 2)
                result["load_1m"] = round(os.getloadavg()[0], 2)
                check_moved(client, queue, n, reset=name.startswith("queuewatch"), edited=name == "queuewatch_edit")
                result["jobs_per_s"] = round(n / result["seconds"])
                result["seconds"] = round(result["seconds"], 2)
                rounds[name].append(result)
                _drop_jobs(client, queue, n)
            order = order[1:] + order[:1]

        def median_rate(name: str) -> int:
            return sorted(r["jobs_per_s"] for r in rounds[name])[len(rounds[name]) // 2]

        qw, rj, bb = median_rate("queuewatch"), median_rate("retry_jobs"), median_rate("bull_board")
        qe = median_rate("queuewatch_edit")
        peak = max(r["peak_rss_mib"] for r in rounds["queuewatch"])
        peak_edit = max(r["peak_rss_mib"] for r in rounds["queuewatch_edit"])

        def each_round(a: str, b: str) -> list[float]:
            return [round(x["jobs_per_s"] / y["jobs_per_s"], 2) for x, y in zip(rounds[a], rounds[b])]

        vs_bb, vs_rj, edit_vs_retry = (
            each_round("queuewatch", "bull_board"),
            each_round("queuewatch", "retry_jobs"),
            each_round("queuewatch_edit", "queuewatch"),
        )
        # BullMQ's own bulk retry against bull-board in the same round: the most any tool running
        # moveJobsToWait can reach, before the check and the reset Queuewatch adds.
        rj_vs_bb = each_round("retry_jobs", "bull_board")
        summary = {
            "benchmark": "redrive",
            "jobs": n,
            "rounds": args.rounds,
            "load_average": os.getloadavg()[0],
            "queuewatch_jobs_per_s": qw,
            "retry_jobs_jobs_per_s": rj,
            "bull_board_jobs_per_s": bb,
            "queuewatch_edit_jobs_per_s": qe,
            "vs_retry_jobs": round(qw / rj, 2),
            "vs_bull_board": round(qw / bb, 1),
            "edit_vs_retry": round(qe / qw, 2),
            "vs_bull_board_each_round": vs_bb,
            "vs_retry_jobs_each_round": vs_rj,
            "edit_vs_retry_each_round": edit_vs_retry,
            "retry_jobs_vs_bull_board_each_round": rj_vs_bb,
            "queuewatch_peak_rss_mib": peak,
            "queuewatch_small": small,
            "memory_growth_mib": round(peak - small["peak_rss_mib"], 1),
            "queuewatch_edit_peak_rss_mib": peak_edit,
            "queuewatch_edit_small": small_edit,
            "edit_memory_growth_mib": round(peak_edit - small_edit["peak_rss_mib"], 1),
            "per_round": rounds,
            "goals": {
                "half_of_retry_jobs_every_round": min(vs_rj) >= 0.5,
                "ten_x_bull_board_every_round": min(vs_bb) >= 10,
                "edit_half_of_retry_every_round": min(edit_vs_retry) >= 0.5,
            },
            "code": code_version(),
        }
        log(
            f"per round: vs bull-board {vs_bb}, vs retryJobs {vs_rj}, edit vs retry {edit_vs_retry}; "
            f"retryJobs itself vs bull-board {rj_vs_bb}"
        )
        for name, results in rounds.items():
            log(
                f"{name}: "
                + ", ".join(
                    f"{r['jobs_per_s']:,} jobs/s ({r['seconds']} s, redis-server CPU {r['redis_cpu_s']} s, "
                    f"load {r['load_1m']})"
                    for r in results
                )
            )
        log(
            f"median jobs/s: queuewatch {qw:,}, edit-and-retry {qe:,}, retryJobs {rj:,}, bull-board {bb:,}; "
            f"Queuewatch peak RSS {peak} MiB ({args.small:,} jobs: {small['peak_rss_mib']} MiB)"
        )
        print(json.dumps(summary))
        return 0
    finally:
        procs.stop_all()


if __name__ == "__main__":
    sys.exit(main())
