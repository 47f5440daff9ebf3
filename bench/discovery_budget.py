"""Discovery budget benchmark: what one incremental discovery pass costs a
large Redis, in Redis CPU, and how long it takes.

    .venv/bin/python bench/discovery_budget.py [--keys 10000000] [--queues 1000] [--rate 20000]

Starts a private redis-server (``--enable-debug-command yes``), fills it with ``DEBUG POPULATE``
plus QUEUES real queue meta hashes, then runs one full ``queues.redis.discovery_pass.DiscoveryPass``
exactly as the monitor does: one step per second, ``--rate`` keys examined per second
(``QUEUEWATCH_DISCOVERY_KEYS_PER_S``). Redis CPU is ``used_cpu_sys + used_cpu_user`` of the
redis-server (``INFO cpu``); the same is measured while Redis sits idle for ``--idle`` seconds
first, so the pass's own share can be told from the server's background work. Also prints
what one full, unpaced SCAN (the old discovery) costs, for comparison."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.benchlib import Procs, RedisServer  # noqa: E402
from queues.redis.discovery import discover_queue_names
from queues.redis.discovery_pass import DiscoveryPass

STEP_S = 1.0  # dashboard.monitor.discovering.DISCOVERY_STEP_INTERVAL


def redis_cpu(r: redis.Redis) -> float:
    info = r.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=10_000_000)
    parser.add_argument("--queues", type=int, default=1000)
    parser.add_argument("--rate", type=int, default=5_000, help="keys examined per second")
    parser.add_argument("--idle", type=float, default=30.0, help="seconds of idle baseline")
    args = parser.parse_args()
    procs = Procs(Path(tempfile.mkdtemp(prefix="qw-discovery-bench-")))
    try:
        server = RedisServer(procs, "redis", "--enable-debug-command", "yes")
        r = server.client(socket_timeout=600)  # DEBUG POPULATE of 10M keys takes seconds
        t0 = time.monotonic()
        r.execute_command("DEBUG", "POPULATE", args.keys, "filler", 16)
        pipe = r.pipeline(transaction=False)
        for i in range(args.queues):
            pipe.hset(f"bull:queue-{i}:meta", mapping={"opts.maxLenEvents": 10000})
            pipe.hset(f"bull:queue-{i}:{i}", mapping={"name": "job", "data": "{}"})
        pipe.execute()
        print(f"populated {r.dbsize():,} keys ({args.queues} queues) in {time.monotonic() - t0:.0f} s", flush=True)

        cpu = redis_cpu(r)
        time.sleep(args.idle)
        idle_per_s = (redis_cpu(r) - cpu) / args.idle
        print(f"idle Redis: {idle_per_s * 100:.2f}% of a core", flush=True)

        walk = DiscoveryPass(
            r, connection="bench", prefixes=["bull"], keys_per_step=int(args.rate * STEP_S), min_pass_s=0
        )
        cpu, start, steps = redis_cpu(r), time.monotonic(), 0
        next_step = start
        while walk.passes == 0:
            time.sleep(max(0.0, next_step - time.monotonic()))
            next_step += STEP_S
            walk.step()
            steps += 1
        elapsed = time.monotonic() - start
        used = redis_cpu(r) - cpu
        found = len(walk.queues)
        print(
            f"incremental pass at {args.rate:,} keys/s ({walk.calls_per_step} SCAN calls/step): {steps} steps, "
            f"pass time {elapsed:.0f} s ({elapsed / 60:.1f} min), {found} queues found"
        )
        print(
            f"  Redis CPU during the pass: {used:.2f} s = {used / elapsed * 100:.2f}% of a core "
            f"(minus idle: {(used / elapsed - idle_per_s) * 100:.2f}%)"
        )

        cpu, start = redis_cpu(r), time.monotonic()
        names = discover_queue_names(r, "bull")
        full = time.monotonic() - start
        used_full = redis_cpu(r) - cpu
        print(
            f"one unpaced full SCAN (the old discovery): {full:.1f} s, Redis CPU {used_full:.2f} s, "
            f"{len(names)} queues; every 10 s that was {used_full / 10 * 100:.0f}% of a core"
        )
        print(
            json.dumps(
                {
                    "keys": args.keys,
                    "rate": args.rate,
                    "pass_s": round(elapsed),
                    "steps": steps,
                    "pass_cpu_s": round(used, 2),
                    "pass_core_pct": round(used / elapsed * 100, 2),
                    "idle_core_pct": round(idle_per_s * 100, 2),
                    "full_scan_cpu_s": round(used_full, 2),
                }
            )
        )
        if found != args.queues or len(names) != args.queues:
            print("ERROR: not every queue was found", file=sys.stderr)
            sys.exit(1)
    finally:
        procs.stop_all()
        server.cleanup()


if __name__ == "__main__":
    main()
