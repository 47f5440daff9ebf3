"""Live-update fan-out benchmark: many logged-in websocket clients on ONE web process (python -m dashboard.serve).

    .venv/bin/python bench/fanout.py [--clients 500] [--updates 20] [--background-queues 50]

What it does
------------
1. Starts its own processes, all on loopback: two private ``redis-server``s on free ports (the
   *monitored* Redis holding BullMQ queues, and Queuewatch's *dashboard* Redis: channel layer,
   fragment cache, leader lock), one web server (``python -m dashboard.serve``) serving
   ``dashboard.asgi:application`` and one
   ``manage.py monitor``, exactly as ``tests/e2e/conftest.py`` does (same environment
   variables, SQLite file in a temp dir, the product's default monitor tick unless
   ``--tick-ms``). Everything is stopped and removed at the end, also on Ctrl-C/SIGTERM.

2. Loads, with the bulk loader of ``bench/snapshot_bench.py``, one target queue
   ``fanout-target`` and ``--background-queues`` other queues holding only completed, failed and
   delayed jobs, so their overview rows do not change between ticks.

3. Logs in through the real login form (``--sessions`` sessions, clients spread over them) and
   opens ``--clients`` websockets to ``/ws/overview/`` with the session cookie and a same-origin
   ``Origin`` header. The client is a thin ``asyncio.Protocol`` around the sans-I/O protocol of
   the ``websockets`` package (bench/requirements.txt), so 500 sockets cost this process little
   CPU and timestamps are taken in ``data_received``. Each client, as the page's script does,
   names the rows view of the first overview page sorted by name (every queue of the bench: at
   most 99 background queues), so the monitor renders those rows (it renders rows only where a
   page shows them). Connect time = TCP connect to the ``101``; snapshot time = until the target
   queue's row (sent from the fragment cache on connect, or rendered once the first client named
   the view) arrives.

4. Phase "quiet": ``--updates`` times, adds one job to ``fanout-target`` with the Python
   ``bullmq`` package (``Queue.add``: BullMQ's own ``addStandardJob`` script, which also XADDs the
   ``waiting`` event the monitor's follower wakes on). The wall-clock time just before the add
   is the write time. Its overview row now shows waiting = N; the arrival of the first message
   carrying that row with waiting >= N at each client is that client's delivery. The next update
   starts when every client has it (or after ``--update-timeout``), after a random 0.2-0.6 s gap.

5. Phase "busy": the same updates while ``--background-queues`` other queues change all the time:
   a background task adds one job to each of them every ``1/--churn-per-s`` seconds (Python
   ``bullmq``, so each add also wakes the monitor through its events stream). Each of their
   overview rows therefore changes about ``--churn-per-s`` times a second and is re-sent to every
   client: the load an overview with many busy queues puts on the fan-out (50 queues x 1/s x
   500 clients = 25,000 websocket messages a second from one web process).

6. Monitor-side split, without touching the monitor: keyspace notifications of the dashboard
   Redis (``KeyspaceWatch``) timestamp the monitor's ``HSET queuewatch:frag:overview row-...`` (the
   Publisher writes the fragment cache, then queues the ``group_send``; the target row is read
   back to know which count was published), the ``ZADD`` of channels_redis's group_send script
   into the web process's channel-layer key, and the web process's receive loop popping it. So each delivery splits
   into write -> publish (follower wake-up, 100 ms coalescing, snapshot, render), publish ->
   group_send in Redis (the Publisher's outbox and channels_redis's group_send) -> web pop ->
   client (one web process relaying to N consumers, uvicorn's websockets, loopback TCP, this client). In
   the busy phase only write -> publish -> client is exact (other rows interleave). Redis and this
   process share the wall clock. (An earlier version used MONITOR: formatting each 20 KB group
   message slowed Redis enough to distort the very figures it measured.)

   With ``--watchers N``, N more sockets open another queue's page with its failed list live
   (each keeps a watch entry the monitor must not pay for when it refreshes other queues);
   ``--quiet-only`` skips the busy phase. The bench raises ``QUEUEWATCH_LIVE_SOCKETS_PER_USER``
   for its one user.

7. CPU seconds of the web process, the monitor and this process per phase (``/proc/<pid>/stat``),
   messages and bytes received; channel-layer messages published, dropped at capacity
   (channels_redis's default capacity is 100 messages per channel key, and all consumers of one
   web process share one key) and popped by the web process; web CPU per popped message;
   connection failures, closes and missed deliveries.

The product relays fragments without Channels' per-message ``close_old_connections`` hop and
sends overview rows batched (at most one group message per 0.5 s with every row changed in it);
both were measured here as what-if variants before they went into the product.

Progress goes to stderr; ONE JSON object with every figure is the last line of stdout.
Goal: p95 of write -> client delivery <= 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import os
import random
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

try:
    from websockets.client import ClientProtocol
    from websockets.frames import Frame, Opcode
    from websockets.http11 import Response
    from websockets.protocol import State
    from websockets.typing import Origin
    from websockets.uri import parse_uri
except ImportError:  # pragma: no cover - a setup message, not a code path
    raise SystemExit(
        "bench/fanout.py needs the pinned 'websockets' package: .venv/bin/pip install -r bench/requirements.txt"
    ) from None

from bench import proc_tools as pt  # noqa: E402
from bench.benchlib import overview_view, state_queues  # noqa: E402
from bench.snapshot_bench import PREFIX, PrivateRedis, QueuePlan, _free_port, load, log, pct  # noqa: E402

TARGET = "fanout-target"
GOAL_P95_S = 1.0
FRAG_KEY = b"queuewatch:frag:overview"


def row_id(name: str) -> str:
    # Same as dashboard.live.row_id / queue_id (kept here so this process needs no Django).
    import hashlib

    return "row-" + hashlib.sha1("\x1f".join(("default", PREFIX, name)).encode()).hexdigest()[:16]


# The row's waiting cell: a link around the count (a <data> element the page formats), or a
# plain zero.
WAITING_RE = re.compile(rb'state-waiting\\?">(?:<a href=\\?"[^>]*>)?(?:<data[^>]*>|<span[^>]*>)?(\d+)<')


def stats(samples: list[float]) -> dict:
    if not samples:
        return {"n": 0}
    return {
        "n": len(samples),
        "p50": round(statistics.median(samples), 4),
        "p95": round(pct(samples, 0.95), 4),
        "p99": round(pct(samples, 0.99), 4),
        "max": round(max(samples), 4),
        "mean": round(statistics.fmean(samples), 4),
    }


# ---------------------------------------------------------------------------------------------
# Websocket client: asyncio.Protocol + websockets' sans-I/O ClientProtocol


class Hub:
    """Shared state of all clients: first arrival of each waiting count, per client."""

    def __init__(self, target_row: bytes):
        self.target_row = target_row
        self.open = 0
        self.closed_unexpectedly = 0
        self.messages = 0
        self.bytes = 0
        self.arrived: dict[int, int] = {}  # waiting count -> clients that have seen it
        self.waiters: dict[int, asyncio.Future] = {}
        self.expected_clients = 0

    def seen(self, count: int) -> None:
        n = self.arrived.get(count, 0) + 1
        self.arrived[count] = n
        fut = self.waiters.get(count)
        if fut is not None and n >= self.expected_clients and not fut.done():
            fut.set_result(None)


class WsClient(asyncio.Protocol):
    def __init__(self, hub: Hub, uri: str, origin: str, cookie: str, first_message: str | None = None):
        self.hub = hub
        self.first_message = first_message  # sent once open: an overview names its rows view
        self.proto = ClientProtocol(parse_uri(uri), origin=Origin(origin), max_size=None)
        self.cookie = cookie
        self.transport: asyncio.Transport | None = None
        self.opened: asyncio.Future = asyncio.get_running_loop().create_future()
        self.snapshot: asyncio.Future = asyncio.get_running_loop().create_future()
        self.first_seen: dict[int, float] = {}  # waiting count -> wall time of first arrival
        self.max_count = -1
        self.fragments: list[bytes] = []
        self.closing = False
        self.was_open = False
        self.close_reason = ""

    def connection_made(self, transport):
        self.transport = transport
        req = self.proto.connect()
        req.headers["Cookie"] = self.cookie
        self.proto.send_request(req)
        self._flush()

    def data_received(self, data):
        now = time.time()
        self.proto.receive_data(data)
        for ev in self.proto.events_received():
            if isinstance(ev, Response):
                if self.proto.state is State.OPEN:
                    self.hub.open += 1
                    self.was_open = True
                    self.opened.set_result(now)
                    if self.first_message is not None:
                        self.proto.send_text(self.first_message.encode())
                elif not self.opened.done():
                    self.opened.set_exception(RuntimeError(f"handshake refused: HTTP {ev.status_code}"))
            elif isinstance(ev, Frame):
                if ev.opcode is Opcode.TEXT or ev.opcode is Opcode.CONT:
                    self.fragments.append(ev.data)
                    if ev.fin:
                        msg = b"".join(self.fragments) if len(self.fragments) > 1 else self.fragments[0]
                        self.fragments = []
                        self.on_message(msg, now)
                elif ev.opcode is Opcode.CLOSE and not self.closing:
                    self.close_reason = f"server closed: {self.proto.close_rcvd}"
        self._flush()

    def on_message(self, msg: bytes, now: float) -> None:
        hub = self.hub
        hub.messages += 1
        hub.bytes += len(msg)
        at = msg.find(hub.target_row)
        if at >= 0:
            m = WAITING_RE.search(msg, at)  # a message may hold several rows: read the target's
            if m:
                count = int(m.group(1))
                if count > self.max_count:
                    # Counts only grow during the run: a count skipped (coalesced) counts as
                    # arrived with the larger one.
                    for c in range(self.max_count + 1, count + 1):
                        if c not in self.first_seen:
                            self.first_seen[c] = now
                            hub.seen(c)
                    self.max_count = count
                if not self.snapshot.done():
                    self.snapshot.set_result(now)

    def _flush(self):
        for chunk in self.proto.data_to_send():
            if chunk:
                self.transport.write(chunk)
            else:
                self.transport.write_eof() if self.transport.can_write_eof() else self.transport.close()

    def connection_lost(self, exc):
        self.proto.receive_eof()
        if not self.opened.done():
            self.opened.set_exception(RuntimeError(f"connection lost during handshake: {exc}"))
        elif not self.closing:
            self.hub.closed_unexpectedly += 1
            self.close_reason = self.close_reason or f"connection lost: {exc}"
        if self.was_open:
            self.hub.open -= 1
            self.was_open = False

    def close(self):
        self.closing = True
        if self.transport is None or self.transport.is_closing():
            return
        try:
            self.proto.send_close(1000)
            self._flush()
        except Exception:
            pass
        self.transport.close()


# ---------------------------------------------------------------------------------------------
# Helpers


def plan(index: int, name: str, *, completed: int, failed: int, delayed: int) -> QueuePlan:
    return QueuePlan(
        index, name, {"completed": completed, "failed": failed, "wait": 0, "delayed": delayed, "prioritized": 0}
    )


def commandstats(client) -> dict[str, tuple[int, int]]:
    return {k[len("cmdstat_") :]: (v["calls"], v["usec"]) for k, v in client.info("commandstats").items()}


def stat_diff(a: dict, b: dict, cmd: str) -> dict:
    calls = b.get(cmd, (0, 0))[0] - a.get(cmd, (0, 0))[0]
    usec = b.get(cmd, (0, 0))[1] - a.get(cmd, (0, 0))[1]
    return {"calls": calls, "usec_per_call": round(usec / calls, 1) if calls else None}


class KeyspaceWatch:
    """Monitor-side timestamps without touching the monitor: keyspace notifications of the
    dashboard Redis (``notify-keyspace-events Khz``, set on the private server this benchmark
    started). Notifications carry only the key and the event name, so they cost Redis nothing
    like MONITOR would (MONITOR formats every 20 KB group message twice and visibly slowed the
    group_send it was meant to time).

    * ``hset`` on ``queuewatch:frag:overview``: the Publisher wrote a new overview row to the
      fragment cache, immediately before queueing its ``group_send``. The target row is read
      back (HGET) to learn which waiting count was published: that is the publish time.
    * ``zadd`` on ``queuewatch:asgispecific.<web process>!``: a group_send's Lua script put
      one message for this web process's consumers into the channel layer (a send that finds
      the key at capacity adds nothing: counted as dropped).
    * ``zadd`` on ``...!$inflight``: the web process's receive loop popped that message (BZPOPMIN, then the
      backup ZADD).
    """

    def __init__(self, url: str, target_row: str):
        self.url = url
        self.target_row = target_row
        self.publish_at: dict[int, float] = {}  # waiting count -> first hset showing it
        self.last_count = -1
        self.overview_hsets: list[float] = []
        self.channel_adds: list[float] = []
        self.web_pops: list[float] = []

    async def start(self) -> None:
        import redis.asyncio as aioredis

        self.r = aioredis.from_url(self.url)
        self.getter = aioredis.from_url(self.url)
        await self.r.config_set("notify-keyspace-events", "Khz")
        self.ps = self.r.pubsub()
        await self.ps.subscribe("__keyspace@0__:" + FRAG_KEY.decode())
        await self.ps.psubscribe("__keyspace@0__:queuewatch:asgispecific.*")
        self.frag_channel = ("__keyspace@0__:" + FRAG_KEY.decode()).encode()
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            msg = await self.ps.get_message(ignore_subscribe_messages=True, timeout=1.0)
            if msg is None:
                continue
            now = time.time()
            ch, data = msg["channel"], msg["data"]
            if data == b"hset" and ch == self.frag_channel:
                self.overview_hsets.append(now)
                html = await self.getter.hget(FRAG_KEY, self.target_row)
                m = WAITING_RE.search(html or b"")
                if m and int(m.group(1)) > self.last_count:
                    for c in range(self.last_count + 1, int(m.group(1)) + 1):
                        self.publish_at.setdefault(c, now)
                    self.last_count = int(m.group(1))
            elif data == b"zadd":
                if ch.endswith(b"!$inflight"):
                    self.web_pops.append(now)
                elif ch.endswith(b"!"):
                    self.channel_adds.append(now)

    def counters(self) -> tuple[int, int, int]:
        return len(self.overview_hsets), len(self.channel_adds), len(self.web_pops)

    async def stop(self) -> None:
        self.task.cancel()
        try:
            await self.task
        except asyncio.CancelledError:
            pass
        await self.ps.aclose()
        await self.r.aclose()
        await self.getter.aclose()


# ---------------------------------------------------------------------------------------------
# The benchmark


async def connect_clients(
    hub: Hub,
    n: int,
    port: int,
    cookies: list[str],
    concurrency: int,
    timeout: float,
    *,
    path: str = "/ws/overview/",
    wait_snapshot: bool = True,
    first_message: str | None = None,
):
    loop = asyncio.get_running_loop()
    uri = f"ws://127.0.0.1:{port}{path}"
    origin = f"http://127.0.0.1:{port}"
    sem = asyncio.Semaphore(concurrency)
    clients: list[WsClient] = []
    connect_s: list[float] = []
    snapshot_s: list[float] = []
    failures: list[str] = []
    done = 0

    async def one(i: int):
        nonlocal done
        async with sem:
            t0 = time.time()
            try:
                _, c = await asyncio.wait_for(
                    loop.create_connection(
                        lambda: WsClient(hub, uri, origin, cookies[i % len(cookies)], first_message),
                        "127.0.0.1",
                        port,
                    ),
                    timeout,
                )
                clients.append(c)
                t_open = await asyncio.wait_for(asyncio.shield(c.opened), timeout)
                connect_s.append(t_open - t0)
                if wait_snapshot:
                    t_snap = await asyncio.wait_for(asyncio.shield(c.snapshot), timeout)
                    snapshot_s.append(t_snap - t0)
            except Exception as exc:  # noqa: BLE001 - every failure is counted and reported
                failures.append(f"{type(exc).__name__}: {exc}")
            done += 1
            if done % 100 == 0:
                log(f"  {done}/{n} connections attempted ({len(failures)} failed)")

    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    return clients, {
        "wall_s": round(time.perf_counter() - t0, 3),
        "concurrency": concurrency,
        "handshake_s": stats(connect_s),
        "until_snapshot_row_s": stats(snapshot_s),
        "failed": len(failures),
        "failure_examples": sorted(set(failures))[:5],
    }


async def run_phase(
    name: str,
    *,
    hub: Hub,
    clients: list[WsClient],
    queue,
    watch: KeyspaceWatch,
    start_count: int,
    updates: int,
    update_timeout: float,
    pids: dict[str, int],
    dash_admin,
    batched: bool = False,
) -> tuple[dict, dict[int, float], int]:
    live = [c for c in clients if c.opened.done() and not c.opened.exception() and not c.transport.is_closing()]
    hub.expected_clients = len(live)
    writes: dict[int, float] = {}
    cpu0 = {k: pt.cpu_seconds(p) for k, p in pids.items()}
    self_cpu0 = time.process_time()
    msgs0, bytes0 = hub.messages, hub.bytes
    cs0 = commandstats(dash_admin)
    ks0 = watch.counters()
    t_phase = time.time()
    count = start_count
    timeouts = 0
    for i in range(updates):
        count += 1
        fut = asyncio.get_running_loop().create_future()
        hub.waiters[count] = fut
        if hub.arrived.get(count, 0) >= hub.expected_clients:
            fut.set_result(None)
        t_write = time.time()
        await queue.add("fanout", {"n": count, "phase": name})
        writes[count] = t_write
        try:
            await asyncio.wait_for(fut, update_timeout)
        except TimeoutError:
            timeouts += 1
        last = max((c.first_seen.get(count, 0) for c in live), default=0)
        got = hub.arrived.get(count, 0)
        lat = [c.first_seen[count] - t_write for c in live if count in c.first_seen]
        log(
            f"  {name} update {i + 1:>2}/{updates}: waiting={count}  {got}/{len(live)} clients  "
            f"p50 {statistics.median(lat) * 1000 if lat else float('nan'):7.1f} ms  "
            f"last {(last - t_write) * 1000 if got else float('nan'):7.1f} ms"
        )
        await asyncio.sleep(random.uniform(0.2, 0.6))
    await asyncio.sleep(0.5)  # stragglers
    elapsed = time.time() - t_phase
    cs1 = commandstats(dash_admin)
    ks1 = watch.counters()
    cpu = {k: round(pt.cpu_seconds(p) - cpu0[k], 3) for k, p in pids.items()}
    cpu["bench_client"] = round(time.process_time() - self_cpu0, 3)

    delivery, per_update_spread, per_update_last = [], [], []
    missed = 0
    for cnt, tw in writes.items():
        arr = [c.first_seen[cnt] for c in live if cnt in c.first_seen]
        missed += len(live) - len(arr)
        delivery += [a - tw for a in arr]
        if arr:
            per_update_spread.append(max(arr) - min(arr))
            per_update_last.append(max(arr) - tw)
    result = {
        "clients": len(live),
        "updates": updates,
        "delivery_write_to_client_s": stats(delivery),
        "per_update_last_client_s": stats(per_update_last),
        "per_update_first_to_last_client_s": stats(per_update_spread),
        "missed_deliveries": missed,
        "updates_timed_out": timeouts,
        "seconds": round(elapsed, 2),
        "ws_messages_received": hub.messages - msgs0,
        "ws_messages_per_s": round((hub.messages - msgs0) / elapsed, 1),
        "ws_bytes_received": hub.bytes - bytes0,
        "cpu_s": cpu,
        "cpu_utilisation": {k: round(v / elapsed, 3) for k, v in cpu.items()},
        "channel_layer": {
            # Overview rows the monitor published (fragment-cache HSETs), messages its group_sends
            # put into the web process's channel-layer key, and messages the web process's receive loop popped.
            "overview_rows_published": ks1[0] - ks0[0],
            "group_messages_queued_for_web": ks1[1] - ks0[1],
            # Overview rows are batched by the product, so drops cannot be derived from rows published.
            "dropped_at_capacity": (ks1[0] - ks0[0]) - (ks1[1] - ks0[1]) if not batched else None,
            "group_messages_popped_by_web": ks1[2] - ks0[2],
            "popped_per_s": round((ks1[2] - ks0[2]) / elapsed, 2),
            "web_cpu_s_per_popped_message": round(cpu["web"] / (ks1[2] - ks0[2]), 4) if ks1[2] > ks0[2] else None,
        },
        "dashboard_redis_commands": {cmd: stat_diff(cs0, cs1, cmd) for cmd in ("eval", "hset", "bzpopmin", "zadd")},
        "closed_unexpectedly_total": hub.closed_unexpectedly,
    }
    return result, writes, count


def first_after(times: list[float], t: float) -> float | None:
    i = bisect.bisect_left(times, t)
    return times[i] if i < len(times) else None


def split_monitor_side(
    writes: dict[int, float], watch: KeyspaceWatch, clients: list[WsClient], *, exact_pairing: bool
) -> dict:
    """write -> publish (fragment-cache HSET) -> client, per delivery. With ``exact_pairing`` (only
    the target row changes, so the next channel-layer message after its publish is its own), also
    publish -> group_send delivered into the channel layer -> popped by the web process -> client."""
    to_pub, pub_to_client, pub_to_gs, gs_to_pop, pop_to_client, gs_to_client = [], [], [], [], [], []
    found = 0
    for cnt, tw in writes.items():
        tp = watch.publish_at.get(cnt)
        if tp is None:
            continue
        found += 1
        to_pub.append(tp - tw)
        arr = [c.first_seen[cnt] for c in clients if cnt in c.first_seen]
        pub_to_client += [a - tp for a in arr]
        if exact_pairing:
            tg = first_after(watch.channel_adds, tp)
            if tg is None:
                continue
            pub_to_gs.append(tg - tp)
            gs_to_client += [a - tg for a in arr]
            tpop = first_after(watch.web_pops, tg)
            if tpop is not None:
                gs_to_pop.append(tpop - tg)
                pop_to_client += [a - tpop for a in arr]
    out = {"updates_matched": found, "write_to_publish_s": stats(to_pub), "publish_to_client_s": stats(pub_to_client)}
    if exact_pairing:
        out.update(
            {
                "publish_to_group_send_in_redis_s": stats(pub_to_gs),
                "group_send_to_web_pop_s": stats(gs_to_pop),
                "web_pop_to_client_s": stats(pop_to_client),
                "group_send_to_client_s": stats(gs_to_client),
            }
        )
    return out


async def bench(args, mon_redis: PrivateRedis, dash_redis: PrivateRedis, tmpdir: str, children: list) -> dict:
    from bullmq import Queue

    result: dict = {
        "bench": "fanout",
        "goal": {"delivery_p95_s_max": GOAL_P95_S},
        "clients_requested": args.clients,
        "host": {"cpus": os.cpu_count(), "loadavg_start": os.getloadavg()},
    }
    # --- data ---
    plans = [plan(0, TARGET, completed=20, failed=5, delayed=0)]
    plans += [
        plan(i, f"fanout-bg-{i:03d}", completed=200, failed=50, delayed=20)
        for i in range(1, args.background_queues + 1)
    ]
    load(mon_redis, plans, events_per_queue=5)
    log(f"loaded {len(plans)} queues into the monitored Redis (port {mon_redis.port})")

    # --- app processes ---
    env = pt.app_env(
        redis_url=mon_redis.url,
        dashboard_redis_url=dash_redis.url,
        db_path=os.path.join(tmpdir, "db.sqlite3"),
        tick_ms=args.tick_ms,
        # One bench user opens every socket: the per-user cap must not be what is measured.
        QUEUEWATCH_LIVE_SOCKETS_PER_USER=str(args.clients + args.watchers + 10),
    )
    pt.manage(env, "migrate", "-v0")
    username, password = pt.manage(env, "demo_user", "--username", "fanout").split(" / ")
    port = _free_port()
    result["web_server"] = "python -m dashboard.serve"
    web = pt.start_web(env, port, tmpdir)
    children.append(web)
    result["monitor_cmd"] = "manage.py monitor"
    monitor = pt.start_monitor(env, tmpdir, None)
    children.append(monitor)
    base = f"http://127.0.0.1:{port}"
    pt.wait_http(base + "/login/", web)
    log(f"web pid {web.pid} on {base}; monitor pid {monitor.pid}; tick {args.tick_ms or 'default (2000)'} ms")

    dash = dash_redis.client(socket_timeout=10)
    deadline = time.monotonic() + 60
    while state_queues(dash) < len(plans):
        if not monitor.alive() or time.monotonic() > deadline:
            raise RuntimeError(f"monitor did not publish the figures of {len(plans)} queues:\n{monitor.tail()}")
        time.sleep(0.2)
    log(f"monitor published the figures of {len(plans)} queues")

    cookies = [pt.login_session(base, username, password) for _ in range(args.sessions)]
    log(f"logged in {len(cookies)} sessions through /login/")
    # Every client is an overview tab on its first page, which names the rows it shows (as the
    # page's script does): the monitor renders those rows only. The target must be on that page.
    if len(plans) > 100:
        raise SystemExit("--background-queues: at most 99 (the clients' overview page shows 100 rows)")
    view = overview_view(base, cookies[0], "?sort=name")
    shown_rows = len(plans)

    # --- connect ---
    hub = Hub(row_id(TARGET).encode())
    log(f"connecting {args.clients} websockets to /ws/overview/ ...")
    clients, connect = await connect_clients(
        hub,
        args.clients,
        port,
        [f"sessionid={c}" for c in cookies],
        args.connect_concurrency,
        args.connect_timeout,
        first_message=json.dumps({"view": view}),
    )
    deadline = time.monotonic() + 60
    while dash.hlen(FRAG_KEY) < shown_rows:  # the page's rows, rendered once it was named
        if not monitor.alive() or time.monotonic() > deadline:
            raise RuntimeError(f"monitor did not render the page's {shown_rows} rows:\n{monitor.tail()}")
        time.sleep(0.2)
    result["connect"] = connect
    result["clients_connected"] = hub.open
    info = dash.info("clients")
    result["dashboard_redis_connected_clients_after_connect"] = info["connected_clients"]
    result["web_rss_mib_after_connect"] = round(pt.status_kib(web.pid) / 1024, 1)
    result["web_threads_after_connect"] = pt.threads(web.pid)
    log(
        f"connected {hub.open}/{args.clients} in {connect['wall_s']} s; handshake p95 "
        f"{connect['handshake_s'].get('p95')} s; dashboard Redis now has {info['connected_clients']} client connections"
    )
    if hub.open == 0:
        raise RuntimeError("no websocket connected:\n" + web.tail())
    watchers: list[WsClient] = []
    if args.watchers:
        # Sockets on another queue's page with its failed list live: each keeps a watch entry the
        # monitor must not pay for when it refreshes the target (or any other) queue.
        watched = plans[1].name if len(plans) > 1 else TARGET
        path = f"/ws/queue/default/{PREFIX}/{watched}/?state=failed&list=1"
        log(f"connecting {args.watchers} watcher websockets to {path} ...")
        watcher_hub = Hub(b"\x00no row\x00")
        watchers, wconnect = await connect_clients(
            watcher_hub,
            args.watchers,
            port,
            [f"sessionid={c}" for c in cookies],
            args.connect_concurrency,
            args.connect_timeout,
            path=path,
            wait_snapshot=False,
        )
        result["watchers"] = {"requested": args.watchers, "connected": watcher_hub.open, "connect": wconnect}
        log(f"connected {watcher_hub.open}/{args.watchers} watchers in {wconnect['wall_s']} s")
        await asyncio.sleep(3)  # let the monitor see them (announce_watching) before measuring

    watch = KeyspaceWatch(dash_redis.url, row_id(TARGET))
    await watch.start()
    mon = mon_redis.client(socket_timeout=10)
    start_count = mon.llen(f"{PREFIX}:{TARGET}:wait")
    queue = Queue(TARGET, {"connection": mon_redis.url, "prefix": PREFIX})
    pids = {"web": web.pid, "monitor": monitor.pid}
    try:
        log(f"phase quiet: {args.updates} updates, only the target row changes")
        quiet, quiet_writes, count = await run_phase(
            "quiet",
            hub=hub,
            clients=clients,
            queue=queue,
            watch=watch,
            start_count=start_count,
            updates=args.updates,
            update_timeout=args.update_timeout,
            pids=pids,
            dash_admin=dash,
            batched=True,
        )
        result["quiet"] = quiet

        busy = None
        busy_writes: dict[int, float] = {}
        if args.background_queues and not args.quiet_only:
            log(
                f"phase busy: {args.background_queues} background queues get a job each every "
                f"{1 / args.churn_per_s:.2f} s, so their rows change all the time"
            )
            churn_stop = asyncio.Event()
            churn_stats = {"adds": 0, "late_rounds": 0}
            bg_queues = [Queue(p.name, {"connection": mon_redis.url, "prefix": PREFIX}) for p in plans[1:]]

            async def churn():
                period = 1 / args.churn_per_s
                nxt = time.monotonic()
                while not churn_stop.is_set():
                    await asyncio.gather(*(q.add("background", {"n": churn_stats["adds"]}) for q in bg_queues))
                    churn_stats["adds"] += len(bg_queues)
                    nxt += period
                    delay = nxt - time.monotonic()
                    if delay < 0:
                        churn_stats["late_rounds"] += 1
                        nxt = time.monotonic()
                    try:
                        await asyncio.wait_for(churn_stop.wait(), max(0.0, delay))
                    except TimeoutError:
                        pass

            churn_task = asyncio.create_task(churn())
            try:
                await asyncio.sleep(3)  # let the churn reach steady state
                busy, busy_writes, count = await run_phase(
                    "busy",
                    hub=hub,
                    clients=clients,
                    queue=queue,
                    watch=watch,
                    start_count=count,
                    updates=args.updates,
                    update_timeout=args.update_timeout,
                    pids=pids,
                    dash_admin=dash,
                    batched=True,
                )
            finally:
                churn_stop.set()
                await churn_task
                for q in bg_queues:
                    await q.close()
            busy["background_queues"] = args.background_queues
            busy["background_adds_per_queue_per_s"] = args.churn_per_s
            busy["background_adds"] = churn_stats["adds"]
            busy["background_late_rounds"] = churn_stats["late_rounds"]
            result["busy"] = busy
    finally:
        await queue.close()
        await watch.stop()

    result["quiet"]["monitor_side"] = split_monitor_side(quiet_writes, watch, clients, exact_pairing=True)
    if busy is not None:
        result["busy"]["monitor_side"] = split_monitor_side(busy_writes, watch, clients, exact_pairing=False)

    result["web_rss_mib_end"] = round(pt.status_kib(web.pid) / 1024, 1)
    result["monitor_rss_mib_end"] = round(pt.status_kib(monitor.pid) / 1024, 1)
    result["closed_unexpectedly"] = hub.closed_unexpectedly
    result["close_reasons"] = sorted({c.close_reason for c in clients if c.close_reason})[:5]
    for c in clients + watchers:
        c.close()
    await asyncio.sleep(0.5)
    p95 = result["quiet"]["delivery_write_to_client_s"].get("p95")
    result["goal_met_quiet"] = p95 is not None and p95 <= GOAL_P95_S and result["quiet"]["missed_deliveries"] == 0
    if "busy" in result:
        bp95 = result["busy"]["delivery_write_to_client_s"].get("p95")
        result["goal_met_busy"] = bp95 is not None and bp95 <= GOAL_P95_S and result["busy"]["missed_deliveries"] == 0
    result["host"]["loadavg_end"] = os.getloadavg()
    return result


def report(r: dict) -> None:
    log("")
    log(
        f"clients connected: {r['clients_connected']}/{r['clients_requested']}  "
        f"connect wall {r['connect']['wall_s']} s  "
        f"handshake p50/p95/max {r['connect']['handshake_s'].get('p50')}/{r['connect']['handshake_s'].get('p95')}/"
        f"{r['connect']['handshake_s'].get('max')} s  failures {r['connect']['failed']}"
    )
    for phase in ("quiet", "busy"):
        if phase not in r:
            continue
        p = r[phase]
        d = p["delivery_write_to_client_s"]
        log(
            f"{phase:>5}: delivery write->client p50 {d.get('p50')} s  p95 {d.get('p95')} s  max {d.get('max')} s  "
            f"(n={d.get('n')}, missed {p['missed_deliveries']}); {p['ws_messages_per_s']} msgs/s; "
            f"cpu {p['cpu_utilisation']}"
        )
        ms = p.get("monitor_side")
        if ms:
            line = (
                f"       write->publish p50 {ms['write_to_publish_s'].get('p50')} s; publish->client "
                f"p50 {ms['publish_to_client_s'].get('p50')} p95 {ms['publish_to_client_s'].get('p95')} s"
            )
            if "group_send_to_client_s" in ms:
                line += (
                    f"; publish->group_send p50 {ms['publish_to_group_send_in_redis_s'].get('p50')} s; "
                    f"web pop->client p50 {ms['web_pop_to_client_s'].get('p50')} "
                    f"p95 {ms['web_pop_to_client_s'].get('p95')} s"
                )
            log(line)
        cl = p["channel_layer"]
        log(
            f"       channel layer: {cl['overview_rows_published']} rows published, "
            f"{cl['dropped_at_capacity']} dropped at "
            f"capacity, {cl['group_messages_popped_by_web']} popped by the web process ({cl['popped_per_s']}/s, "
            f"{cl['web_cpu_s_per_popped_message']} web CPU s each)"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=500)
    ap.add_argument("--updates", type=int, default=20, help="updates per phase")
    ap.add_argument(
        "--background-queues",
        type=int,
        default=50,
        help="other queues on the overview, changing all the time in the busy phase (0: no busy phase)",
    )
    ap.add_argument(
        "--churn-per-s",
        type=float,
        default=1.0,
        help="busy phase: jobs added per second to each background queue (default 1)",
    )
    ap.add_argument(
        "--watchers",
        type=int,
        default=0,
        help="extra sockets watching another queue's page (failed list live); the monitor's CPU must not follow them",
    )
    ap.add_argument(
        "--quiet-only", action="store_true", help="skip the busy phase (the background queues are still loaded)"
    )
    ap.add_argument("--sessions", type=int, default=5, help="logged-in sessions the clients are spread over")
    ap.add_argument("--tick-ms", type=int, default=None, help="QUEUEWATCH_MONITOR_TICK_MS (default: the product's)")
    ap.add_argument("--connect-concurrency", type=int, default=50)
    ap.add_argument("--connect-timeout", type=float, default=30.0)
    ap.add_argument("--update-timeout", type=float, default=5.0)
    ap.add_argument("--keep-logs", metavar="DIR", help="copy the web and monitor logs here")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    random.seed(args.seed)

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    tmpdir = tempfile.mkdtemp(prefix="qw-fanout-")
    mon_redis, dash_redis = PrivateRedis(), PrivateRedis()
    children: list[pt.Child] = []
    t0 = time.monotonic()
    try:
        mon_redis.start()
        dash_redis.start()
        log(
            f"monitored redis-server pid {mon_redis.proc.pid} port {mon_redis.port}; dashboard redis-server pid "
            f"{dash_redis.proc.pid} port {dash_redis.port}"
        )
        result = asyncio.run(bench(args, mon_redis, dash_redis, tmpdir, children))
        result["wall_s"] = round(time.monotonic() - t0, 1)
        report(result)
        print(json.dumps(result))
        return 0
    except KeyboardInterrupt:
        log("\ninterrupted")
        return 130
    finally:
        for c in reversed(children):
            c.stop()
        if args.keep_logs:
            os.makedirs(args.keep_logs, exist_ok=True)
            for f in os.listdir(tmpdir):
                if f.endswith(".log"):
                    shutil.copy(os.path.join(tmpdir, f), args.keep_logs)
        mon_redis.stop()
        dash_redis.stop()
        shutil.rmtree(tmpdir, ignore_errors=True)
        log("stopped web, monitor and both redis-servers; temp dir removed")


if __name__ == "__main__":
    sys.exit(main())
