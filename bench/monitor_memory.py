"""Monitor CPU per tick and resident memory as the monitored Redis grows from 10 thousand to
1 million jobs over 1,000 queues, measured on a real ``manage.py monitor`` process.

    .venv/bin/python bench/monitor_memory.py [--queues 1000] [--steps 10000,100000,1000000]
                                             [--tick-ms 1000] [--ticks 15]

What it does
------------
1. Starts its own processes on loopback: two private ``redis-server``s on free ports (the
   *monitored* Redis and Queuewatch's *dashboard* Redis: channel layer, fragment cache, leader
   lock) and one ``manage.py monitor`` with the environment ``tests/e2e/conftest.py`` uses
   (SQLite in a temp dir, ``QUEUEWATCH_MONITOR_TICK_MS`` = ``--tick-ms``). All are stopped and
   the temp dir removed at the end, also on Ctrl-C/SIGTERM; children get PR_SET_PDEATHSIG.

2. The monitor watches db 1 of the monitored Redis. For each step, the bulk loader of
   ``bench/snapshot_bench.py`` (``plan_queues`` + ``load``: BullMQ 6's layout, same uneven
   distribution: one queue holds 25% of the jobs, the rest log-normal) fills db 0, then
   ``SWAPDB 0 1`` replaces the watched data atomically: the same 1,000 queue names, now with
   the step's number of jobs. So ONE monitor process lives through 10k -> 100k -> 1M jobs (what
   "as jobs grow" means for memory), while no load is running during a measurement window. The
   event streams are new after a swap, so the monitor also goes through its gap detection and
   reconciliation, as after a long outage.

3. Per step, after ``--settle-ticks`` full ticks on the new data: for ``--ticks`` full ticks,
   the monitor's CPU (``utime + stime`` from ``/proc/<pid>/stat``, all threads) and its resident
   memory (``VmRSS`` from ``/proc/<pid>/status``, sampled every 0.25 s; ``VmHWM`` = peak so far).
   A full tick is counted from the monitored Redis itself: every full tick snapshots every queue
   with exactly one ``HEXISTS <queue>:meta paused`` each, so ticks = delta of ``INFO
   commandstats`` HEXISTS calls / queues (nothing else sends HEXISTS during a window). A window
   ends after ``--ticks`` ticks or ``2 x ticks x tick + 10`` seconds, whichever comes first, so a
   monitor that cannot keep its tick still gives figures in bounded time. The monitor's log is
   checked for "lost the leader lock" (it stood down and starts leading from scratch).

4. At the end, a fresh monitor process is started on the 1M data and measured the same way, to
   tell memory the data size needs from memory a long-lived process accumulated.

Progress goes to stderr; ONE JSON object with every figure is the last line of stdout.
Goal: memory flat as jobs grow (criterion used: RSS at 1M within 10% of RSS at 10k).
``--py-spy`` records the monitor with py-spy during the last step's window and prints the top
frames to stderr (py-spy must be installed; it is not a requirement of the benchmark).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from bench import proc_tools as pt  # noqa: E402
from bench.benchlib import state_queues  # noqa: E402
from bench.snapshot_bench import PrivateRedis, load, log, plan_queues  # noqa: E402

WATCHED_DB = 1
STAGING_DB = 0
FLAT_TOLERANCE = 0.10


def hexists_calls(client) -> int:
    return client.info("commandstats").get("cmdstat_hexists", {}).get("calls", 0)


def hset_calls(client) -> int:
    return client.info("commandstats").get("cmdstat_hset", {}).get("calls", 0)


class Sampler:
    """RSS samples of one process between calls of ``poll``."""

    def __init__(self, pid: int):
        self.pid = pid
        self.samples: list[int] = []

    def poll(self) -> None:
        try:
            self.samples.append(pt.status_kib(self.pid))
        except OSError:
            pass


def wait_ticks(
    admin,
    queues: int,
    ticks: float,
    *,
    monitor: pt.Child,
    sampler: Sampler,
    timeout: float,
    start_calls: int | None = None,
) -> tuple[float, int]:
    """Wait until ``ticks`` full ticks were observed after ``start_calls`` HEXISTS calls."""
    base = hexists_calls(admin) if start_calls is None else start_calls
    deadline = time.monotonic() + timeout
    while True:
        calls = hexists_calls(admin)
        done = (calls - base) / queues
        if done >= ticks:
            return done, calls
        if not monitor.alive():
            raise RuntimeError(f"monitor exited:\n{monitor.tail()}")
        if time.monotonic() > deadline:
            log(f"  (only {done:.1f} of {ticks} ticks within {timeout:.0f} s)")
            return done, calls
        sampler.poll()
        time.sleep(0.25)


def measure(label: str, *, monitor: pt.Child, admin, dash, queues: int, args) -> dict:
    sampler = Sampler(monitor.pid)
    # Settle: full ticks on the new data (the first after a swap also re-renders every row).
    settled, _ = wait_ticks(
        admin,
        queues,
        args.settle_ticks,
        monitor=monitor,
        sampler=sampler,
        timeout=args.settle_ticks * args.tick_ms / 1000 * 2 + 15,
    )
    rss_settle = pt.status_kib(monitor.pid)
    sampler.samples.clear()
    calls0 = hexists_calls(admin)
    hset0 = hset_calls(dash)
    cpu0 = pt.cpu_seconds(monitor.pid)
    t0 = time.monotonic()
    spy = None
    if args.py_spy and label == args.py_spy_step:
        spy_out = os.path.join(args.tmpdir, "monitor.spy")
        exe = shutil.which("py-spy") or os.path.join(REPO, ".venv", "bin", "py-spy")
        if os.path.exists(exe):
            spy = subprocess.Popen(
                [
                    exe,
                    "record",
                    "-p",
                    str(monitor.pid),
                    "-r",
                    "100",
                    "-f",
                    "raw",
                    "-o",
                    spy_out,
                    "-d",
                    str(int(args.ticks * args.tick_ms / 1000 * 3 + 10)),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        else:
            log("  --py-spy: py-spy not found; skipped")
    lost0 = leadership_losses(monitor)
    ticks, calls1 = wait_ticks(
        admin,
        queues,
        args.ticks,
        monitor=monitor,
        sampler=sampler,
        timeout=args.ticks * args.tick_ms / 1000 * 2 + 10,
        start_calls=calls0,
    )
    cpu1 = pt.cpu_seconds(monitor.pid)
    t1 = time.monotonic()
    sampler.poll()
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        try:
            spy.wait(30)
        except subprocess.TimeoutExpired:
            spy.kill()
            spy.wait()
        print_spy(os.path.join(args.tmpdir, "monitor.spy"))
    cpu = cpu1 - cpu0
    wall = t1 - t0
    rss = sampler.samples or [pt.status_kib(monitor.pid)]
    publishes = hset_calls(dash) - hset0
    return {
        "ticks_observed": round(ticks, 2),
        "ticks_expected_at_tick_interval": round(wall / (args.tick_ms / 1000), 2),
        "window_s": round(wall, 2),
        "cpu_s": round(cpu, 3),
        "cpu_s_per_tick": round(cpu / ticks, 4) if ticks else None,
        "cpu_utilisation": round(cpu / wall, 3),
        "wall_s_per_tick": round(wall / ticks, 3) if ticks else None,
        "rss_mib_after_settle": round(rss_settle / 1024, 1),
        "rss_mib_end": round(rss[-1] / 1024, 1),
        "rss_mib_min": round(min(rss) / 1024, 1),
        "rss_mib_max": round(max(rss) / 1024, 1),
        "vm_hwm_mib": round(pt.status_kib(monitor.pid, "VmHWM") / 1024, 1),
        "threads": pt.threads(monitor.pid),
        "fragment_publishes_per_tick": round(publishes / ticks, 1) if ticks else None,
        # "lost the leader lock" lines the monitor logged during the window: it stood down and
        # started leading again from scratch (fresh state, every fragment re-sent).
        "leadership_losses": leadership_losses(monitor) - lost0,
        "settle_ticks": round(settled, 2),
    }


def leadership_losses(monitor: pt.Child) -> int:
    return monitor.log_count("lost the leader lock")


def print_spy(path: str, top: int = 30) -> None:
    if not os.path.exists(path):
        log("  py-spy wrote nothing")
        return
    own, incl, total = collections.Counter(), collections.Counter(), 0
    with open(path) as fh:
        for line in fh:
            stack, _, n = line.rstrip().rpartition(" ")
            if not stack:
                continue
            n = int(n)
            total += n
            frames = stack.split(";")
            own[frames[-1]] += n
            for f in set(frames):
                incl[f] += n
    log(f"\n===== py-spy: monitor, {total} samples (own time, top {top}) =====")
    for f, n in own.most_common(top):
        log(f"{100 * n / total:5.1f}%  {f}")
    log(f"===== py-spy: inclusive, top {top + 20} =====")
    for f, n in incl.most_common(top + 20):
        log(f"{100 * n / total:5.1f}%  {f}")


def wait_rows(dash, n: int, monitor: pt.Child, timeout: float = 180) -> float:
    """Until the monitor's state document lists every queue's figures (overview rows are rendered
    only for pages that show them)."""
    t0 = time.monotonic()
    while state_queues(dash) < n:
        if not monitor.alive():
            raise RuntimeError(f"monitor exited:\n{monitor.tail()}")
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"no figures of {n} queues from the monitor in {timeout:.0f} s:\n" + monitor.tail())
        time.sleep(0.2)
    return time.monotonic() - t0


def run(args, mon: PrivateRedis, dash_redis: PrivateRedis, children: list) -> dict:
    steps = [int(x) for x in args.steps.split(",")]
    admin = mon.client(db=WATCHED_DB, socket_timeout=120)
    staging = mon.client(db=STAGING_DB, socket_timeout=300)
    dash = dash_redis.client(socket_timeout=10)
    env = pt.app_env(
        redis_url=mon.url.rsplit("/", 1)[0] + f"/{WATCHED_DB}",
        dashboard_redis_url=dash_redis.url,
        db_path=os.path.join(args.tmpdir, "db.sqlite3"),
        tick_ms=args.tick_ms,
    )
    pt.manage(env, "migrate", "-v0")
    monitor_args = ("--lock-ttl-ms", str(args.lock_ttl_ms)) if args.lock_ttl_ms else ()
    result: dict = {
        "bench": "monitor_memory",
        "queues": args.queues,
        "tick_ms": args.tick_ms,
        "ticks_per_step": args.ticks,
        "monitor_cmd": " ".join(("manage.py", "monitor") + monitor_args),
        "goal": f"RSS flat as jobs grow: RSS at the last step within {int(FLAT_TOLERANCE * 100)}% of the first",
        "host": {"cpus": os.cpu_count(), "loadavg_start": os.getloadavg()},
        "steps": [],
    }
    monitor = None
    for jobs in steps:
        staging.flushdb()
        plans = plan_queues(args.queues, jobs, args.seed)
        log(f"step {jobs:,} jobs: loading {len(plans)} queues into the staging db")
        loaded = load(mon, plans, events_per_queue=args.events)
        staging.swapdb(STAGING_DB, WATCHED_DB)
        t_swap = time.monotonic()
        info = admin.info("memory")
        keys = admin.dbsize()
        log(
            f"  loaded {jobs:,} jobs ({keys:,} keys) in {loaded['seconds']:.1f}s and swapped them in; "
            f"redis used_memory {info['used_memory'] / 2**20:,.0f} MiB"
        )
        step = {
            "jobs": jobs,
            "redis_keys": keys,
            "redis_used_memory_mib": round(info["used_memory"] / 2**20, 1),
            "load_s": round(loaded["seconds"], 1),
        }
        if monitor is None:
            monitor = pt.start_monitor(env, args.tmpdir, args=monitor_args)
            children.append(monitor)
            step["first_publish_s"] = round(wait_rows(dash, args.queues, monitor), 2)
            log(f"  monitor pid {monitor.pid}: figures of {args.queues} queues after {step['first_publish_s']} s")
        step.update(measure(f"{jobs}", monitor=monitor, admin=admin, dash=dash, queues=args.queues, args=args))
        step["seconds_since_swap"] = round(time.monotonic() - t_swap, 1)
        log(
            f"  {jobs:>9,} jobs: RSS {step['rss_mib_end']} MiB (min {step['rss_mib_min']}, max {step['rss_mib_max']}, "
            f"peak ever {step['vm_hwm_mib']}); CPU {step['cpu_s_per_tick']} s/tick over {step['ticks_observed']} ticks "
            f"({step['wall_s_per_tick']} s wall/tick, {step['cpu_utilisation'] * 100:.0f}% of a core); "
            f"{step['fragment_publishes_per_tick']} fragment publishes/tick; "
            f"{step['leadership_losses']} leadership losses"
        )
        result["steps"].append(step)

    # A fresh process on the last step's data: what the data size alone costs.
    log("restarting the monitor on the last step's data (fresh process)")
    monitor.stop()
    children.remove(monitor)
    monitor = pt.start_monitor(env, args.tmpdir, args=monitor_args)
    children.append(monitor)
    fresh = {"jobs": steps[-1]}
    fresh.update(measure("fresh", monitor=monitor, admin=admin, dash=dash, queues=args.queues, args=args))
    log(f"  fresh monitor at {steps[-1]:,} jobs: RSS {fresh['rss_mib_end']} MiB; CPU {fresh['cpu_s_per_tick']} s/tick")
    result["fresh_monitor_last_step"] = fresh

    first, last = result["steps"][0], result["steps"][-1]
    growth = last["rss_mib_end"] - first["rss_mib_end"]
    result["rss_mib_by_jobs"] = {str(s["jobs"]): s["rss_mib_end"] for s in result["steps"]}
    result["cpu_s_per_tick_by_jobs"] = {str(s["jobs"]): s["cpu_s_per_tick"] for s in result["steps"]}
    result["rss_growth_first_to_last_mib"] = round(growth, 1)
    result["rss_growth_first_to_last_pct"] = round(100 * growth / first["rss_mib_end"], 1)
    result["memory_flat"] = growth <= FLAT_TOLERANCE * first["rss_mib_end"]
    result["host"]["loadavg_end"] = os.getloadavg()
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queues", type=int, default=1000)
    ap.add_argument("--steps", default="10000,100000,1000000", help="comma-separated job totals")
    ap.add_argument("--tick-ms", type=int, default=1000, help="QUEUEWATCH_MONITOR_TICK_MS (>= 200)")
    ap.add_argument("--ticks", type=int, default=15, help="full ticks measured per step")
    ap.add_argument("--settle-ticks", type=int, default=3, help="full ticks on new data before measuring")
    ap.add_argument("--events", type=int, default=20, help="events stream entries per queue")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument(
        "--lock-ttl-ms",
        type=int,
        default=None,
        help="pass --lock-ttl-ms to manage.py monitor (default: the command's own, 5000)",
    )
    ap.add_argument("--py-spy", action="store_true", help="profile the monitor with py-spy during one window")
    ap.add_argument(
        "--py-spy-step", default=None, help="which window to profile: a job total or 'fresh' (default: last)"
    )
    args = ap.parse_args()
    if args.py_spy_step is None:
        args.py_spy_step = args.steps.split(",")[-1]

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    args.tmpdir = tempfile.mkdtemp(prefix="qw-monmem-")
    mon, dash = PrivateRedis(), PrivateRedis()
    children: list[pt.Child] = []
    t0 = time.monotonic()
    try:
        mon.start()
        dash.start()
        log(
            f"monitored redis-server pid {mon.proc.pid} port {mon.port} (monitor reads db {WATCHED_DB}); "
            f"dashboard redis-server pid {dash.proc.pid} port {dash.port}"
        )
        result = run(args, mon, dash, children)
        result["wall_s"] = round(time.monotonic() - t0, 1)
        log("")
        log(f"{'jobs':>10} {'RSS MiB':>8} {'max MiB':>8} {'CPU s/tick':>10} {'ticks':>6} {'wall s/tick':>11}")
        for s in result["steps"] + [
            dict(result["fresh_monitor_last_step"], jobs=f"{result['steps'][-1]['jobs']} (fresh)")
        ]:
            log(
                f"{s['jobs']:>10} {s['rss_mib_end']:>8} {s['rss_mib_max']:>8} {s['cpu_s_per_tick']:>10} "
                f"{s['ticks_observed']:>6} {s['wall_s_per_tick']:>11}"
            )
        log(
            f"memory flat (within {int(FLAT_TOLERANCE * 100)}%): {result['memory_flat']} "
            f"({result['rss_growth_first_to_last_mib']:+} MiB, {result['rss_growth_first_to_last_pct']:+}%)"
        )
        print(json.dumps(result), flush=True)
        return 0
    except KeyboardInterrupt:
        log("\ninterrupted")
        return 130
    finally:
        for c in reversed(children):
            c.stop()
        mon.stop()
        dash.stop()
        shutil.rmtree(args.tmpdir, ignore_errors=True)
        log("stopped the monitor and both redis-servers; temp dir removed")


if __name__ == "__main__":
    sys.exit(main())
