"""10,000 queues and 2,000,000 jobs on a 3-primary Redis Cluster, and the same data on one node,
side by side: one full snapshot, the monitor's CPU per tick and RSS, and commands/s per node with
1 and 50 websocket tabs open, under 200 jobs/s of workload.

    .venv/bin/python bench/cluster_scale.py [--queues 10000] [--jobs 2000000] [--rate 200]
                                            [--topology cluster|single|both] [--seconds 30]
                                            [--tabs 1,50] [--tags 0] [--replicas 1]

What it starts (loopback only, free ports, all stopped at the end, also on Ctrl-C/SIGTERM or the
time limit), once per topology, one topology after the other:

* the monitored Redis: ``tests/support/redis_cluster.py`` ``RedisCluster`` (3 primaries, each with
  ``--replicas`` replicas, made by ``redis-cli --cluster create``; Queuewatch gets its
  ``redis+cluster://`` URL), or one private ``redis-server`` (``bench/snapshot_bench.py``
  ``PrivateRedis``, a ``redis://`` URL) for ``single``;
* the dashboard Redis (a plain private ``redis-server``), a private PostgreSQL
  (``tests/support/postgres.py``; ``--database sqlite`` for a file), Queuewatch's web server
  (``tests/support/servers.py`` ``AppServer``) and ``manage.py monitor`` under
  ``bench/monitor_probe.py`` (its step timers: how many ticks ran, how late);
* the load generator: this file with ``--generate``, a process of its own so its CPU is told apart.

The data: ``bench/snapshot_bench.py``'s plan and bulk loader (BullMQ 6's layout; one queue holds a
quarter of the jobs, the rest log-normal), under the prefix ``bull`` with hash-tagged queue names,
so every key of a queue shares one slot: by default each queue has a tag of its own, ``{t0000}``,
``{t0001}`` … (a queue per tenant: the queues land on all three primaries, about a third each);
``--tags K`` names them ``{gK}-NNNN`` instead, K tags shared by all queues (queues sharing a tag
share a slot, so the monitor reads them in fewer groups). On the cluster, the loader writes each
queue to the primary owning its slot (``redis.crc.key_slot`` against the slot map, one pipelined
``load`` per primary). The single node gets exactly the same names and jobs.

The workload is NOT Node BullMQ (10,000 queues would need 10,000 Node workers or queue objects):
it is the generator, which writes what BullMQ's scripts write, through redis-py (its
``RedisCluster`` pipeline on the cluster, routed per slot): every 100 ms it adds ``--rate``/10
jobs to random queues (the job hash, ``LPUSH wait``, the ``added`` and ``waiting`` events, as
``addStandardJob`` does) and completes the jobs it added 100 ms before (``LREM wait``, the job's
``processedOn``/``finishedOn``/``returnvalue``, ``ZADD completed``, the ``active`` and
``completed`` events, as ``moveToActive``/``moveToFinished`` leave them), so ``--rate`` jobs/s go
through and the queues keep their size.

Per topology, in this order:

1. load; start the generator;
2. a baseline window (``--seconds``, the generator alone): commands/s per primary;
3. one full snapshot of every queue through the product's own reader: the source kind serving
   the URL (``queues.sources.factory.source_for``; ``RedisClusterSource.snapshots`` groups queues
   by the primary owning them), after its ``discover()``: ``--snapshot-runs`` runs, p50 and max
   (goal <= 500 ms; in this process with the monitor's collector thresholds, ``gc_tuning``, as
   the monitor takes it), the Redis commands each run costs (every primary's ``INFO commandstats``,
   less the generator's baseline rate over the run);
4. the web server and the monitor; the seconds until the monitor publishes every queue;
5. for each ``--tabs`` count (tabs are added, never removed): ``--warmup`` s, then a window of
   ``--seconds``: commands/s per primary (``INFO commandstats`` call deltas, INFO excluded) gross
   and net of the generator (the baseline scaled by the window's ``LPUSH`` rate over the
   baseline's: LPUSH comes from the generator only), Redis CPU per primary, the monitor's CPU
   (``/proc``, all threads), its CPU per tick (CPU over the ticks the probe saw start), tick
   lateness, its RSS (max, sampled every 0.5 s), the web server's CPU and the generator's. Tab i
   (as in ``bench/redis_load.py``) is a queue page with its failed list open when i is even (a
   different queue each, spread over the names, so over the primaries) and the overview's first
   page when i is odd (its socket names the page's rows view, as the page's script does).

``--discovery-keys-per-s N`` sets the monitor's ``QUEUEWATCH_DISCOVERY_KEYS_PER_S``. On one node
the monitor walks the keyspace at that budget (product default 5,000 keys/s, at most one step a
second, fewer when its loop is slow), so its first view of every queue waits for a walk over
every key (about 2.1 million here); a Cluster's discovery is one whole ``SCAN`` of every primary
per pass, with no budget. The seconds until every queue is published, and how many were
published each minute before, are in ``first_live_s`` and ``first_live_progress``.

Progress goes to stderr; ONE JSON object is the last line of stdout:
``{"bench": "cluster_scale", ..., "cluster": {...}, "single": {...}}``. A failure of the product
(an exception, a monitor that never publishes every queue) is reported in that topology's
``"error"`` with the monitor's log tail, and the other topology still runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
from pathlib import Path

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

import redis  # noqa: E402
from redis.crc import key_slot  # noqa: E402

from bench import proc_tools as pt  # noqa: E402
from bench.benchlib import Procs, Tab, commandstats, install_time_limit, overview_view, rates, state_queues  # noqa: E402
from bench.many_queues import add_job, sample_rss  # noqa: E402
from bench.snapshot_bench import PrivateRedis, load, log, plan_queues  # noqa: E402

PREFIX = "bull"
SNAPSHOT_GOAL_MS = 500
RATE_BATCHES_PER_S = 10
# The monitor's steps reported per window (bench/monitor_probe.py): ``discover`` is a whole SCAN of
# every primary on a Cluster (its kind has no budgeted walk), a budgeted step on one node.
PROBE_STEPS = ("discover", "refresh_full", "refresh_dirty", "take_snapshots", "apply_events", "publish_state")


# --- names and placement -------------------------------------------------------------------------


def queue_names(n: int, tags: int) -> list[str]:
    """Hash-tagged queue names: a tag per queue (``{t0001}``), or ``tags`` tags shared by all."""
    width = max(4, len(str(n - 1)))
    if tags <= 0:
        return [f"{{t{i:0{width}d}}}" for i in range(n)]
    return [f"{{g{i % tags}}}-{i:0{width}d}" for i in range(n)]


def slot_owners(client: redis.Redis) -> list[tuple[int, int, int]]:
    """``(first slot, last slot, primary port)`` of every slot range, from ``CLUSTER SLOTS``."""
    return [(int(s), int(e), int(primary[1])) for s, e, primary, *_ in client.execute_command("CLUSTER", "SLOTS")]


def owner_port(ranges: list[tuple[int, int, int]], name: str) -> int:
    slot = key_slot(f"{PREFIX}:{name}:meta".encode())
    for first, last, port in ranges:
        if first <= slot <= last:
            return port
    raise LookupError(f"no primary serves slot {slot}")


class _Port:
    """What ``snapshot_bench.load`` needs of a server: its port."""

    def __init__(self, port: int):
        self.port = port


# --- the load generator (a process of its own) ---------------------------------------------------


def finish_job(pipe, name: str, now_ms: int, job_id: int) -> None:
    """What a worker leaves of a job it took and completed (moveToActive + moveToFinished)."""
    base = f"{PREFIX}:{name}:"
    pipe.lrem(base + "wait", 1, job_id)
    pipe.hset(
        base + str(job_id),
        mapping={"processedOn": now_ms - 5, "finishedOn": now_ms, "returnvalue": '{"ok":true}', "ats": 1, "atm": 1},
    )
    pipe.zadd(base + "completed", {str(job_id): now_ms})
    pipe.xadd(base + "events", {"event": "active", "jobId": job_id, "prev": "waiting"}, maxlen=10000, approximate=True)
    pipe.xadd(
        base + "events",
        {"event": "completed", "jobId": job_id, "returnvalue": '{"ok":true}', "prev": "active"},
        maxlen=10000,
        approximate=True,
    )


def generate(args) -> int:
    if args.cluster_port:
        client = redis.cluster.RedisCluster(host="127.0.0.1", port=args.cluster_port, socket_timeout=30)
    else:
        client = redis.Redis(host="127.0.0.1", port=args.redis_port, socket_timeout=30)
    names = queue_names(args.queues, args.tags)
    rng = random.Random(11)
    per_batch = max(1, round(args.rate / RATE_BATCHES_PER_S))
    next_id = 10**7  # above the loaded jobs' ids
    previous: list[tuple[str, int]] = []
    next_at = time.monotonic()
    while True:
        now_ms = int(time.time() * 1000)
        pipe = client.pipeline(transaction=False)
        for name, job_id in previous:
            finish_job(pipe, name, now_ms, job_id)
        previous = []
        for name in rng.sample(names, min(per_batch, len(names))):
            next_id += 1
            add_job(pipe, name, now_ms, next_id)
            previous.append((name, next_id))
        pipe.execute()
        next_at += 1 / RATE_BATCHES_PER_S
        time.sleep(max(0.0, next_at - time.monotonic()))


# --- one topology ---------------------------------------------------------------------------------


class Topology:
    """The monitored Redis of one run: its URL, its primaries' ports and a client of each."""

    def __init__(self, kind: str, replicas: int):
        self.kind = kind
        self.cluster = None
        self.single: PrivateRedis | None = None
        if kind == "cluster":
            from tests.support.redis_cluster import RedisCluster

            self.cluster = RedisCluster(replicas=replicas)
            self.ports = self.cluster.primary_ports()
            self.url = self.cluster.url
        else:
            self.single = PrivateRedis()
            self.single.start()
            self.ports = [self.single.port]
            self.url = self.single.url
        self.clients = {port: redis.Redis(host="127.0.0.1", port=port, socket_timeout=300) for port in self.ports}

    def generator_args(self) -> list[str]:
        if self.cluster is not None:
            return ["--cluster-port", str(self.ports[0])]
        return ["--redis-port", str(self.ports[0])]

    def place(self, names: list[str]) -> dict[int, list[str]]:
        """The queue names each primary owns."""
        if self.cluster is None:
            return {self.ports[0]: list(names)}
        ranges = slot_owners(self.clients[self.ports[0]])
        out: dict[int, list[str]] = {port: [] for port in self.ports}
        for name in names:
            out[owner_port(ranges, name)].append(name)
        return out

    def stats(self) -> dict[int, dict]:
        return {port: commandstats(client) for port, client in self.clients.items()}

    def stop(self) -> None:
        for client in self.clients.values():
            client.close()
        if self.cluster is not None:
            self.cluster.stop()
        if self.single is not None:
            self.single.stop()


def per_node_rates(before: dict[int, dict], after: dict[int, dict], seconds: float) -> dict[int, dict]:
    out = {}
    for port in after:
        per, total, cpu = rates(before[port], after[port], seconds)
        out[port] = {"cmds_per_s": total, "lpush_per_s": per.get("lpush", 0.0), "redis_cpu_pct": cpu, "per": per}
    return out


def commands_between(before: dict[int, dict], after: dict[int, dict]) -> int:
    total = 0
    for port in after:
        for cmd, (calls, _usec) in after[port].items():
            if cmd not in ("info", "__cpu__"):
                total += calls - before[port].get(cmd, (0, 0))[0]
    return total


def time_snapshots(url: str, runs: int, expect: int, topo: Topology, baseline: dict[int, dict]) -> dict:
    """The product's own reader: the source kind serving ``url``, discover, then snapshots. The
    commands of a run are the primaries' commandstats deltas less the generator's (its baseline
    rate over the run's duration)."""
    from dashboard.monitor.gc_tuning import tune_for_the_monitor
    from queues.sources.factory import source_for
    from queues.sources.spec import ConnectionSpec

    source = source_for(ConnectionSpec(name="default", url=url, prefixes=(PREFIX,)), socket_timeout=120)
    # Timed with the collector thresholds the monitor runs with (``manage.py monitor``): with
    # Python's defaults a snapshot's short-lived objects set off collections the monitor does
    # not run (in process, 10,000 queues over 3 primaries: 672-716 ms against 516-549 ms).
    thresholds = gc.get_threshold()
    tune_for_the_monitor()
    try:
        t = time.perf_counter()
        queues = source.discover()
        discover_s = time.perf_counter() - t
        if len(queues) != expect:
            raise RuntimeError(f"discover() found {len(queues)} queues, {expect} loaded")
        times, cpus, commands = [], [], []
        snaps: list = []
        for _ in range(runs + 1):  # the first run warms the connections and the slot map
            before = topo.stats()
            c0 = sum(os.times()[:2])
            t = time.perf_counter()
            snaps = source.snapshots(queues)
            times.append(time.perf_counter() - t)
            cpus.append(sum(os.times()[:2]) - c0)
            generator = sum(b["cmds_per_s"] for b in baseline.values()) * times[-1]
            commands.append(commands_between(before, topo.stats()) - generator)
        times, cpus, commands = times[1:], cpus[1:], commands[1:]
        jobs = sum(sum(s.counts.values()) for s in snaps)
        return {
            "queues": len(queues),
            "jobs_counted": jobs,
            "discover_ms": round(discover_s * 1000, 1),
            "runs": runs,
            "p50_ms": round(statistics.median(times) * 1000, 1),
            "max_ms": round(max(times) * 1000, 1),
            "bench_cpu_p50_ms": round(statistics.median(cpus) * 1000, 1),
            "commands_per_run": round(statistics.median(commands)),
            "goal_le_500ms": statistics.median(times) * 1000 <= SNAPSHOT_GOAL_MS,
        }
    finally:
        gc.set_threshold(*thresholds)
        source.close()


def node_figures(window: dict[int, dict], baseline: dict[int, dict]) -> dict:
    """Per primary: gross commands/s, net of the generator, Redis CPU; and their sums."""
    nodes = {}
    for port, w in window.items():
        b = baseline[port]
        scale = w["lpush_per_s"] / b["lpush_per_s"] if b["lpush_per_s"] else 1.0
        nodes[str(port)] = {
            "cmds_per_s": round(w["cmds_per_s"], 1),
            "net_cmds_per_s": round(w["cmds_per_s"] - b["cmds_per_s"] * scale, 1),
            "redis_cpu_pct": round(w["redis_cpu_pct"], 1),
            "top": {k: round(v, 1) for k, v in sorted(w["per"].items(), key=lambda kv: -kv[1])[:6]},
        }
    return {
        "per_node": nodes,
        "net_cmds_per_s_total": round(sum(n["net_cmds_per_s"] for n in nodes.values()), 1),
        "net_cmds_per_s_max_node": round(max(n["net_cmds_per_s"] for n in nodes.values()), 1),
    }


async def open_tabs(tabs: list[Tab], n: int, base: str, cookie: str, names: list[str], view: str) -> None:
    while len(tabs) < n:
        i = len(tabs)
        if i % 2 == 0:  # a different queue each, spread over the names (so over the primaries)
            q = names[(i // 2) * 397 % len(names)]
            tab = Tab(base, f"/ws/queue/default/{PREFIX}/{urllib.parse.quote(q)}/?state=failed&list=1", cookie)
        else:
            tab = Tab(base, "/ws/overview/", cookie, first_message=json.dumps({"view": view}))
        await tab.connect(timeout=60)
        tabs.append(tab)


def run_topology(kind: str, args, tmpdir: str) -> dict:
    procs = Procs(Path(tmpdir))
    children: list = []
    out: dict = {"topology": kind}
    topo = None
    monitor = None
    try:
        t0 = time.monotonic()
        topo = Topology(kind, args.replicas)
        out["primaries"] = len(topo.ports)
        out["replicas_per_primary"] = args.replicas if kind == "cluster" else 0
        log(f"[{kind}] monitored Redis up ({topo.url}) in {time.monotonic() - t0:.1f} s")

        plans = plan_queues(args.queues, args.jobs, 42)
        names = queue_names(args.queues, args.tags)
        for plan, name in zip(plans, names):
            plan.name = name
        placed = topo.place(names)
        by_name = {p.name: p for p in plans}
        t0 = time.perf_counter()
        for port, owned in placed.items():
            if owned:
                load(_Port(port), [by_name[n] for n in owned], events_per_queue=20)
        out["load_s"] = round(time.perf_counter() - t0, 1)
        out["queues_per_node"] = {str(port): len(owned) for port, owned in placed.items()}
        out["jobs_per_node"] = {str(port): sum(by_name[n].jobs for n in owned) for port, owned in placed.items()}
        out["used_memory_mib_per_node"] = {
            str(port): round(c.info("memory")["used_memory"] / 2**20) for port, c in topo.clients.items()
        }
        log(
            f"[{kind}] loaded {args.queues:,} queues, {args.jobs:,} jobs in {out['load_s']} s: "
            f"queues per primary {out['queues_per_node']}"
        )

        generator = procs.start(
            "generator",
            [
                pt.PYTHON,
                __file__,
                "--generate",
                *topo.generator_args(),
                "--queues",
                str(args.queues),
                "--tags",
                str(args.tags),
                "--rate",
                str(args.rate),
            ],
        )
        time.sleep(3)
        if not generator.alive():
            raise RuntimeError("the generator exited:\n" + generator.tail())

        before, g0, w0 = topo.stats(), generator.cpu_seconds(), time.monotonic()
        time.sleep(args.seconds)
        after, g1, w1 = topo.stats(), generator.cpu_seconds(), time.monotonic()
        baseline = per_node_rates(before, after, w1 - w0)
        out["baseline"] = {
            "window_s": round(w1 - w0, 1),
            "generator_cpu_cores": round((g1 - g0) / (w1 - w0), 3),
            "jobs_added_per_s": round(sum(b["lpush_per_s"] for b in baseline.values()), 1),
            "cmds_per_s_per_node": {str(p): round(b["cmds_per_s"], 1) for p, b in baseline.items()},
        }
        log(f"[{kind}] generator alone: {out['baseline']}")

        out["snapshot"] = time_snapshots(topo.url, args.snapshot_runs, args.queues, topo, baseline)
        s = out["snapshot"]
        log(
            f"[{kind}] one full snapshot of {s['queues']:,} queues: p50 {s['p50_ms']} ms, max {s['max_ms']} ms, "
            f"{s['commands_per_run']:,} commands (discover {s['discover_ms']} ms)"
        )

        # Queuewatch: dashboard Redis, database, web server, monitor.
        dash_srv = PrivateRedis()
        children.append(dash_srv)
        dash_srv.start()
        dash = dash_srv.client(socket_timeout=30)
        extra = {}
        if args.database == "postgres":
            from tests.support.postgres import PostgresServer

            pg = PostgresServer()
            children.append(pg)
            extra["DATABASE_URL"] = pg.create_database("queuewatch")
        env = pt.app_env(
            redis_url=topo.url,
            dashboard_redis_url=dash_srv.url,
            db_path=os.path.join(tmpdir, f"{kind}.sqlite3"),
            tick_ms=args.tick_ms,
            QUEUEWATCH_PREFIXES=PREFIX,
            **extra,
            **(
                {"QUEUEWATCH_DISCOVERY_KEYS_PER_S": str(args.discovery_keys_per_s)} if args.discovery_keys_per_s else {}
            ),
        )
        pt.manage(env, "migrate", "-v0")
        user, password = pt.manage(env, "demo_user", "--username", "bench").split(" / ")
        from tests.support.servers import AppServer

        app = AppServer(dict(env, QUEUEWATCH_LOG_LEVEL="INFO"))
        children.append(app)
        monitor = procs.start(
            "monitor", [pt.PYTHON, os.path.join(REPO, "bench", "monitor_probe.py")], env=env, json_stdout=True
        )
        t0 = time.monotonic()
        out["first_live_progress"] = progress = []  # (seconds, queues published) once a minute
        while state_queues(dash) < args.queues:
            if not monitor.alive():
                raise RuntimeError("the monitor exited before publishing every queue")
            if time.monotonic() - t0 >= 60 * (len(progress) + 1):
                progress.append((round(time.monotonic() - t0), state_queues(dash)))
                log(f"[{kind}] the monitor publishes {progress[-1][1]:,} queues after {progress[-1][0]} s")
            if time.monotonic() - t0 > args.first_live_timeout:
                raise RuntimeError(
                    f"the monitor published {state_queues(dash)} of {args.queues} queues in "
                    f"{args.first_live_timeout:.0f} s"
                )
            time.sleep(0.25)
        out["first_live_s"] = round(time.monotonic() - t0, 1)
        log(f"[{kind}] the monitor published every queue after {out['first_live_s']} s")

        cookie = pt.login_session(app.url, user, password)
        view = overview_view(app.url, cookie)
        out["windows"] = asyncio.run(
            measure_tabs(args, topo, monitor, generator, app, cookie, names, view, baseline, kind)
        )
        routine = ("waiting for leadership", ": leading", "stopped leading")
        lines = [ln for ln in monitor.tail(10**7).splitlines() if ln.strip() and not any(r in ln for r in routine)]
        out["monitor_log"] = {"lines_not_routine": len(lines), "first": lines[:5]}
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
        out["traceback"] = traceback.format_exc()[-3000:]
        if monitor is not None:
            out["monitor_log_tail"] = monitor.tail(3000)
        log(f"[{kind}] FAILED: {out['error']}\n{out['traceback']}")
        if monitor is not None:
            log(f"--- monitor log tail ---\n{out['monitor_log_tail']}")
    finally:
        procs.stop_all()
        for c in reversed(children):
            with contextlib.suppress(Exception):
                c.stop()
        if topo is not None:
            topo.stop()
    return out


async def measure_tabs(args, topo, monitor, generator, app, cookie, names, view, baseline, kind) -> dict:
    windows = {}
    tabs: list[Tab] = []
    try:
        for n in args.tabs:
            await open_tabs(tabs, n, app.url, cookie, names, view)
            await asyncio.sleep(args.warmup)
            if not monitor.alive():
                raise RuntimeError("the monitor exited")
            monitor.send_line("snap")
            await asyncio.to_thread(monitor.expect, "probe", 60)  # from here on
            rss: list[int] = []
            stop_rss = threading.Event()
            threading.Thread(target=sample_rss, args=(monitor.proc.pid, stop_rss, rss), daemon=True).start()
            before = topo.stats()
            m0, g0, a0, w0 = (
                monitor.cpu_seconds(),
                generator.cpu_seconds(),
                pt.cpu_seconds(app.proc.pid),
                time.monotonic(),
            )
            await asyncio.sleep(args.seconds)
            after = topo.stats()
            m1, g1, a1, w1 = (
                monitor.cpu_seconds(),
                generator.cpu_seconds(),
                pt.cpu_seconds(app.proc.pid),
                time.monotonic(),
            )
            stop_rss.set()
            monitor.send_line("snap")
            probe = (await asyncio.to_thread(monitor.expect, "probe", 60))["probe"]
            seconds = w1 - w0
            late = probe.get("tick_late", {})
            ticks = late.get("n") or 0
            window_rates = per_node_rates(before, after, seconds)
            w = node_figures(window_rates, baseline)
            w.update(
                {
                    "tabs": n,
                    "tabs_open": sum(1 for t in tabs if t.is_open),
                    "tab_messages": sum(t.messages for t in tabs),
                    "window_s": round(seconds, 1),
                    "monitor_cpu_cores": round((m1 - m0) / seconds, 3),
                    "ticks": ticks,
                    "monitor_cpu_per_tick_s": round((m1 - m0) / ticks, 3) if ticks else None,
                    "tick_late_ms": {k: late.get(k) for k in ("p50_ms", "p95_ms", "max_ms")},
                    "monitor_rss_mib_max": round(max(rss) / 1024, 1) if rss else None,
                    "web_cpu_cores": round((a1 - a0) / seconds, 3),
                    "generator_cpu_cores": round((g1 - g0) / seconds, 3),
                    "jobs_added_per_s": round(sum(r["lpush_per_s"] for r in window_rates.values()), 1),
                    "probe": {
                        k: {f: probe[k].get(f) for f in ("n", "p50_ms", "p95_ms", "max_ms", "total_ms")}
                        for k in PROBE_STEPS
                        if k in probe
                    },
                }
            )
            windows[str(n)] = w
            log(
                f"[{kind}] {n} tabs: net commands/s per node "
                f"{ {p: v['net_cmds_per_s'] for p, v in w['per_node'].items()} }, monitor "
                f"{w['monitor_cpu_cores']} cores ({w['monitor_cpu_per_tick_s']} s per tick over {ticks} ticks), "
                f"RSS {w['monitor_rss_mib_max']} MiB, generator {w['generator_cpu_cores']} cores"
            )
    finally:
        for t in tabs:
            await t.close()
    return windows


def summary(result: dict) -> dict:
    """The headline figures of each topology, side by side."""
    out = {}
    for kind in ("cluster", "single"):
        r = result.get(kind)
        if not r or "error" in r:
            continue
        row = {
            "snapshot_p50_ms": r["snapshot"]["p50_ms"],
            "first_live_s": r.get("first_live_s"),
        }
        for n, w in r.get("windows", {}).items():
            row[f"tabs_{n}"] = {
                "net_cmds_per_s_per_node": [v["net_cmds_per_s"] for v in w["per_node"].values()],
                "monitor_cpu_cores": w["monitor_cpu_cores"],
                "monitor_cpu_per_tick_s": w["monitor_cpu_per_tick_s"],
                "monitor_rss_mib_max": w["monitor_rss_mib_max"],
                "generator_cpu_cores": w["generator_cpu_cores"],
            }
        out[kind] = row
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queues", type=int, default=10000)
    ap.add_argument("--jobs", type=int, default=2_000_000)
    ap.add_argument("--rate", type=float, default=200, help="jobs/s the generator adds (and completes)")
    ap.add_argument("--topology", choices=("cluster", "single", "both"), default="both")
    ap.add_argument("--seconds", type=float, default=30, help="each measured window")
    ap.add_argument("--warmup", type=float, default=10, help="seconds after the tabs change before measuring")
    ap.add_argument("--tabs", default="1,50", help="tab counts, ascending")
    ap.add_argument("--tags", type=int, default=0, help="0: a hash tag per queue; K: K tags shared by all queues")
    ap.add_argument("--replicas", type=int, default=1, help="replicas per cluster primary")
    ap.add_argument("--snapshot-runs", type=int, default=5)
    ap.add_argument("--tick-ms", type=int, default=1000)
    ap.add_argument("--first-live-timeout", type=float, default=900)
    ap.add_argument(
        "--discovery-keys-per-s",
        type=int,
        help="QUEUEWATCH_DISCOVERY_KEYS_PER_S for the monitor (default: the product's; one node only, a Cluster's "
        "discovery is one whole SCAN per pass)",
    )
    ap.add_argument("--database", choices=("postgres", "sqlite"), default="postgres")
    ap.add_argument("--time-limit", type=float, default=5400, help="seconds before the whole run is stopped")
    ap.add_argument("--generate", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--redis-port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--cluster-port", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.generate:
        return generate(args)
    args.tabs = sorted(int(n) for n in args.tabs.split(","))

    install_time_limit(args.time_limit)
    tmpdir = tempfile.mkdtemp(prefix="qw-cluster-scale-")
    result: dict = {
        "bench": "cluster_scale",
        "queues": args.queues,
        "jobs": args.jobs,
        "rate_jobs_per_s": args.rate,
        "hash_tags": "one per queue" if args.tags <= 0 else args.tags,
        "tick_ms": args.tick_ms,
        "tabs": args.tabs,
        "discovery_keys_per_s": args.discovery_keys_per_s or "product default",
    }
    try:
        kinds = ("cluster", "single") if args.topology == "both" else (args.topology,)
        for kind in kinds:
            result[kind] = run_topology(kind, args, tmpdir)
        result["side_by_side"] = summary(result)
        result["host"] = {"cpus": os.cpu_count(), "loadavg_end": os.getloadavg()}
        print(json.dumps(result), flush=True)
        return 1 if any("error" in result[k] for k in kinds) else 0
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    finally:
        signal.alarm(0)
        shutil.rmtree(tmpdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
