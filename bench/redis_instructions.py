"""redis-server instructions per job for a whole-set bulk retry, counted by valgrind (callgrind).

    .venv/bin/python bench/redis_instructions.py [--jobs 20000]

Wall-clock figures on a shared machine move by a third from one run of the same work to the
next (``bench/redrive.py`` reports them per round); an instruction count moves by about 1 %
(the ratios between the runs below by less), so it is how two versions of a script are
compared. One private redis-server runs under callgrind; the same failed jobs as
``bench/redrive.py`` are seeded, and only what each run makes Redis do is counted (the counters
are zeroed after seeding and dumped after the run):

* **moveJobsToWait**: BullMQ's script alone, 1,000 jobs per call, as ``Queue.retryJobs`` runs it
  (no counter reset, no priority or ``lifo`` check): the floor for any bulk retry built on it;
* **Queuewatch retry**: ``queues.redis.bulk.run_bulk`` unpaced, counters reset (the fast road);
* **Queuewatch edit-and-retry**: the same with the bench's JSON merge patch.

The last stdout line is one JSON object. Needs ``valgrind`` (Debian: ``apt-get install valgrind``).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib import Procs, RedisServer, code_version, log  # noqa: E402
from redrive import PATCH, _drop_jobs, check_moved, seed_failed  # noqa: E402


class CountedRedis:
    """A private redis-server under callgrind; ``count(run)`` is the instructions ``run`` costs it."""

    def __init__(self, procs: Procs):
        self.out = Path(tempfile.mkdtemp(prefix="qw-bench-callgrind-"))
        self.server = RedisServer(
            procs,
            "redis-callgrind",
            start_timeout=60,
            launcher=("valgrind", "--tool=callgrind", f"--callgrind-out-file={self.out}/callgrind.out"),
        )
        self.client = self.server.client(socket_timeout=600)
        self.dumps = 0

    def _control(self, flag: str) -> None:
        subprocess.run(
            ["callgrind_control", flag, str(self.server.proc.proc.pid)],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def count(self, run) -> int:
        self._control("-z")
        run()
        self._control("-d")
        self.dumps += 1
        text = (self.out / f"callgrind.out.{self.dumps}").read_text()
        return int(re.search(r"^summary: (\d+)", text, re.M).group(1))

    def cleanup(self) -> None:
        self.server.cleanup()
        shutil.rmtree(self.out, ignore_errors=True)


def move_jobs_to_wait(client: redis.Redis, queue: str) -> None:
    from queues.redis.bullmq_scripts import bullmq_source

    script = client.register_script(bullmq_source("moveJobsToWait-8.lua"))
    base = f"bull:{queue}:"
    keys = [base] + [base + k for k in ("events", "failed", "wait", "paused", "meta", "active", "marker")]
    while script(keys=keys, args=[1000, int(time.time() * 1000), "failed"]) == 1:
        pass


def queuewatch(client: redis.Redis, queue: str, action: str) -> None:
    from queues.bulk import BulkPlan, MemoryStore
    from queues.keys import QueueRef
    from queues.redis.bulk import run_bulk
    from queues.selection import JobFilter

    plan = BulkPlan(
        queue=QueueRef("default", "bull", queue),
        action=action,
        before_ms=int(time.time() * 1000),
        filt=JobFilter(),
        rate=None,
        reset_counters=True,
        patch=PATCH if action == "edit-retry" else None,
    )
    run_bulk(client, plan=plan, store=MemoryStore())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=20_000)
    args = ap.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind is needed (Debian/Ubuntu: apt-get install valgrind).", file=sys.stderr)
        return 2
    n = args.jobs
    procs = Procs(Path(tempfile.mkdtemp(prefix="qw-bench-instructions-")))
    server = CountedRedis(procs)
    try:
        client = server.client
        runs = {
            "move_jobs_to_wait": lambda q: move_jobs_to_wait(client, q),
            "queuewatch_retry": lambda q: queuewatch(client, q, "retry"),
            "queuewatch_edit": lambda q: queuewatch(client, q, "edit-retry"),
        }
        per_job = {}
        for name, run in runs.items():
            seed_failed(client, f"warm-{name}", 10)
            run(f"warm-{name}")  # scripts loaded and compiled before counting
            _drop_jobs(client, f"warm-{name}", 10)
            seed_failed(client, name, n)
            log(f"{name}: {n:,} jobs under callgrind")
            per_job[name] = round(server.count(lambda run=run, name=name: run(name)) / n)
            check_moved(client, name, n, reset=name != "move_jobs_to_wait", edited=name == "queuewatch_edit")
            log(f"{name}: {per_job[name]:,} instructions per job")
            _drop_jobs(client, name, n)  # each run meets the same keyspace
    finally:
        procs.stop_all()
        server.cleanup()
    floor, retry, edit = per_job["move_jobs_to_wait"], per_job["queuewatch_retry"], per_job["queuewatch_edit"]
    log(f"retry / moveJobsToWait {retry / floor:.2f}, edit / retry {edit / retry:.2f}")
    print(
        json.dumps(
            {
                "benchmark": "redis_instructions",
                "jobs": n,
                "instructions_per_job": per_job,
                "retry_over_move_jobs_to_wait": round(retry / floor, 3),
                "edit_over_retry": round(edit / retry, 3),
                "code": code_version(),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
