"""Live-update latency: from a real Node BullMQ worker failing a job to the updated failed-list
fragment containing that job arriving at a websocket client.

    .venv/bin/python bench/live_latency.py [--count 220] [--interval-min 100] [--interval-max 200]
                                           [--variants quiet,loaded] [--tabs N] [--tick-ms N] [--probe]

What it starts (loopback only, free ports, all stopped at the end, also on Ctrl-C/SIGTERM/timeout):
two private ``redis-server`` processes (monitored + dashboard), Queuewatch (the web server +
``manage.py monitor``, the product's default tick unless ``--tick-ms``), a logged-in websocket
client on ``/ws/queue/default/bull/latency/?state=failed&list=1`` (what the queue page's failed
tab opens), and ``bench/node/failer.mjs`` (real Node BullMQ 6.7.0 from ``bench/node``).

Per variant, the failer adds one job every 100-200 ms (uniformly random, so failures are spaced
out and we measure latency, not queueing) and its Worker throws for each. Timestamps, all from
the same machine clock (CLOCK_REALTIME: Node ``Date.now()``, Python ``time.time()``, Redis TIME):

* ``thrown``: Node, in the processor right before ``throw``;
* ``event``: the millisecond part of the ``failed`` entry's id in the queue's events stream, i.e.
  Redis' clock when ``moveToFinished`` wrote the failure (what the monitor's XREAD sees);
* ``arrived``: the client, when the first fragment whose rows include ``data-job-id="<id>"``
  arrives.

Reported: p50/p95/p99/max of ``arrived - thrown`` (the end-to-end figure, goal p95 <= 250 ms),
plus the split ``event - thrown`` (BullMQ's own work) and ``arrived - event`` (Queuewatch's
pipeline: XREAD, 100 ms coalescing, the new row's read, render, channel layer, web server).

Variants: ``quiet`` (only the latency queue), ``loaded`` (additionally ``bench/node/workload.mjs``:
50 more queues, 100 jobs/s, every 5th failing, started before the measurement and left running;
with ``--tabs N``, N more websocket clients are opened first: even ones on a workload queue's
failed list, odd ones on the overview, like ``redis_load.py``'s clients).

Prints progress to stderr and ONE JSON object with every figure as the last line of stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import (  # noqa: E402
    BENCH_NODE,
    ROOT,
    Procs,
    QueuewatchApp,
    RedisServer,
    Tab,
    code_version,
    export_code,
    install_time_limit,
    log,
    overview_tab,
    percentile,
    resolve_ref,
    run_bench,
)

QUEUE = "latency"
JOB_ID_RE = re.compile(r'data-job-id="([^"]+)"')


def summarize(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50": round(percentile(values, 50), 1),
        "p95": round(percentile(values, 95), 1),
        "p99": round(percentile(values, 99), 1),
        "max": round(max(values), 1),
        "min": round(min(values), 1),
        "mean": round(sum(values) / len(values), 1),
    }


class Bench:
    def __init__(self, args):
        self.args = args
        self.tmp = Path(tempfile.mkdtemp(prefix="qw-bench-latency-"))
        self.procs = Procs(self.tmp)
        self.servers: list[RedisServer] = []
        self.arrived: dict[str, float] = {}
        self.extra_tabs: list[Tab] = []
        self.fragments = 0

    def on_message(self, tab, html: str, now: float) -> None:
        ids = JOB_ID_RE.findall(html)
        if ids:
            self.fragments += 1
        for job_id in ids:
            self.arrived.setdefault(job_id, now * 1000)

    async def run_variant(self, name: str, monitored: RedisServer, *, warmup_jobs: int) -> dict:
        a = self.args
        failer = self.procs.start(
            f"failer-{name}",
            [
                "node",
                "failer.mjs",
                "--redis",
                monitored.url(),
                "--queue",
                QUEUE,
                "--count",
                str(a.count),
                "--interval-min",
                str(a.interval_min),
                "--interval-max",
                str(a.interval_max),
                "--warmup",
                str(warmup_jobs),
            ],
            cwd=BENCH_NODE,
            json_stdout=True,
        )
        await asyncio.to_thread(failer.expect, "ready", 60)
        if self.tab is None:
            # The monitor discovers new queues every 10 s; connect, then wait until the failed
            # list of the warm-up jobs has arrived, so the pipeline is warm before we measure.
            tab = Tab(
                self.app.url,
                f"/ws/queue/default/bull/{QUEUE}/?state=failed&list=1",
                self.cookie,
                on_message=self.on_message,
            )
            await tab.connect()
            self.tab = tab
            deadline = time.monotonic() + 40
            while not self.arrived:
                if time.monotonic() > deadline:
                    raise RuntimeError("no job list fragment arrived within 40 s:\n" + self.app.monitor.tail())
                await asyncio.sleep(0.1)
        await asyncio.sleep(2)
        before = set(self.arrived)
        fragments0 = self.fragments
        log(
            f"{name}: client has the list ({len(before)} ids seen); failing {a.count} jobs, one every "
            f"{a.interval_min}-{a.interval_max} ms"
        )
        cpu0, t0 = self.app.monitor.cpu_seconds(), time.monotonic()
        await asyncio.to_thread(self.app.probe_snapshot)  # (with --probe) start a fresh window
        failer.send_line("go")
        thrown: dict[str, float] = {}
        deadline = time.monotonic() + a.count * a.interval_max / 1000 + 60
        summary = None
        while summary is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"failer did not finish:\n{failer.tail()}")
            obj = await asyncio.to_thread(failer.expect, "summary", max(1.0, deadline - time.monotonic()))
            for other in failer.other:
                if "thrown" in other:
                    thrown[other["thrown"]["id"]] = other["thrown"]["ms"]
            failer.other.clear()
            summary = obj["summary"]
        await asyncio.sleep(2)  # the last fragments
        probe = await asyncio.to_thread(self.app.probe_snapshot)
        self.procs.stop(failer)

        # Redis' time of each failure: the id of its ``failed`` entry in the events stream.
        client = monitored.client()
        events = client.xrange(f"bull:{QUEUE}:events", "-", "+")
        event_ms = {}
        for sid, fields in events:
            if fields.get(b"event") == b"failed":
                event_ms[fields[b"jobId"].decode()] = int(sid.split(b"-")[0])
        e2e, pipeline, bullmq = [], [], []
        missing = []
        for job_id, t_thrown in thrown.items():
            t_arr = self.arrived.get(job_id)
            if t_arr is None or job_id in before:
                missing.append(job_id)
                continue
            e2e.append(t_arr - t_thrown)
            if job_id in event_ms:
                pipeline.append(t_arr - event_ms[job_id])
                bullmq.append(event_ms[job_id] - t_thrown)
        res = {
            "events": len(thrown),
            "missing": len(missing),
            "missing_ids": missing[:10],
            "thrown_to_arrival_ms": summarize(e2e),
            "event_to_arrival_ms": summarize(pipeline),
            "thrown_to_event_ms": summarize(bullmq),
            "list_fragments_received": self.fragments - fragments0,
            "goal_p95_le_250ms": bool(e2e) and percentile(e2e, 95) <= 250 and not missing,
            "monitor_cpu_pct": round((self.app.monitor.cpu_seconds() - cpu0) / (time.monotonic() - t0) * 100, 1),
            "loadavg_1m": round(os.getloadavg()[0], 2),
        }
        if probe:
            res["monitor_probe"] = probe
        s = res["thrown_to_arrival_ms"]
        log(
            f"{name}: {len(e2e)}/{len(thrown)} arrived; thrown->arrival p50 {s.get('p50')} ms, p95 {s.get('p95')} ms, "
            f"max {s.get('max')} ms; event->arrival p95 {res['event_to_arrival_ms'].get('p95')} ms; "
            f"missing {len(missing)}"
        )
        return res

    async def run(self) -> dict:
        a = self.args
        monitored = RedisServer(self.procs, "redis-monitored")
        dashboard = RedisServer(self.procs, "redis-dashboard")
        self.servers = [monitored, dashboard]
        self.app = QueuewatchApp(
            self.procs,
            monitored_url=monitored.url(),
            dashboard_url=dashboard.url(),
            workdir=self.tmp,
            tick_ms=a.tick_ms,
            code_dir=export_code(a.code_ref, self.tmp / "code") if a.code_ref else ROOT,
        )
        self.cookie = self.app.session_cookie()
        self.app.start_monitor(probe=a.probe)
        self.tab = None
        log(f"Queuewatch on {self.app.url}; monitored Redis :{monitored.port}, dashboard Redis :{dashboard.port}")
        results = {}
        workload = None
        for variant in a.variants:
            if variant == "loaded":
                workload = self.procs.start(
                    "workload",
                    ["node", "workload.mjs", "--redis", monitored.url(), "--queues", "50", "--rate", str(a.load_rate)],
                    cwd=BENCH_NODE,
                    json_stdout=True,
                )
                ready = await asyncio.to_thread(workload.expect, "ready", 180)
                log(
                    f"background workload steady ({a.load_rate} jobs/s over 50 queues); letting the monitor discover it"
                )
                await asyncio.sleep(15)
                if a.tabs:
                    # Other open tabs, laid out like redis_load.py's clients: even ones on a
                    # workload queue's failed list, odd ones on the overview.
                    queues = ready["queues"]
                    for i in range(a.tabs):
                        if i % 2 == 0:
                            path = f"/ws/queue/default/bull/{queues[(i // 2) % 50]}/?state=failed&list=1"
                            tab = Tab(self.app.url, path, self.cookie)
                        else:  # names the first overview page's rows, as the page's script does
                            tab = await asyncio.to_thread(overview_tab, self.app.url, self.cookie)
                        await tab.connect()
                        self.extra_tabs.append(tab)
                    log(f"{a.tabs} more tabs open")
                    await asyncio.sleep(5)
            results[variant] = await self.run_variant(variant, monitored, warmup_jobs=25 if self.tab is None else 0)
            if not self.app.monitor.alive():
                raise RuntimeError("monitor exited:\n" + self.app.monitor.tail())
        for tab in [self.tab, *self.extra_tabs]:
            await tab.close()
        return {
            "bench": "live_latency",
            "code": code_version(self.args.code_ref),
            "config": {
                "count": a.count,
                "interval_ms": [a.interval_min, a.interval_max],
                "extra_tabs_when_loaded": a.tabs,
                "monitor_tick_ms": a.tick_ms or "default (2000)",
                "load_rate": a.load_rate,
                "path": f"/ws/queue/default/bull/{QUEUE}/?state=failed&list=1",
            },
            "variants": results,
            "goal_p95_le_250ms": all(r["goal_p95_le_250ms"] for r in results.values()),
        }

    def cleanup(self) -> None:
        self.procs.stop_all()
        for s in self.servers:
            s.cleanup()
        shutil.rmtree(self.tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=220, help="failures measured per variant (default 220)")
    ap.add_argument("--interval-min", type=int, default=100)
    ap.add_argument("--interval-max", type=int, default=200)
    ap.add_argument("--variants", default="quiet,loaded")
    ap.add_argument("--load-rate", type=int, default=100, help="background jobs/s in the 'loaded' variant")
    ap.add_argument(
        "--tabs",
        type=int,
        default=0,
        help="in the 'loaded' variant, open this many more tabs (queue lists and overviews) first",
    )
    ap.add_argument("--tick-ms", type=int, default=None)
    ap.add_argument(
        "--probe",
        action="store_true",
        help="run the monitor under bench/monitor_probe.py and report where its time goes",
    )
    ap.add_argument(
        "--code-ref",
        default=None,
        metavar="REF",
        help="run Queuewatch from this commit (exported with git archive) instead of the working tree",
    )
    ap.add_argument("--time-limit", type=float, default=420)
    args = ap.parse_args()
    args.variants = [v for v in args.variants.split(",") if v]

    if args.code_ref:
        args.code_ref = resolve_ref(args.code_ref)
    install_time_limit(args.time_limit)
    return run_bench(Bench(args), show_logs_of=lambda name: name in ("monitor", "web") or name.startswith("failer"))


if __name__ == "__main__":
    sys.exit(main())
