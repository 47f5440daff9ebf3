"""10,000 queues followed live: the monitor's CPU, its tick, the browser's latency and the cost
of each request, while 1,000 of the queues change every second.

    .venv/bin/python bench/many_queues.py [--queues 10000] [--jobs 100000] [--changing 1000]
                                          [--seconds 60] [--tick-ms 1000] [--profile FILE]
                                          [--memory FILE] [--timeline FILE]

What it starts (loopback only, free ports, all stopped at the end, also on Ctrl-C/SIGTERM): two
private ``redis-server``s (the monitored one and the dashboard Redis), Queuewatch's web server
(``tests/support/servers.py`` ``AppServer``) on a private PostgreSQL (``tests/support/postgres.py``;
``--database sqlite`` for a file), and ``manage.py monitor`` run through
``bench/monitor_probe.py`` (timers around its steps, and how late each tick started), and a load
generator (this file with ``--generate``, a process of its own so its CPU is told apart).

1. Loads ``--queues`` - 1 queues holding ``--jobs`` jobs in BullMQ 6's layout (the loader of
   ``bench/snapshot_bench.py``: one queue holds a quarter of the jobs, the rest log-normal), plus
   one empty queue ``watched``.
2. Starts the monitor and times its first live figures (every queue in the state document).
3. Starts the generator: every 100 ms it adds one job to each of ``--changing``/10 queues
   picked at random (``HSET`` of the job, ``LPUSH wait``, the ``added`` and ``waiting`` events
   as BullMQ's ``addStandardJob`` writes them), so ``--changing`` queues change each second.
4. For ``--seconds``: the monitor's CPU (``/proc``, all threads) and the generator's, the
   monitor's RSS (sampled every 0.5 s, and its true peak in the window: ``VmHWM`` reset at the
   window's start), the probe's ``tick_late`` (how long after it fell due each tick started) and
   the event -> browser latency: a websocket on the ``watched`` queue's page (what its tab
   opens) while this process adds one job to that queue a second; from the ``waiting`` entry's
   id (Redis' clock) to the header fragment showing the new count arriving (the machine clock).
   With ``--timeline FILE`` each sample and every step the monitor's probe timed go to FILE
   (``bench/timeline_report.py FILE`` says where the samples waited).
5. With the load still running, the requests: the overview's first page sorted by name and by
   failed (descending), a name search, ``GET /api/v1/queues`` (first page) and ``/metrics``
   (whole, and four families as ``docs/metrics.md`` suggests for a large fleet)
   (time and size); 5 of each, p50 and max.
6. Stops the generator and waits until the state document equals every queue's ``LLEN wait``
   (live truth once quiet), which must happen within a snapshot period of the rolling pass.

Progress goes to stderr; ONE JSON object with every figure is the last line of stdout. Goals:
monitor CPU <= 1 core, tick lateness p95 below a tick, event -> browser p95 <= 250 ms, RSS <=
500 MiB, overview first page p50 <= 200 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from urllib.parse import urlencode

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

import redis  # noqa: E402

from bench import proc_tools as pt  # noqa: E402
from bench.benchlib import Procs, Tab, percentile, read_state, state_bytes, timed_get  # noqa: E402
from bench.snapshot_bench import PrivateRedis, load, log, plan_queues  # noqa: E402

PREFIX = "bull"
WATCHED = "watched"
ORDER_KEY = "queuewatch:state:order"
METRICS_TOKEN = "bench-metrics-" + "y" * 32
# What a scrape config of a large fleet asks for (docs/metrics.md, "At many queues").
FOUR_FAMILIES = (
    "queuewatch_queue_jobs",
    "queuewatch_queue_oldest_waiting_age_seconds",
    "queuewatch_queue_failed_total",
    "queuewatch_check_failing",
)
# The waiting tab's count in the queue page's header: ``<data class="qw-num…" value="N">``.
WAITING_COUNT = re.compile(r'state-waiting"[^>]*>[^<]*<span class="count[^"]*"><data[^>]*value="(\d+)"', re.S)


# --- the load generator (a process of its own) ---------------------------------------------------


def add_job(pipe, name: str, now_ms: int, job_id: int) -> None:
    base = f"{PREFIX}:{name}:"
    pipe.hset(
        base + str(job_id),
        mapping={"name": "gen", "data": "{}", "opts": '{"attempts":1}', "timestamp": now_ms, "delay": 0, "priority": 0},
    )
    pipe.lpush(base + "wait", job_id)
    pipe.xadd(base + "events", {"event": "added", "jobId": job_id, "name": "gen"}, maxlen=10000, approximate=True)
    pipe.xadd(base + "events", {"event": "waiting", "jobId": job_id}, maxlen=10000, approximate=True)


def generate(args) -> int:
    client = redis.Redis(port=args.redis_port, socket_timeout=30)
    names = [n.decode().split(":")[1] for n in client.scan_iter(match=f"{PREFIX}:*:meta", count=10000)]
    names = [n for n in names if n != WATCHED]
    rng = random.Random(7)
    ids: dict[str, int] = {}
    per_batch = max(1, args.changing // 10)
    next_at = time.monotonic()
    while True:
        now_ms = int(time.time() * 1000)
        pipe = client.pipeline(transaction=False)
        for name in rng.sample(names, min(per_batch, len(names))):
            ids[name] = ids.get(name, 10**7) + 1  # above the loaded jobs' ids
            add_job(pipe, name, now_ms, ids[name])
        pipe.execute()
        next_at += 0.1
        time.sleep(max(0.0, next_at - time.monotonic()))


# --- measuring ---------------------------------------------------------------------------------


def request_figures(base: str, cookie: str, server_pid: int, repeat: int = 5) -> dict:
    """Wall time of each request and the web server's own CPU for it (one request at a time:
    on a shared, loaded machine the CPU figure is the one that does not depend on the others)."""
    out = {}
    for label, path, auth in (
        ("overview_by_name", "/?sort=name", "cookie"),
        ("overview_by_failed", "/?sort=failed&dir=desc", "cookie"),
        ("overview_search", "/?q=bench-00&sort=waiting&dir=desc", "cookie"),
        ("api_queues_page", "/api/v1/queues?page=2&size=100", "cookie"),
        ("api_queues_by_failed", "/api/v1/queues?sort=failed&dir=desc", "cookie"),
        ("metrics", "/metrics", "token"),
        ("metrics_four_families", "/metrics?" + urlencode([("name[]", n) for n in FOUR_FAMILIES]), "token"),
    ):
        times, cpus, size = [], [], 0
        for _ in range(2 if label.startswith("metrics") else repeat):  # one scrape is every figure: seconds
            cpu0 = pt.cpu_seconds(server_pid)
            took, size, status = timed_get(
                base + path, cookie=cookie if auth == "cookie" else "", token=METRICS_TOKEN if auth == "token" else ""
            )
            if status != 200:
                raise RuntimeError(f"{path} answered {status}")
            times.append(took)
            cpus.append(pt.cpu_seconds(server_pid) - cpu0)
        out[label] = {
            "p50_ms": round(statistics.median(times) * 1000, 1),
            "server_cpu_p50_ms": round(statistics.median(cpus) * 1000, 1),
            "max_ms": round(max(times) * 1000, 1),
            "bytes": size,
        }
        log(
            f"  {label}: p50 {out[label]['p50_ms']} ms (server CPU {out[label]['server_cpu_p50_ms']} ms), "
            f"max {out[label]['max_ms']} ms, {size:,} bytes"
        )
    return out


class Latency:
    """Adds a job to the watched queue once a second and times the header fragment that shows it."""

    def __init__(self, client: redis.Redis):
        self.client = client
        self.count = 0
        self.sent: dict[int, int] = {}  # waiting count -> ms of its ``waiting`` event
        self.samples: list[float] = []
        self.timed: list[tuple[int, float]] = []  # (ms of the waiting event, ms it arrived)
        self.lock = threading.Lock()
        self.unmatched = ""

    def add(self) -> None:
        pipe = self.client.pipeline(transaction=False)
        now_ms = int(time.time() * 1000)
        add_job(pipe, WATCHED, now_ms, self.count + 1)
        replies = pipe.execute()
        with self.lock:
            self.count += 1
            self.sent[self.count] = int(replies[-1].decode().split("-")[0])

    def on_message(self, _tab, html: str, arrived: float) -> None:
        if not WAITING_COUNT.search(html) and not self.unmatched:
            self.unmatched = html[:1500]
            log(f"  a message on the watched page without a waiting count: {self.unmatched!r}")
        for found in WAITING_COUNT.findall(html):
            try:
                n = int(found.replace(",", "").strip())
            except ValueError:
                continue
            with self.lock:
                at = self.sent.pop(n, None)
            if at is not None:
                self.samples.append(arrived * 1000 - at)
                self.timed.append((at, arrived * 1000))


async def watch_latency(base: str, cookie: str, latency: Latency, seconds: float) -> int:
    tab = Tab(base, f"/ws/queue/default/{PREFIX}/{WATCHED}/", cookie, on_message=latency.on_message)
    await tab.connect(timeout=30)
    await asyncio.sleep(2)  # the monitor renders the header at once for a new viewer
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        await asyncio.to_thread(latency.add)
        await asyncio.sleep(1.0)
    await asyncio.sleep(2)
    await tab.close()
    return tab.messages


def sample_rss(pid: int, stop: threading.Event, out: list[int]) -> None:
    while not stop.wait(0.5):
        try:
            out.append(pt.status_kib(pid))
        except OSError:
            return


def wait_truth(mon: redis.Redis, dash: redis.Redis, timeout: float) -> tuple[float | None, int]:
    """Seconds until every queue's waiting count in the state document equals its wait list."""
    t0 = time.monotonic()
    wrong = -1
    while time.monotonic() - t0 < timeout:
        state = read_state(dash) or {"queues": []}
        pipe = mon.pipeline(transaction=False)
        for q in state["queues"]:
            pipe.llen(f"{q['prefix']}:{q['name']}:wait")
        truth = pipe.execute()
        wrong = sum(1 for q, n in zip(state["queues"], truth) if q["counts"]["waiting"] != n)
        if state["queues"] and wrong == 0:
            return time.monotonic() - t0, 0
        time.sleep(1)
    return None, wrong


def run(args, procs: Procs, children: list) -> dict:
    mon, dash_srv = PrivateRedis(), PrivateRedis()
    children.extend([mon, dash_srv])
    mon.start()
    dash_srv.start()
    admin = mon.client(socket_timeout=120)
    dash = dash_srv.client(socket_timeout=30)
    plans = plan_queues(args.queues - 1, args.jobs, 42)
    loaded = load(mon, plans, events_per_queue=20)
    admin.hset(f"{PREFIX}:{WATCHED}:meta", mapping={"opts.maxLenEvents": 10000, "version": "bullmq:6.7.0"})
    log(f"loaded {args.queues:,} queues, {args.jobs:,} jobs in {loaded['seconds']:.1f} s")

    extra = {}
    if (
        args.database == "postgres"
    ):  # what production runs on; SQLite's writer lock made pages wait on the monitor's flushes
        from tests.support.postgres import PostgresServer

        pg = PostgresServer()
        children.append(pg)
        extra["DATABASE_URL"] = pg.create_database("queuewatch")
    env = pt.app_env(
        redis_url=mon.url,
        dashboard_redis_url=dash_srv.url,
        db_path=os.path.join(args.tmpdir, "db.sqlite3"),
        tick_ms=args.tick_ms,
        QUEUEWATCH_METRICS_TOKEN=METRICS_TOKEN,
        **extra,
    )
    pt.manage(env, "migrate", "-v0")
    user, password = pt.manage(env, "demo_user", "--username", "bench").split(" / ")
    from tests.support.servers import AppServer

    app = AppServer(dict(env, QUEUEWATCH_LOG_LEVEL="INFO"))  # it learns its port from the server's log
    children.append(app)
    monitor_env = dict(env, **({"QW_PROBE_CPROFILE": os.path.abspath(args.profile)} if args.profile else {}))
    if args.memory:
        monitor_env["QW_PROBE_TRACEMALLOC"] = os.path.abspath(args.memory)
    if args.timeline:
        monitor_env["QW_PROBE_TIMELINE"] = os.path.abspath(args.timeline)
        monitor_env["QW_PROBE_NOTE_QUEUE"] = WATCHED
    monitor = procs.start(
        "monitor", [pt.PYTHON, os.path.join(REPO, "bench", "monitor_probe.py")], env=monitor_env, json_stdout=True
    )
    t0 = time.monotonic()
    while len((read_state(dash) or {"queues": []})["queues"]) < args.queues:
        if not monitor.alive() or time.monotonic() - t0 > 600:
            raise RuntimeError("the monitor did not publish every queue:\n" + monitor.tail())
        time.sleep(0.25)
    first_live = time.monotonic() - t0
    log(f"monitor pid {monitor.proc.pid}: every queue live after {first_live:.1f} s")

    generator = procs.start(
        "generator",
        [pt.PYTHON, __file__, "--generate", "--redis-port", str(mon.port), "--changing", str(args.changing)],
    )
    time.sleep(args.warmup)
    cookie = pt.login_session(app.url, user, password)
    monitor.send_line("snap")
    monitor.expect("probe", 30)  # from here on
    rss: list[int] = []
    stop_rss = threading.Event()
    threading.Thread(target=sample_rss, args=(monitor.proc.pid, stop_rss, rss), daemon=True).start()
    # The window's true peak: a health run's peak lasts less than a sampling interval.
    peak_known = pt.reset_peak_rss(monitor.proc.pid)
    cpu0, gen0, w0 = monitor.cpu_seconds(), generator.cpu_seconds(), time.monotonic()
    changes0 = admin.info("commandstats").get("cmdstat_lpush", {}).get("calls", 0)
    latency = Latency(admin)
    messages = asyncio.run(watch_latency(app.url, cookie, latency, args.seconds))
    cpu1, gen1, w1 = monitor.cpu_seconds(), generator.cpu_seconds(), time.monotonic()
    changes1 = admin.info("commandstats").get("cmdstat_lpush", {}).get("calls", 0)
    stop_rss.set()
    if peak_known:
        rss.append(pt.status_kib(monitor.proc.pid, "VmHWM"))
    monitor.send_line("snap")
    probe = monitor.expect("probe", 30)["probe"]
    if args.memory:
        monitor.send_line("memory")
        monitor.expect("memory", 300)
    if args.timeline:
        with open(args.timeline, "w") as out:  # the monitor appends its steps after these
            for sent_ms, arrived_ms in latency.timed:
                out.write(json.dumps(["sample", sent_ms / 1000, arrived_ms / 1000]) + "\n")
        monitor.send_line("timeline")
        monitor.expect("timeline", 60)
    monitor.send_line("heap")
    heap = monitor.expect("heap", 120)["heap"]
    window = w1 - w0
    log(f"window {window:.0f} s: monitor {100 * (cpu1 - cpu0) / window:.0f}% of a core")
    requests = request_figures(app.url, cookie, app.proc.pid)
    # What a sorted request and /metrics parse: the order document and the whole state document.
    documents = {"state_bytes": state_bytes(dash), "order_bytes": dash.strlen(ORDER_KEY)}

    procs.stop(generator)
    quiet_s, wrong = wait_truth(admin, dash, timeout=args.truth_timeout)
    log(f"after the load: state document equal to every wait list after {quiet_s} s ({wrong} differ)")
    lat = latency.samples
    tick_late = probe.get("tick_late", {})
    return {
        "bench": "many_queues",
        "queues": args.queues,
        "jobs": args.jobs,
        "changing_per_s": round((changes1 - changes0) / window, 1),
        "tick_ms": args.tick_ms,
        "window_s": round(window, 1),
        "first_live_s": round(first_live, 1),
        "monitor_cpu_cores": round((cpu1 - cpu0) / window, 3),
        "generator_cpu_cores": round((gen1 - gen0) / window, 3),
        "monitor_rss_mib_max": round(max(rss) / 1024, 1) if rss else None,
        "monitor_rss_mib_p50": round(percentile(rss, 50) / 1024, 1) if rss else None,
        "monitor_rss_max_is_peak": peak_known,  # the max is VmHWM's, not only the 0.5 s samples'
        # After the window: what a full collection, then malloc_trim, take off the RSS.
        "monitor_heap": heap,
        # Each time in the window the RSS rose 16 MiB above its highest: what each thread ran.
        "monitor_rss_peaks": probe.get("rss_peaks", []),
        "tick_late_ms": {k: tick_late.get(k) for k in ("n", "p50_ms", "p95_ms", "max_ms")},
        "event_to_browser_ms": {
            "n": len(lat),
            "sent": latency.count,
            "p50": round(percentile(lat, 50), 1) if lat else None,
            "p95": round(percentile(lat, 95), 1) if lat else None,
            "max": round(max(lat), 1) if lat else None,
        },
        "watched_tab_messages": messages,
        "requests": requests,
        "documents": documents,
        "quiet_truth_s": None if quiet_s is None else round(quiet_s, 1),
        "quiet_truth_wrong_queues": wrong,
        "probe": {
            k: probe[k]
            for k in (
                "refresh_full",
                "refresh_dirty",
                "take_snapshots",
                "publish_state",
                "apply_events",
                "flush",
                "gc_gen0",
                "gc_gen1",
                "gc_gen2",
            )
            if k in probe
        },
        # Each scheduled step of the leader's loop (the tick, the snapshot standing in for it, the
        # publish of changes, discovery, the flush, the periodic jobs), by name.
        "steps": {k.removeprefix("job_"): v for k, v in probe.items() if k.startswith("job_")},
        "goals": {
            "monitor_cpu_le_1_core": (cpu1 - cpu0) / window <= 1.0,
            "event_to_browser_p95_le_250ms": bool(lat) and percentile(lat, 95) <= 250,
            "rss_le_500mib": bool(rss) and max(rss) / 1024 <= 500,
            "overview_p50_le_200ms": max(
                requests["overview_by_name"]["p50_ms"], requests["overview_by_failed"]["p50_ms"]
            )
            <= 200,
        },
        "host": {"cpus": os.cpu_count(), "loadavg_end": os.getloadavg()},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queues", type=int, default=10000)
    ap.add_argument("--jobs", type=int, default=100000)
    ap.add_argument("--changing", type=int, default=1000, help="queues changing per second")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--warmup", type=float, default=10)
    ap.add_argument("--tick-ms", type=int, default=1000)
    ap.add_argument("--truth-timeout", type=float, default=60)
    ap.add_argument("--database", choices=("postgres", "sqlite"), default="postgres")
    ap.add_argument("--profile", help="write the monitor's cProfile stats to this file")
    ap.add_argument(
        "--timeline",
        help="write each latency sample and the monitor's timed steps (wall start, end) to this file"
        " as JSON lines: what the loop was doing when an update was late",
    )
    ap.add_argument(
        "--memory", help="write where the monitor's memory is (tracemalloc, top 40 lines) to this file at the end"
    )
    ap.add_argument("--generate", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--redis-port", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.generate:
        return generate(args)

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    args.tmpdir = tempfile.mkdtemp(prefix="qw-many-")
    procs = Procs(__import__("pathlib").Path(args.tmpdir))
    children: list = []
    try:
        result = run(args, procs, children)
        print(json.dumps(result), flush=True)
        return 0
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    finally:
        procs.stop_all()
        for c in reversed(children):
            c.stop()
        shutil.rmtree(args.tmpdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
