"""Redis load imposed on the MONITORED Redis by Queuewatch and by bull-board 9, with 1, 10 and 50
open browser tabs, 50 queues under a steady BullMQ workload.

    .venv/bin/python bench/redis_load.py [--queues 50] [--rate 100] [--clients 1,10,50]
                                         [--seconds 60] [--warmup 5] [--spread distinct|same]
                                         [--probe] [--code-ref REF] [--tools bullboard,queuewatch]

What it starts (all on loopback, free ports, stopped at the end, also on Ctrl-C/SIGTERM/timeout)
------------------------------------------------------------------------------------------------
* two private ``redis-server`` processes: the MONITORED one (BullMQ's data) and the DASHBOARD
  one (Queuewatch's channel layer, leader lock, fragment cache: ``QUEUEWATCH_DASHBOARD_REDIS_URL``),
  so channel-layer traffic is not counted on the monitored Redis;
* ``bench/node/workload.mjs``: real Node BullMQ 6.7.0, 50 queues, one Worker each, ``--rate``
  jobs/s added round-robin, every 5th job of each queue fails (attempts 1), retention ``{count: 100}``. It
  first pre-fills every queue so the completed/failed sets already sit at their retention cap:
  the workload's own traffic is stationary when measuring starts;
* Queuewatch: the web server (``python -m dashboard.serve``) + ``manage.py monitor`` (the
  product's default tick unless ``--tick-ms``),
  logged in over HTTP as ``demo_user --username bench``;
* bull-board 9 (``bench/node/bullboard.mjs``, versions pinned in ``bench/node/package-lock.json``)
  serving the same 50 queues.

Each tool talks to the monitored Redis through its own counting TCP proxy (``benchlib.CountingProxy``)
so its top-level commands are also counted exactly, as a cross-check of the primary figure.

What a "client" is
------------------
* Queuewatch: one websocket with the logged-in session cookie and a same-origin Origin header.
  Client i (0-based) is, with ``--spread distinct`` (default), a queue page with the failed list
  open (``/ws/queue/default/bull/<queue (i//2) mod 50>/?state=failed&list=1``) when i is even, and
  the overview (``/ws/overview/``) when i is odd. So 1 client = one queue tab, 10 = 5 queue tabs on
  5 different queues + 5 overviews, 50 = 25 queue tabs on 25 different queues + 25 overviews.
  ``--spread same`` puts every queue tab on the first queue.
* bull-board: one simulated tab polling ``GET /api/queues?activeQueue=<queue>&status=failed&page=1&jobsPerPage=10``
  every 5 s, which is what bull-board's UI sends for a tab with one queue open on its failed tab
  (``getQueues({activeQueue, status, page, jobsPerPage})`` with ``refetchInterval =
  pollingInterval * 1000``, defaults ``pollingInterval: 5``, ``jobsPerPage: 10``, in
  ``@bull-board/ui/dist/static/js/main.*.js``). Tab i opens queue ``i mod 50`` (or the first queue
  with ``--spread same``); tabs start at evenly spread offsets within the 5 s period. The UI's
  other polls (metrics chart, job detail) are NOT simulated, so bull-board's figure is a lower
  bound.

Measurement
-----------
Phases, in this order, with the workload running throughout: baseline (workload only), bull-board
with 1, 10, 50 tabs (tabs are added, never removed), bull-board stopped, Queuewatch monitor with 0
clients, then 1, 10, 50 clients, monitor stopped, the monitor again with ``QUEUEWATCH_TIMINGS=0``
and 0 clients (unless ``--no-timings-off``), baseline again. Each measured window is
``--seconds`` long (default 60: a multiple of the monitor's 10 s snapshot and 60 s health-check
periods, so every window holds the same number of each) and follows ``--warmup`` seconds after
the client count changed.

Primary figure (``net_cmds_per_s``): ``INFO commandstats`` call deltas on the monitored Redis over
the window, INFO calls excluded, per second, minus the workload's own traffic. The workload part is
the mean of the two baselines, scaled by the window's XADD rate over the baselines' (XADD -- BullMQ's
event writes inside its scripts -- comes from the workload only; on a busy machine the workload can
fall a little behind, and this keeps that out of the dashboards' figures). Commands run inside Lua
scripts are counted by ``commandstats`` too (verified on Redis 7.0), so bull-board's net figure
includes what its ``getCounts`` etc. scripts execute; Queuewatch runs no Lua on the monitored Redis.
Cross-check (``proxy_cmds_per_s``): each tool reaches the monitored Redis through its own counting
proxy (``resp_proxy.py``), which counts its top-level commands exactly, with no subtraction.

Also reported: the monitor's CPU per 1,000 events with the per-job-name timings on (the
0-client phase) and off (``monitor_cpu_per_1000_events``; events are the workload's XADDs);
bull-board's cost per poll and the share of requested polls its server managed to
serve; CPU of every process; and with ``--probe`` the monitor's step timings
(``monitor_probe.py``: how long a refresh takes, how many queues it covers, renders, publishes,
gaps between leader-lock extensions), which shows whether the monitor kept up. ``--code-ref REF``
runs Queuewatch from a commit (``git archive``) instead of the working tree; ``--tools`` measures
one tool only; ``--spread same`` puts every queue tab on one queue.

Prints progress to stderr and ONE JSON object with every figure as the last line of stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import (  # noqa: E402
    BENCH_NODE,
    ROOT,
    CountingProxy,
    Procs,
    QueuewatchApp,
    RedisServer,
    Tab,
    code_version,
    commandstats,
    export_code,
    free_port,
    install_time_limit,
    log,
    overview_tab,
    percentile,
    rates,
    resolve_ref,
    run_bench,
    wait_for_monitor,
)

POLL_INTERVAL = 5.0  # bull-board UI default pollingInterval (seconds)


def ensure_node_modules() -> None:
    if not (BENCH_NODE / "node_modules" / "@bull-board" / "api").exists():
        log("installing bench/node packages (npm ci)")
        import subprocess

        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=BENCH_NODE, check=True, timeout=300)


class BullBoardTabs:
    def __init__(self, base_url: str, queues: list[str], spread: str):
        self.base_url = base_url
        self.queues = queues
        self.spread = spread
        self.tasks: list[asyncio.Task] = []
        self.pool = ThreadPoolExecutor(max_workers=64, thread_name_prefix="bb-tab")
        self.ok = self.errors = self.bytes = 0
        self.latencies: list[float] = []
        self.jobs_seen = 0

    def grow(self, n: int) -> None:
        for i in range(len(self.tasks), n):
            self.tasks.append(asyncio.create_task(self._tab(i)))

    def _fetch(self, url: str) -> bytes:
        with urllib.request.urlopen(url, timeout=30) as resp:
            return resp.read()

    async def _tab(self, i: int) -> None:
        queue = self.queues[0] if self.spread == "same" else self.queues[i % len(self.queues)]
        url = f"{self.base_url}/api/queues?activeQueue={urllib.parse.quote(queue)}&status=failed&page=1&jobsPerPage=10"
        loop = asyncio.get_running_loop()
        await asyncio.sleep(((i * 0.6180339887) % 1.0) * POLL_INTERVAL)
        next_t = loop.time()
        while True:
            t = time.monotonic()
            try:
                body = await loop.run_in_executor(self.pool, self._fetch, url)
                self.ok += 1
                self.bytes += len(body)
                self.latencies.append(time.monotonic() - t)
                if i == 0 and self.ok % 10 == 1:  # sanity: the open queue's page has jobs
                    data = json.loads(body)
                    self.jobs_seen = sum(len(q["jobs"]) for q in data["queues"])
            except Exception as exc:  # count and keep polling, like a browser tab would
                self.errors += 1
                if self.errors <= 3:
                    log(f"bull-board poll failed: {exc}")
            next_t += POLL_INTERVAL
            await asyncio.sleep(max(0.0, next_t - loop.time()))

    async def stop(self) -> None:
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        self.pool.shutdown(wait=False, cancel_futures=True)

    def counters(self) -> tuple[int, int, int, int]:
        return self.ok, self.errors, self.bytes, len(self.latencies)


class Bench:
    def __init__(self, args):
        self.args = args
        self.tmp = Path(tempfile.mkdtemp(prefix="qw-bench-load-"))
        self.procs = Procs(self.tmp)
        self.proxies: dict[str, CountingProxy] = {}
        self.phases: dict[str, dict] = {}
        self.servers: list[RedisServer] = []
        self.app: QueuewatchApp | None = None

    async def measure(
        self,
        label: str,
        seconds: float,
        *,
        tool: str | None = None,
        tabs=None,
        bb: BullBoardTabs | None = None,
        cpu_procs=(),
    ) -> dict:
        client = self.monitored_client
        s0 = commandstats(client)
        proxy = self.proxies.get(tool) if tool else None
        p0 = {tool: proxy.snapshot()} if proxy else {}
        cpu_procs = [*cpu_procs, *([proxy.proc] if proxy else [])]
        c0 = {p.name: p.cpu_seconds() for p in cpu_procs}
        own0 = sum(os.times()[:2])
        m0 = sum(t.messages for t in tabs) if tabs else 0
        b0 = bb.counters() if bb else None
        probing = tool == "queuewatch" and self.app is not None and getattr(self.app, "probing", False)
        if probing:
            await asyncio.to_thread(self.app.probe_snapshot)  # start a fresh window
        t0 = time.monotonic()
        await asyncio.sleep(seconds)
        dt = time.monotonic() - t0
        s1 = commandstats(client)
        per, total, redis_cpu = rates(s0, s1, dt)
        out = {
            "seconds": round(dt, 2),
            "total_cmds_per_s": round(total, 1),
            "per_command": {k: round(v, 2) for k, v in sorted(per.items(), key=lambda kv: -kv[1])},
            "redis_cpu_pct": round(redis_cpu, 1),
            "cpu_pct": {
                **{p.name: round((p.cpu_seconds() - c0[p.name]) / dt * 100, 1) for p in cpu_procs},
                "bench-clients": round((sum(os.times()[:2]) - own0) / dt * 100, 1),
            },
            "loadavg_1m": round(os.getloadavg()[0], 2),
        }
        if probing:
            out["monitor_probe"] = await asyncio.to_thread(self.app.probe_snapshot)
        if proxy:
            d = proxy.snapshot()
            d.subtract(p0[tool])
            out["proxy_per_command"] = {k: round(v / dt, 2) for k, v in d.most_common() if v}
            out["proxy_cmds_per_s"] = round(sum(d.values()) / dt, 1)
        if tabs is not None:
            out["ws_open"] = sum(t.is_open for t in tabs)
            out["ws_msgs_per_s"] = round((sum(t.messages for t in tabs) - m0) / dt, 1)
        if bb is not None:
            ok, err, nbytes, nlat = bb.counters()
            lat = bb.latencies[b0[3] : nlat]
            out["polls_ok"] = ok - b0[0]
            out["polls_failed"] = err - b0[1]
            out["polls_per_s"] = round((ok - b0[0]) / dt, 2)
            out["poll_kib_per_s"] = round((nbytes - b0[2]) / dt / 1024, 1)
            out["poll_latency_ms_p50"] = round(percentile(lat, 50) * 1000, 1) if lat else None
            out["poll_latency_ms_p95"] = round(percentile(lat, 95) * 1000, 1) if lat else None
            out["open_queue_jobs_in_response"] = bb.jobs_seen
        extra = ""
        if "proxy_cmds_per_s" in out:
            extra += f", proxy-counted {out['proxy_cmds_per_s']:.0f}/s"
        if "ws_msgs_per_s" in out:
            extra += f", {out['ws_open']} ws open, {out['ws_msgs_per_s']} msgs/s"
        if "polls_per_s" in out:
            extra += (
                f", {out['polls_per_s']} polls/s ({out['polls_failed']} failed, p95 {out['poll_latency_ms_p95']} ms)"
            )
        log(f"{label}: {total:.0f} cmds/s on the monitored Redis (Redis CPU {redis_cpu:.0f}%){extra}")
        if out.get("monitor_probe"):
            pr = out["monitor_probe"]
            parts = [
                f"{k} n={v['n']} p50={v['p50_ms']}ms p95={v['p95_ms']}ms max={v['max_ms']}ms"
                + (f" size={v['mean_size']}" if "mean_size" in v else "")
                for k, v in sorted(pr.items(), key=lambda kv: -kv[1]["total_ms"])[:8]
            ]
            log(
                "  monitor steps: "
                + "; ".join(parts)
                + (f"; LOCK LOST x{pr['lock_lost']['n']}" if "lock_lost" in pr else "")
            )
        self.phases[label] = out
        return out

    async def run(self) -> dict:
        a = self.args
        ensure_node_modules()
        monitored = RedisServer(self.procs, "redis-monitored")
        dashboard = RedisServer(self.procs, "redis-dashboard")
        self.servers = [monitored, dashboard]
        self.monitored_client = monitored.client()
        self.dashboard_client = dashboard.client()
        log(f"monitored Redis on :{monitored.port}, dashboard Redis on :{dashboard.port}")
        if not a.no_proxy:
            self.proxies = {
                "queuewatch": CountingProxy(self.procs, monitored.port, "queuewatch"),
                "bullboard": CountingProxy(self.procs, monitored.port, "bullboard"),
            }

        workload = self.procs.start(
            "workload",
            [
                "node",
                "workload.mjs",
                "--redis",
                monitored.url(),
                "--queues",
                str(a.queues),
                "--rate",
                str(a.rate),
                "--fail-every",
                str(a.fail_every),
            ],
            cwd=BENCH_NODE,
            json_stdout=True,
        )
        ready = workload.expect("ready", 180)
        queues = ready["queues"]
        log(f"workload steady: {a.rate} jobs/s over {len(queues)} queues")

        app = self.app = QueuewatchApp(
            self.procs,
            monitored_url=self.url_for(monitored, "queuewatch"),
            dashboard_url=dashboard.url(),
            workdir=self.tmp,
            tick_ms=a.tick_ms,
            code_dir=export_code(a.code_ref, self.tmp / "code") if a.code_ref else ROOT,
        )
        cookie = app.session_cookie()
        log(f"Queuewatch (web server) on {app.url}, logged in as {app.username}")
        await asyncio.sleep(a.settle)

        await self.measure("baseline-pre", a.baseline_seconds, cpu_procs=[workload])

        if "bullboard" in a.tools:
            await self.run_bullboard(monitored, queues, workload)
        closed_early = 0
        if "queuewatch" in a.tools:
            closed_early = await self.run_queuewatch(app, cookie, queues, workload)
            await asyncio.sleep(3)

        await self.measure("baseline-post", a.baseline_seconds, cpu_procs=[workload])
        workload.proc.terminate()  # it prints its summary on SIGTERM
        try:
            summary = workload.expect("summary", 10)["summary"]
        except RuntimeError:
            summary = {}
        self.procs.stop(workload)
        return self.report(queues, summary, closed_early)

    def url_for(self, monitored: RedisServer, tool: str) -> str:
        proxy = self.proxies.get(tool)
        return monitored.url(port=proxy.port if proxy else None)

    async def run_bullboard(self, monitored: RedisServer, queues: list[str], workload) -> None:
        a = self.args
        bb_port = free_port()
        bb_proc = self.procs.start(
            "bullboard",
            [
                "node",
                "bullboard.mjs",
                "--redis",
                self.url_for(monitored, "bullboard"),
                "--port",
                str(bb_port),
                "--queues",
                ",".join(queues),
            ],
            cwd=BENCH_NODE,
            json_stdout=True,
        )
        bb_proc.expect("listening", 30)
        bb = BullBoardTabs(f"http://127.0.0.1:{bb_port}", queues, a.spread)
        for n in a.clients:
            bb.grow(n)
            await asyncio.sleep(a.warmup)
            await self.measure(f"bullboard-{n}", a.seconds, tool="bullboard", bb=bb, cpu_procs=[workload, bb_proc])
        await bb.stop()
        self.procs.stop(bb_proc)

    async def run_queuewatch(self, app: QueuewatchApp, cookie: str, queues: list[str], workload) -> int:
        a = self.args
        monitor = app.start_monitor(probe=a.probe)
        waited = await asyncio.to_thread(wait_for_monitor, app, self.dashboard_client, len(queues))
        log(f"monitor leading; the figures of all {len(queues)} queues published after {waited:.1f} s")
        await asyncio.sleep(a.monitor_warmup)
        if not monitor.alive():
            raise RuntimeError("monitor exited:\n" + monitor.tail())
        await self.measure(
            "queuewatch-0", a.baseline_seconds, tool="queuewatch", tabs=[], cpu_procs=[workload, monitor, app.web]
        )
        tabs: list[Tab] = []
        for n in a.clients:
            while len(tabs) < n:
                i = len(tabs)
                if i % 2 == 0:
                    q = queues[0] if a.spread == "same" else queues[(i // 2) % len(queues)]
                    tab = Tab(app.url, f"/ws/queue/default/bull/{urllib.parse.quote(q)}/?state=failed&list=1", cookie)
                else:  # names the first overview page's rows, as the page's script does
                    tab = await asyncio.to_thread(overview_tab, app.url, cookie)
                await tab.connect()
                tabs.append(tab)
            await asyncio.sleep(a.warmup)
            if not monitor.alive():
                raise RuntimeError("monitor exited:\n" + monitor.tail())
            await self.measure(
                f"queuewatch-{n}", a.seconds, tool="queuewatch", tabs=tabs, cpu_procs=[workload, monitor, app.web]
            )
        closed_early = sum(1 for t in tabs if not t.is_open)
        for t in tabs:
            await t.close()
        app.stop_monitor()
        # What the monitor logged (warnings mean reconnects, lost leadership, errors).
        # (The product's log handler prints bare messages; the INFO ones are only these three.)
        routine = ("waiting for leadership", ": leading", "stopped leading")
        lines = [ln for ln in monitor.tail(10**7).splitlines() if ln.strip() and not any(r in ln for r in routine)]
        self.monitor_log = {"warnings_and_errors": len(lines), "first": lines[:5]}
        for ln in lines[:5]:
            log(f"monitor log: {ln}")
        if not a.no_timings_off:
            await self.run_timings_off(app, queues, workload)
        return closed_early

    async def run_timings_off(self, app: QueuewatchApp, queues: list[str], workload) -> None:
        """The monitor again with ``QUEUEWATCH_TIMINGS=0`` (no job clock), no clients, for as
        long as ``queuewatch-0``: their monitor CPU per 1,000 events is what the timings cost."""
        a = self.args
        app.env["QUEUEWATCH_TIMINGS"] = "0"
        # The previous monitor's overview rows are still cached: without this, the wait below
        # would end at once and the window would hold this monitor's start-up work. The closed
        # tabs' watches also outlive them by up to 90 s (channels.WATCH_TTL_S: a watch is shared
        # by every tab on the same list, so closing one cannot remove it): without clearing them
        # this monitor would render the last phase's 25 failed lists, which the timings-on phase
        # (no client yet) never did; likewise the languages those tabs announced.
        self.dashboard_client.delete("queuewatch:frag:overview", "queuewatch:watch", "queuewatch:languages")
        try:
            monitor = app.start_monitor()
            await asyncio.to_thread(wait_for_monitor, app, self.dashboard_client, len(queues))
            await asyncio.sleep(a.monitor_warmup)
            if not monitor.alive():
                raise RuntimeError("monitor exited:\n" + monitor.tail())
            await self.measure(
                "queuewatch-timingsoff",
                a.baseline_seconds,
                tool="queuewatch",
                tabs=[],
                cpu_procs=[workload, monitor, app.web],
            )
            app.stop_monitor()
        finally:
            app.env.pop("QUEUEWATCH_TIMINGS", None)

    def report(self, queues: list[str], workload_summary: dict, closed_early: int) -> dict:
        a = self.args
        pre, post = self.phases["baseline-pre"], self.phases["baseline-post"]
        base_cmds = set(pre["per_command"]) | set(post["per_command"])
        base = {c: (pre["per_command"].get(c, 0) + post["per_command"].get(c, 0)) / 2 for c in base_cmds}
        base_total = (pre["total_cmds_per_s"] + post["total_cmds_per_s"]) / 2
        # The workload's own traffic scales with the jobs it actually pushed through in a window,
        # which a busy machine can slow down. XADD (BullMQ's event writes, inside its scripts) is
        # issued by the workload only -- neither dashboard writes to the monitored Redis -- so the
        # baseline is scaled by each window's XADD rate relative to the baselines' mean.
        base_xadd = base.get("xadd", 0)

        def net(phase: dict) -> tuple[float, float, dict]:
            scale = phase["per_command"].get("xadd", 0) / base_xadd if base_xadd else 1.0
            cmds = set(phase["per_command"]) | set(base)
            per = {c: phase["per_command"].get(c, 0) - base.get(c, 0) * scale for c in cmds}
            top = {c: round(v, 1) for c, v in sorted(per.items(), key=lambda kv: -kv[1]) if abs(v) >= 0.5}
            return phase["total_cmds_per_s"] - base_total * scale, scale, top

        result: dict = {"queuewatch": {}, "bullboard": {}}
        for label, phase in self.phases.items():
            if label.startswith("baseline"):
                continue
            tool, n = label.rsplit("-", 1)
            total, scale, top = net(phase)
            entry = {
                "net_cmds_per_s": round(total, 1),
                "proxy_cmds_per_s": phase.get("proxy_cmds_per_s"),
                "net_unscaled_cmds_per_s": round(phase["total_cmds_per_s"] - base_total, 1),
                "workload_scale": round(scale, 3),
                "total_cmds_per_s": phase["total_cmds_per_s"],
                "net_per_command": dict(list(top.items())[:25]),
                **{k: v for k, v in phase.items() if k not in ("per_command", "total_cmds_per_s", "proxy_cmds_per_s")},
            }
            result[tool][n] = entry

        qw, bbr = result["queuewatch"], result["bullboard"]
        ratios = {}
        for n in map(str, a.clients):
            if n in qw and n in bbr:
                ratios[n] = {
                    "net": round(bbr[n]["net_cmds_per_s"] / qw[n]["net_cmds_per_s"], 2)
                    if qw[n]["net_cmds_per_s"] > 0
                    else None,
                    "proxy_top_level": (
                        round(bbr[n]["proxy_cmds_per_s"] / qw[n]["proxy_cmds_per_s"], 2)
                        if qw[n]["proxy_cmds_per_s"] and bbr[n]["proxy_cmds_per_s"]
                        else None
                    ),
                }
        lo, hi = str(min(a.clients)), str(max(a.clients))
        growth = growth_proxy = None
        if lo in qw and hi in qw:
            growth = (
                (qw[hi]["net_cmds_per_s"] / qw[lo]["net_cmds_per_s"] - 1) * 100
                if qw[lo]["net_cmds_per_s"] > 0
                else None
            )
            growth_proxy = (
                (qw[hi]["proxy_cmds_per_s"] / qw[lo]["proxy_cmds_per_s"] - 1) * 100
                if qw[lo]["proxy_cmds_per_s"]
                else None
            )
        ratio_hi = ratios.get(hi, {}).get("net")

        # bull-board's cost per poll, and what its tabs would cost if its server had kept up with
        # every tab's 5 s poll (on a small machine it falls behind at 50 tabs).
        per_poll = {}
        for n, e in bbr.items():
            if e.get("polls_per_s"):
                requested = int(n) / POLL_INTERVAL
                per_poll[n] = {
                    "net_cmds_per_poll": round(e["net_cmds_per_s"] / e["polls_per_s"], 1),
                    "top_level_cmds_per_poll": round(e["proxy_cmds_per_s"] / e["polls_per_s"], 1)
                    if e.get("proxy_cmds_per_s")
                    else None,
                    "polls_served_of_requested_pct": round(e["polls_per_s"] / requested * 100, 1),
                    "net_cmds_per_s_at_full_poll_rate": round(e["net_cmds_per_s"] / e["polls_per_s"] * requested, 1),
                }
        ratio_full = None
        if hi in per_poll and hi in qw and qw[hi]["net_cmds_per_s"] > 0:
            ratio_full = round(per_poll[hi]["net_cmds_per_s_at_full_poll_rate"] / qw[hi]["net_cmds_per_s"], 2)

        # Is the monitor keeping up? (With --probe: how long one refresh of the dirty queues took.)
        saturated = {}
        for n, e in qw.items():
            pr = e.get("monitor_probe") or {}
            rd = pr.get("refresh_dirty")
            if rd:
                saturated[n] = {
                    "refresh_dirty_per_s": round(rd["n"] / e["seconds"], 2),
                    "refresh_dirty_p50_ms": rd["p50_ms"],
                    "refresh_dirty_p95_ms": rd["p95_ms"],
                    "queues_per_refresh": rd.get("mean_size"),
                    "lock_lost": pr.get("lock_lost", {}).get("n", 0),
                    "max_gap_between_lock_extensions_ms": pr.get("loop_gap", {}).get("max_ms"),
                    "loop_stall_p95_ms": pr.get("loop_stall", {}).get("p95_ms"),
                    "loop_stall_max_ms": pr.get("loop_stall", {}).get("max_ms"),
                }

        # The monitor's CPU per 1,000 events with the per-job-name timings on ("0": no clients)
        # and off ("timingsoff"). Every BullMQ event is one XADD of the workload's scripts, and
        # the monitor reads every one of them.
        cpu_per_k = {}
        for n, key in (("0", "timings_on"), ("timingsoff", "timings_off")):
            phase, e = self.phases.get(f"queuewatch-{n}"), qw.get(n)
            events_per_s = phase["per_command"].get("xadd", 0) if phase else 0
            cpu = (e or {}).get("cpu_pct", {}).get("monitor")
            if events_per_s and cpu is not None:
                cpu_per_k[key] = {
                    "monitor_cpu_ms_per_1000_events": round(cpu / 100 * 1000 / events_per_s * 1000, 1),
                    "events_per_s": round(events_per_s, 1),
                    "monitor_cpu_pct": cpu,
                    "net_cmds_per_s": e["net_cmds_per_s"],
                }

        # Derived: what the monitor did per second (exact proxy counts; see dashboard/monitor/loop.py).
        derived = {}
        for n, e in qw.items():
            p = e.get("proxy_per_command", {})
            derived[n] = {
                "queue_snapshots_per_s": p.get("hexists", 0),  # read_snapshots: 1 HEXISTS per queue
                "watched_list_reads_per_s": p.get("zrevrange", 0),  # page-1 ids of a watched failed list (ZREVRANGE)
                "hmget_per_s": p.get("hmget", 0),
                "stall_check_cmds_per_s": round(p.get("lrange", 0) + p.get("exists", 0), 1),
                "xread_per_s": p.get("xread", 0),
                "gap_check_xrange_per_s": p.get("xrange", 0),
                "discovery_scan_per_s": p.get("scan", 0),
            }

        out = {
            "bench": "redis_load",
            "code": code_version(self.args.code_ref),
            "config": {
                "queues": len(queues),
                "jobs_per_s": a.rate,
                "fail_every": a.fail_every,
                "retention": 100,
                "clients": a.clients,
                "spread": a.spread,
                "seconds_per_window": a.seconds,
                "warmup_s": a.warmup,
                "monitor_tick_ms": a.tick_ms or "default (QUEUEWATCH_MONITOR_TICK_MS unset: 2000)",
                "bullboard_versions": self.node_versions(),
                "poll_interval_s": POLL_INTERVAL,
                "bullboard_query": "activeQueue=<queue>&status=failed&page=1&jobsPerPage=10",
            },
            "baseline_cmds_per_s": {
                "pre": pre["total_cmds_per_s"],
                "post": post["total_cmds_per_s"],
                "mean": round(base_total, 1),
                "drift_pct": round((post["total_cmds_per_s"] / pre["total_cmds_per_s"] - 1) * 100, 2),
            },
            "baseline_workload_cpu_pct": pre["cpu_pct"],
            "queuewatch": qw,
            "bullboard": bbr,
            "ratios_bullboard_over_queuewatch": ratios,
            "queuewatch_monitor_breakdown": derived,
            "monitor_cpu_per_1000_events": cpu_per_k,
            "bullboard_per_poll": per_poll,
            "goals": {
                "flat_growth_pct_1_to_50": round(growth, 1) if growth is not None else None,
                "flat_growth_pct_1_to_50_proxy": round(growth_proxy, 1) if growth_proxy is not None else None,
                # Flat means the same work whatever the number of clients: a big DROP is not
                # "flat" either -- it means the monitor did less (see monitor_saturated).
                "flat_ok": growth is not None and -10 <= growth <= 10,
                "monitor_saturated": saturated,
                "ratio_at_50": ratio_hi,
                "ratio_at_50_if_bullboard_kept_up": ratio_full,
                "ratio_ok": ratio_hi is not None and ratio_hi >= 50,
            },
            "websockets_closed_early": closed_early,
            "monitor_log": getattr(self, "monitor_log", None),
            "workload": workload_summary,
        }
        return out

    @staticmethod
    def node_versions() -> dict:
        lock = json.loads((BENCH_NODE / "package-lock.json").read_text())
        pk = lock.get("packages", {})
        return {
            name: pk.get(f"node_modules/{name}", {}).get("version")
            for name in ("@bull-board/api", "@bull-board/express", "@bull-board/ui", "express", "bullmq")
        }

    def cleanup(self) -> None:
        if self.args.keep_logs:
            dest = Path(self.args.keep_logs)
            dest.mkdir(parents=True, exist_ok=True)
            for f in self.tmp.glob("*.log"):
                shutil.copy(f, dest / f.name)
        self.procs.stop_all()
        for s in self.servers:
            s.cleanup()
        shutil.rmtree(self.tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queues", type=int, default=50)
    ap.add_argument("--rate", type=int, default=100, help="jobs/s added in total (default 100)")
    ap.add_argument("--fail-every", type=int, default=5, help="every Nth job fails (default 5)")
    ap.add_argument("--clients", default="1,10,50", help="client counts, ascending (default 1,10,50)")
    ap.add_argument(
        "--seconds",
        type=float,
        default=60,
        help="measured window per client count; keep it a multiple of 60 s, so every window holds as many "
        "of the monitor's exact snapshots (every 10 s) and health checks (every 60 s) as the others",
    )
    ap.add_argument(
        "--baseline-seconds",
        type=float,
        default=60,
        help="window of each workload-only baseline and of the monitor-without-clients phase; keep it a "
        "multiple of 30 s: the 50 workers, started together, run BullMQ's stalled-job check together "
        "every 30 s (about 100 script calls at once), so a shorter baseline either holds one such "
        "burst or none, and the subtraction leaves ~10 workload commands/s in the dashboards' figure",
    )
    ap.add_argument("--warmup", type=float, default=5, help="seconds after clients change before measuring")
    ap.add_argument(
        "--monitor-warmup", type=float, default=5, help="seconds after the monitor has published every overview row"
    )
    ap.add_argument("--settle", type=float, default=5, help="seconds of steady workload before the first baseline")
    ap.add_argument(
        "--tick-ms", type=int, default=None, help="QUEUEWATCH_MONITOR_TICK_MS (default: the product default)"
    )
    ap.add_argument("--spread", choices=("distinct", "same"), default="distinct")
    ap.add_argument(
        "--code-ref",
        default=None,
        metavar="REF",
        help="run Queuewatch from this commit (exported with git archive) instead of the working tree",
    )
    ap.add_argument(
        "--time-limit",
        type=float,
        default=1500,
        help="abort (and clean up) after this many seconds (a full run with both tools takes about 17 min)",
    )
    ap.add_argument("--tools", default="bullboard,queuewatch", help="which tools to measure (default both)")
    ap.add_argument(
        "--no-proxy",
        action="store_true",
        help="connect both tools straight to the monitored Redis (no exact per-tool counts)",
    )
    ap.add_argument(
        "--probe",
        action="store_true",
        help="run the monitor under bench/monitor_probe.py and report where its time goes",
    )
    ap.add_argument(
        "--no-timings-off",
        action="store_true",
        help="skip the last phase: the monitor with QUEUEWATCH_TIMINGS=0, for its CPU per 1,000 events",
    )
    ap.add_argument("--keep-logs", default=None, metavar="DIR", help="copy the child processes' logs here at the end")
    args = ap.parse_args()
    args.clients = sorted(int(c) for c in args.clients.split(","))
    args.tools = set(args.tools.split(","))

    if args.code_ref:
        args.code_ref = resolve_ref(args.code_ref)
    install_time_limit(args.time_limit)
    return run_bench(Bench(args), show_logs_of=lambda name: name in ("monitor", "web", "workload", "bullboard"))


if __name__ == "__main__":
    sys.exit(main())
