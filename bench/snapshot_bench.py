"""Queuewatch read-path benchmark against a private Redis holding many BullMQ 6 queues.

    .venv/bin/python bench/snapshot_bench.py [--queues 1000] [--jobs 1000000] [--runs 20]

What it does
------------
1. Starts its **own** ``redis-server`` (free loopback port, ``--save '' --appendonly no``, data
   dir in a temp directory). Every connection made here goes to that port, and before loading we
   check that the server answering there is the process we started (``INFO server``
   ``process_id``). The server is shut down and the temp dir removed at the end, also on Ctrl-C,
   SIGTERM or an exception. The child gets PR_SET_PDEATHSIG (Linux), so even a SIGKILL of this
   script does not leave it running.

2. Fills it with ``--queues`` queues and ``--jobs`` jobs in BullMQ 6's Redis layout (its keys
   and job hashes, as BullMQ's own Lua scripts write them) with an **equivalent bulk
   loader**: instead of running BullMQ's Lua scripts (``addStandardJob``, ``moveToActive``,
   ``moveToFinished`` …) once per job — several round trips and script executions per job,
   which for 1,000,000 jobs would take many minutes — it writes the *end state* those scripts
   would leave, with plain commands encoded as raw RESP and streamed over one pipelined socket
   (replies are read by a second thread and checked for errors). Per queue it writes:

   * ``meta`` HASH: ``opts.maxLenEvents`` = 10000 and ``version`` = ``bullmq:6.7.0`` (what the
     Node ``Queue`` constructor writes); every 50th queue is paused (``paused`` = 1);
   * ``id`` STRING: the job-id counter, INCRed once per add, so it equals the number of adds;
   * job hashes ``<prefix>:<queue>:<id>`` with the fields of ``storeJob.lua`` (``name``, ``data``
     (~200-byte JSON), ``opts`` (JSON with ``attempts``/``backoff``), ``timestamp``, ``delay``,
     ``priority``), plus what ``prepareJobForProcessing.lua`` / ``moveToFinished-14.lua`` add
     for jobs that ran: ``processedOn``, ``ats``, ``atm``, ``finishedOn`` and ``returnvalue``
     (completed) or ``failedReason`` + ``stacktrace`` (JSON array, failed). Jobs that never ran
     (fresh ``wait``/``prioritized``/``delayed`` adds) have no ``atm``/``ats``, exactly like
     BullMQ; delayed jobs that are backoff retries do (plus ``failedReason``/``stacktrace``);
   * ``completed`` ZSET (score = ``finishedOn``), ``failed`` ZSET (score = ``finishedOn``),
     ``wait`` LIST (LPUSHed oldest first, so the tail is the oldest/next job), ``delayed`` ZSET
     (score = ``due * 4096 + seq``), ``prioritized`` ZSET (score = ``priority * 2^32 + counter``)
     with its ``pc`` counter, and the ``marker`` ZSET a worker would block on;
   * on every 100th queue one job scheduler (``repeat`` ZSET + ``repeat:<id>`` hash with ``ic``)
     and its next iteration, a delayed job with id ``repeat:<id>:<millis>`` and ``rjk``;
   * a short ``events`` stream (the last ``--events`` events, MAXLEN ~ 10000 like BullMQ). The
     full per-job event history is not replayed: BullMQ trims it to ~10000 entries anyway and
     none of the measured reads touch it.

   No ``active`` jobs and no locks are written (no worker is running).

   Distribution (deliberately uneven): the first queue, ``bench-0000``, gets 25% of all jobs,
   80% of them failed (200,000 failed jobs at 1,000,000); the rest are spread over the other
   queues with log-normal weights (a few big queues, many small ones), 40% completed, 20%
   failed, 25% waiting, 10% delayed, 5% prioritized each.

3. Cross-checks the loaded data with real Node BullMQ 6 (``bench/verify_layout.mjs`` with the
   ``tests/node`` install): for the biggest, the last, one paused and one scheduler queue,
   ``getJobCounts``, ``isPaused``, ``getJobSchedulersCount``, ``getJobs`` + ``getState`` must
   match the plan. Skipped (``layout_verified_by_bullmq: null``) without node;
   ``--no-verify-node`` skips it.

4. Measures, with the real Queuewatch code (same client options as the app):
   * ``queues.redis.discovery.discover_queue_names`` (SCAN for ``bull:*:meta``);
   * ``queues.redis.snapshot.read_snapshots`` over all queues (median/p95 over ``--runs`` runs);
   * ``queues.redis.listing.list_jobs`` alone (no Django) for the failed lists below;
   * through Django's test ``Client`` (DEBUG settings, SQLite in the temp dir, a logged-in
     user): the overview page (its first page of rows, and the last page sorted by failed
     count; the render p50 is printed beside the snapshot time, target <= 200 ms), and the
     failed-jobs page of the biggest queue for page sizes 25 and 100, page 1 and the last full
     page, the same for a small queue (the smallest with >= 200 failed jobs), and a
     waiting-list page of the big queue;
   * "cold" variants: the overview and a job-list page when the registry's discovery cache has
     expired, so the request itself rescans (once per ``QUEUEWATCH_DISCOVERY_TTL`` per process).
     For the other page figures the TTL is set to 3600 s so no rescan lands in them.
   For each: wall time (p50 = median, p95 = nearest rank, the 19th of 20), this process's CPU
   time (median), the Redis commands sent per run and the time Redis spent on them (differences
   of ``INFO commandstats`` calls/usec before and after, the ``info`` calls excluded). The host's
   load average is recorded: on a busy 2-CPU host wall times are inflated, CPU + Redis time
   much less so.

5. Prints a table to stderr and ONE JSON object with every figure as the last line of stdout.

``--profile`` additionally prints cProfile output (cumulative and own time) for one snapshot,
the overview page and the heaviest job-list page to stderr.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import pstats
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

import redis  # noqa: E402

PREFIX = "bull"
BIG_SHARE = 0.25  # share of all jobs in the first queue
BIG_FAILED_SHARE = 0.80  # share of the first queue's jobs that are failed
STATE_SHARES = {"completed": 0.40, "failed": 0.20, "wait": 0.25, "delayed": 0.10, "prioritized": 0.05}
TARGET_SNAPSHOT_MS = 200
TARGET_LIST_MS = 100
TARGET_OVERVIEW_MS = 200  # the overview page of 1,000 queues, p50
MAX_EVENTS = 10000


def log(msg: str = "") -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Private redis-server


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _set_pdeathsig() -> None:  # runs in the child between fork and exec
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class PrivateRedis:
    def __init__(self) -> None:
        self.tmpdir = tempfile.mkdtemp(prefix="qw-bench-")
        self.proc: subprocess.Popen | None = None
        self.port = 0

    def start(self) -> None:
        exe = shutil.which("redis-server")
        if not exe:
            raise SystemExit("redis-server not found on PATH")
        for _ in range(5):
            port = _free_port()
            proc = subprocess.Popen(
                [
                    exe,
                    "--port",
                    str(port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    self.tmpdir,
                    "--daemonize",
                    "no",
                    "--logfile",
                    os.path.join(self.tmpdir, "redis.log"),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C reaches us, and we shut the server down ourselves
                preexec_fn=_set_pdeathsig,
            )
            self.proc, self.port = proc, port
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=2)
                    pid = r.info("server")["process_id"]
                    r.close()
                    if pid != proc.pid:  # someone else answered on this port: never touch it
                        raise SystemExit(f"port {port} is answered by another Redis (pid {pid}); aborting")
                    return
                except (redis.ConnectionError, redis.TimeoutError, OSError):
                    time.sleep(0.05)
            self._stop_proc()  # lost a port race or failed to start: try another port
        raise SystemExit("could not start a private redis-server (see redis.log in " + self.tmpdir + ")")

    def client(self, **kw) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, **kw)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _stop_proc(self) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        try:
            r = self.client(socket_timeout=5)
            r.shutdown(nosave=True)
        except Exception:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def stop(self) -> None:
        try:
            self._stop_proc()
        finally:
            shutil.rmtree(self.tmpdir, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Bulk loader: raw RESP over one pipelined socket


def resp(*args) -> str:
    """One command in RESP. All arguments are ASCII, so str length == byte length."""
    parts = [f"*{len(args)}\r\n"]
    for a in args:
        a = a if isinstance(a, str) else str(a)
        parts.append(f"${len(a)}\r\n{a}\r\n")
    return "".join(parts)


class RespPipe:
    """Streams RESP commands to Redis; a reader thread drains replies and counts errors.
    ``close`` sends an ECHO marker and waits until its reply arrives, so every command before
    it has been executed."""

    FLUSH_AT = 4 << 20

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf: list[str] = []
        self.size = 0
        self.sent_commands = 0
        self.errors = 0
        self.first_error = b""
        self.marker_seen = False
        self.marker = f"qw-bench-end-{os.getpid()}-{time.time_ns()}"
        self._done = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def add(self, command: str) -> None:
        self.buf.append(command)
        self.size += len(command)
        self.sent_commands += 1
        if self.size >= self.FLUSH_AT:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            self.sock.sendall("".join(self.buf).encode("ascii"))
            self.buf, self.size = [], 0

    def _read(self) -> None:
        marker = self.marker.encode()
        prev = b"\r\n"  # the end of the previous chunk; starts so a first error reads "\r\n-"
        while True:
            try:
                chunk = self.sock.recv(1 << 20)
            except OSError:  # server shut down under us (Ctrl-C): the main thread reports it
                break
            if not chunk:
                break
            # Replies are ":n", "+OK", one "$" bulk (XADD ids) or "-ERR ...". Errors are counted
            # in prev[-2:] + chunk so one straddling two chunks is seen, and seen once.
            edge = prev[-2:] + chunk
            n = edge.count(b"\r\n-")
            if n:
                self.errors += n
                if not self.first_error:
                    i = edge.index(b"\r\n-")
                    self.first_error = edge[i + 2 : edge.find(b"\r\n", i + 2)]
            if marker in prev[-len(marker) :] + chunk:
                self.marker_seen = True
                break
            prev = chunk
        self._done.set()

    def close(self) -> None:
        self.add(resp("ECHO", self.marker))
        self.flush()
        self._done.wait()
        self.sock.close()
        if self.errors:
            raise RuntimeError(f"bulk load: {self.errors} Redis errors, first: {self.first_error!r}")
        if not self.marker_seen:
            raise RuntimeError("bulk load: connection closed before every reply arrived")


@dataclass
class QueuePlan:
    index: int
    name: str
    states: dict[str, int]
    paused: bool = False
    scheduler: bool = False

    @property
    def jobs(self) -> int:
        return sum(self.states.values())


def split_states(n: int, shares: dict[str, float]) -> dict[str, int]:
    """Largest-remainder split of n jobs by shares, so the counts add up exactly."""
    raw = {s: n * f for s, f in shares.items()}
    out = {s: int(v) for s, v in raw.items()}
    for s in sorted(raw, key=lambda s: raw[s] - out[s], reverse=True)[: n - sum(out.values())]:
        out[s] += 1
    return out


def plan_queues(n_queues: int, n_jobs: int, seed: int) -> list[QueuePlan]:
    rng = random.Random(seed)
    names = [f"bench-{i:04d}" for i in range(n_queues)]
    if n_queues == 1:
        big, rest = n_jobs, 0
    else:
        big = int(n_jobs * BIG_SHARE)
        rest = n_jobs - big
    big_failed = int(big * BIG_FAILED_SHARE)
    other_shares = {s: f for s, f in STATE_SHARES.items() if s != "failed"}
    total = sum(other_shares.values())
    big_states = split_states(big - big_failed, {s: f / total for s, f in other_shares.items()})
    big_states["failed"] = big_failed
    plans = [QueuePlan(0, names[0], big_states)]
    if n_queues > 1:
        weights = [rng.lognormvariate(0, 1.5) for _ in range(n_queues - 1)]
        wsum = sum(weights)
        sizes = [int(rest * w / wsum) for w in weights]
        order = sorted(range(len(sizes)), key=lambda i: weights[i], reverse=True)
        for k in range(rest - sum(sizes)):
            sizes[order[k % len(order)]] += 1
        for i, size in enumerate(sizes, start=1):
            plans.append(QueuePlan(i, names[i], split_states(size, STATE_SHARES)))
    for p in plans:
        p.paused = p.index % 50 == 49
        p.scheduler = p.index % 100 == 1
    return plans


OPTS_PLAIN = '{"attempts":3,"backoff":{"type":"exponential","delay":1000}}'
REASONS = (
    "Error: upstream timeout after 30000ms",
    "TypeError: Cannot read properties of undefined (reading 'id')",
    "Error: connect ECONNREFUSED 10.0.3.17:5432",
    "ValidationError: email is not valid",
)


def bulk(value) -> str:
    value = str(value)
    return f"${len(value)}\r\n{value}\r\n"


NAMES_B = [bulk(n) for n in ("send-invoice", "charge-card", "sync-crm", "resize-image")]
F_NAME, F_DATA, F_OPTS, F_TS, F_DELAY, F_PRIO = map(bulk, ("name", "data", "opts", "timestamp", "delay", "priority"))
F_PROCESSED, F_FINISHED, F_RV = map(bulk, ("processedOn", "finishedOn", "returnvalue"))
OPTS_B = bulk(OPTS_PLAIN)
DELAY0_PRIO0 = F_DELAY + bulk(0) + F_PRIO + bulk(0)
ATS_ATM_1 = bulk("ats") + bulk(1) + bulk("atm") + bulk(1)
ATS_ATM_3 = bulk("ats") + bulk(3) + bulk("atm") + bulk(3)
_failure_cache: dict[tuple[int, int], str] = {}


def failure_fields(job_id: int, attempts: int) -> str:
    """RESP for the ``failedReason`` and ``stacktrace`` field/value pairs (few distinct values: cached)."""
    k = (job_id % 240, attempts)
    if k not in _failure_cache:
        reason = REASONS[job_id % len(REASONS)]
        _failure_cache[k] = (
            bulk("failedReason") + bulk(reason) + bulk("stacktrace") + bulk(stack_for(reason, job_id, attempts))
        )
    return _failure_cache[k]


def stack_for(reason: str, job_id: int, attempts: int = 3) -> str:
    """``stacktrace`` as BullMQ stores it: a JSON array with one stack per failed attempt."""
    frame = (
        f"{reason}\\n    at processOrder (/app/dist/workers/orders.js:{40 + job_id % 60}:13)\\n"
        "    at async Worker.processJob (/app/node_modules/bullmq/dist/cjs/classes/worker.js:512:28)\\n"
        "    at async Worker.retryIfFailed (/app/node_modules/bullmq/dist/cjs/classes/worker.js:731:24)"
    )
    return "[" + ",".join(f'"{frame}"' for _ in range(attempts)) + "]"


def load(rds: PrivateRedis, plans: list[QueuePlan], *, events_per_queue: int) -> dict:
    now = int(time.time() * 1000)
    total_jobs = sum(p.jobs for p in plans)
    pipe = RespPipe(rds.port)
    t0 = time.perf_counter()
    done = 0
    next_report = 0
    tty = sys.stderr.isatty()

    def progress(final: bool = False) -> None:
        elapsed = time.perf_counter() - t0
        rate = done / elapsed if elapsed else 0
        line = (
            f"loading: {done:>9,}/{total_jobs:,} jobs ({100 * done / max(1, total_jobs):5.1f}%)  "
            f"{rate / 1000:6.1f}k jobs/s  {elapsed:5.1f}s"
        )
        if tty:
            sys.stderr.write("\r" + line + ("\n" if final else ""))
            sys.stderr.flush()
        else:
            log(line)

    for p in plans:
        base = f"{PREFIX}:{p.name}:"
        n = p.jobs
        meta = ["HSET", base + "meta", "opts.maxLenEvents", MAX_EVENTS, "version", "bullmq:6.7.0"]
        if p.paused:
            meta += ["paused", "1"]
        pipe.add(resp(*meta))
        # Ids 1..n in creation order: finished jobs are the oldest, then delayed, prioritized
        # and the newest waiting. Creation times spread over the last 24 hours.
        spacing = max(1, 86_400_000 // max(1, n))
        created0 = now - 86_400_000
        order = []
        nf = p.states["completed"] + p.states["failed"]
        # interleave completed/failed evenly among the oldest ids
        c_left, f_left = p.states["completed"], p.states["failed"]
        for _ in range(nf):
            if f_left and (not c_left or f_left * p.states["completed"] >= c_left * p.states["failed"]):
                order.append("failed")
                f_left -= 1
            else:
                order.append("completed")
                c_left -= 1
        order += (
            ["delayed"] * p.states["delayed"] + ["prioritized"] * p.states["prioritized"] + ["wait"] * p.states["wait"]
        )

        # Set members are collected already RESP-encoded and sent as multi-member ZADD/LPUSH.
        zparts: dict[str, list[str]] = {"completed": [], "failed": [], "delayed": [], "prioritized": []}
        wait_parts: list[str] = []
        pc = 0
        events: list[tuple] = []

        # This queue's parts and key base, bound now: the function is made anew per queue.
        def flush_set(st: str, *, zparts=zparts, wait_parts=wait_parts, base=base) -> None:
            parts = zparts[st] if st != "wait" else wait_parts
            if parts:
                k = base + st
                verb = "$4\r\nZADD\r\n" if st != "wait" else "$5\r\nLPUSH\r\n"  # LPUSH oldest first: tail = oldest
                pipe.add(
                    f"*{2 + len(parts) * (2 if st != 'wait' else 1)}\r\n{verb}${len(k)}\r\n{k}\r\n" + "".join(parts)
                )
                parts.clear()

        for idx, state in enumerate(order):
            jid = idx + 1
            sid = str(jid)
            key = base + sid
            kb = f"${len(key)}\r\n{key}\r\n"
            ts = created0 + idx * spacing + (jid * 2654435761) % spacing
            c = (p.index * 7919 + jid) % 100_000_000
            data = (
                f'{{"orderId":{jid},"customerId":"cus_{c:08d}","email":"customer{c}@example.com","currency":"EUR",'
                f'"amountCents":{100 + (jid * 37) % 99_900},'
                f'"items":[{{"sku":"SKU-{jid % 100_000:05d}","qty":{1 + jid % 5}}},'
                f'{{"sku":"SKU-{(jid * 7) % 100_000:05d}","qty":{1 + jid % 3}}}],'
                f'"channel":"web","locale":"de-DE","note":"bench payload"}}'
            )
            head = f"{kb}{F_NAME}{NAMES_B[jid & 3]}{F_DATA}${len(data)}\r\n{data}\r\n"
            if state == "completed" or state == "failed":
                processed = ts + 5 + (jid * 40503) % 495
                finished = processed + 20 + (jid * 12345) % 2980
                if state == "completed":
                    rv = f'{{"ok":true,"ref":"r-{jid}"}}'
                    pipe.add(
                        f"*24\r\n$4\r\nHSET\r\n{head}{F_OPTS}{OPTS_B}{F_TS}$13\r\n{ts}\r\n{DELAY0_PRIO0}"
                        f"{F_PROCESSED}$13\r\n{processed}\r\n{ATS_ATM_1}{F_RV}${len(rv)}\r\n{rv}\r\n{F_FINISHED}$13\r\n{finished}\r\n"
                    )
                else:
                    pipe.add(
                        f"*26\r\n$4\r\nHSET\r\n{head}{F_OPTS}{OPTS_B}{F_TS}$13\r\n{ts}\r\n{DELAY0_PRIO0}"
                        f"{F_PROCESSED}$13\r\n{processed}\r\n{ATS_ATM_3}{failure_fields(jid, 3)}"
                        f"{F_FINISHED}$13\r\n{finished}\r\n"
                    )
                zparts[state].append(f"$13\r\n{finished}\r\n${len(sid)}\r\n{sid}\r\n")
                if len(zparts[state]) >= 1000:
                    flush_set(state)
            elif state == "delayed":
                due = now + 60_000 + (idx // 2) * 250
                if jid & 1:  # a fresh delayed add
                    delay = str(due - ts)
                    opts = f'{{"attempts":3,"delay":{delay},"backoff":{{"type":"exponential","delay":1000}}}}'
                    pipe.add(
                        f"*14\r\n$4\r\nHSET\r\n{head}{F_OPTS}${len(opts)}\r\n{opts}\r\n{F_TS}$13\r\n{ts}\r\n"
                        f"{F_DELAY}${len(delay)}\r\n{delay}\r\n{F_PRIO}$1\r\n0\r\n"
                    )
                else:  # a backoff retry moved to delayed by moveToDelayed: one failed attempt so far
                    pipe.add(
                        f"*24\r\n$4\r\nHSET\r\n{head}{F_OPTS}{OPTS_B}{F_TS}$13\r\n{ts}\r\n{F_DELAY}$4\r\n1000\r\n"
                        f"{F_PRIO}$1\r\n0\r\n{F_PROCESSED}$13\r\n{ts + 20}\r\n{ATS_ATM_1}{failure_fields(jid, 1)}"
                    )
                score = str(due * 4096 + (idx & 1))
                zparts["delayed"].append(f"${len(score)}\r\n{score}\r\n${len(sid)}\r\n{sid}\r\n")
                if len(zparts["delayed"]) >= 1000:
                    flush_set("delayed")
            elif state == "prioritized":
                prio = 1 + jid % 10
                pc += 1
                opts = f'{{"attempts":3,"priority":{prio},"backoff":{{"type":"exponential","delay":1000}}}}'
                pipe.add(
                    f"*14\r\n$4\r\nHSET\r\n{head}{F_OPTS}${len(opts)}\r\n{opts}\r\n{F_TS}$13\r\n{ts}\r\n"
                    f"{F_DELAY}$1\r\n0\r\n{F_PRIO}${len(str(prio))}\r\n{prio}\r\n"
                )
                score = str(prio * 2**32 + pc)
                zparts["prioritized"].append(f"${len(score)}\r\n{score}\r\n${len(sid)}\r\n{sid}\r\n")
                if len(zparts["prioritized"]) >= 1000:
                    flush_set("prioritized")
            else:
                pipe.add(f"*14\r\n$4\r\nHSET\r\n{head}{F_OPTS}{OPTS_B}{F_TS}$13\r\n{ts}\r\n{DELAY0_PRIO0}")
                wait_parts.append(f"${len(sid)}\r\n{sid}\r\n")
                if len(wait_parts) >= 1000:
                    flush_set("wait")
            if idx >= n - events_per_queue:
                events.append((state, sid))
            done += 1
            if done >= next_report:
                progress()
                next_report = done + max(10_000, total_jobs // 100)

        for st in ("completed", "failed", "delayed", "prioritized", "wait"):
            flush_set(st)
        adds = n
        if p.scheduler:
            sched = "nightly-report"
            nxt = (now // 86_400_000 + 1) * 86_400_000
            pipe.add(resp("ZADD", base + "repeat", nxt, sched))
            pipe.add(resp("HSET", base + "repeat:" + sched, "name", "nightly-report", "pattern", "0 0 * * *", "ic", 12))
            jid = f"repeat:{sched}:{nxt}"
            pipe.add(
                resp(
                    "HSET",
                    base + jid,
                    "name",
                    "nightly-report",
                    "data",
                    "{}",
                    "opts",
                    f'{{"repeat":{{"pattern":"0 0 * * *","count":12}},"jobId":"{jid}","delay":{nxt - now},'
                    f'"prevMillis":{nxt},"repeatJobKey":"{sched}","attempts":0}}',
                    "timestamp",
                    now,
                    "delay",
                    nxt - now,
                    "priority",
                    0,
                    "rjk",
                    sched,
                )
            )
            pipe.add(resp("ZADD", base + "delayed", nxt * 4096, jid))
            adds += 1
        pipe.add(resp("SET", base + "id", adds))
        if pc:
            pipe.add(resp("SET", base + "pc", pc))
        if p.states["wait"] or p.states["prioritized"]:
            pipe.add(resp("ZADD", base + "marker", 0, "0"))
        elif p.states["delayed"] or p.scheduler:
            pipe.add(resp("ZADD", base + "marker", now + 60_000, "1"))  # addDelayMarkerIfNeeded
        for state, sid in events:
            if state in ("completed", "failed"):
                ev = ("event", state, "jobId", sid, "prev", "active")
            elif state == "delayed":
                ev = ("event", "delayed", "jobId", sid, "delay", now + 60_000)
            else:
                ev = ("event", "waiting", "jobId", sid)
            pipe.add(resp("XADD", base + "events", "MAXLEN", "~", MAX_EVENTS, "*", *ev))
    pipe.close()
    progress(final=True)
    return {"seconds": time.perf_counter() - t0, "commands": pipe.sent_commands}


# ---------------------------------------------------------------------------------------------
# Measuring


def command_stats(admin: redis.Redis) -> tuple[dict[str, int], int]:
    """Calls per command and total server-side microseconds, without the INFO calls themselves."""
    stats = admin.info("commandstats")
    calls = {k[len("cmdstat_") :]: v["calls"] for k, v in stats.items() if k != "cmdstat_info"}
    usec = sum(v["usec"] for k, v in stats.items() if k != "cmdstat_info")
    return calls, usec


@contextmanager
def counting(admin: redis.Redis, out: dict):
    before, usec0 = command_stats(admin)
    yield
    after, usec1 = command_stats(admin)
    diff = {k: after[k] - before.get(k, 0) for k in after if after[k] - before.get(k, 0)}
    out.clear()
    out.update(diff)
    out["__usec__"] = usec1 - usec0


def pct(samples: list[float], q: float) -> float:
    s = sorted(samples)
    return s[max(0, math.ceil(q * len(s)) - 1)]


@dataclass
class Result:
    label: str
    samples_ms: list[float]
    cpu_ms: list[float] = field(default_factory=list)  # this process's CPU time per run
    commands: dict[str, int] = field(default_factory=dict)
    runs: int = 1
    note: str = ""

    @property
    def p50(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def p95(self) -> float:
        return pct(self.samples_ms, 0.95)

    @property
    def cpu_p50(self) -> float:
        return statistics.median(self.cpu_ms) if self.cpu_ms else float("nan")

    @property
    def commands_per_run(self) -> float:
        return sum(v for k, v in self.commands.items() if k != "__usec__") / self.runs

    @property
    def redis_ms_per_run(self) -> float:
        """Time Redis itself spent executing the commands (commandstats usec), per run."""
        return self.commands.get("__usec__", 0) / self.runs / 1000


def measure(label: str, fn, runs: int, admin: redis.Redis, *, warmup: int = 1, note: str = "") -> Result:
    for _ in range(warmup):
        fn()
    samples, cpu = [], []
    cmds: dict = {}
    with counting(admin, cmds):
        for _ in range(runs):
            c = time.process_time()
            t = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - t) * 1000)
            cpu.append((time.process_time() - c) * 1000)
    return Result(label, samples, cpu, cmds, runs, note)


def profile(label: str, fn, top: int = 25) -> None:
    pr = cProfile.Profile()
    pr.enable()
    fn()
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(top)
    log(f"\n===== cProfile: {label} (cumulative, top {top}) =====")
    log(s.getvalue())
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(15)
    log(f"===== cProfile: {label} (tottime, top 15) =====")
    log(s.getvalue())


def verify_with_bullmq(rds: PrivateRedis, plans: list[QueuePlan]) -> bool | None:
    """Ask real Node BullMQ 6 (tests/node) to read a few of the loaded queues and compare its
    counts, states and decoded jobs with the plan. None when node or the fixture is missing."""
    script = os.path.join(REPO, "bench", "verify_layout.mjs")
    node = shutil.which("node")
    if not node or not os.path.isdir(os.path.join(REPO, "tests", "node", "node_modules", "bullmq")):
        log("layout check with Node BullMQ skipped (node or tests/node/node_modules missing)")
        return None
    paused = [p.index for p in plans if p.paused][:1]
    scheduled = [p.index for p in plans if p.scheduler][:1]
    picks = {0, len(plans) - 1, *paused, *scheduled}
    picks = sorted(i for i in picks if 0 <= i < len(plans))
    names = [plans[i].name for i in picks]
    proc = subprocess.run([node, script, str(rds.port), json.dumps(names)], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"verify_layout.mjs failed: {proc.stderr[-2000:]}")
    problems = []
    for line in proc.stdout.splitlines():
        got = json.loads(line)
        p = next(p for p in plans if p.name == got["queue"])
        want = {
            "wait": p.states["wait"],
            "active": 0,
            "delayed": p.states["delayed"] + int(p.scheduler),
            "prioritized": p.states["prioritized"],
            "waiting-children": 0,
            "completed": p.states["completed"],
            "failed": p.states["failed"],
        }
        if got["counts"] != want:
            problems.append(f"{p.name}: BullMQ counts {got['counts']} != plan {want}")
        if got["paused"] != p.paused:
            problems.append(f"{p.name}: BullMQ isPaused {got['paused']} != plan {p.paused}")
        if got["schedulers"] != int(p.scheduler):
            problems.append(f"{p.name}: BullMQ schedulers {got['schedulers']} != plan {int(p.scheduler)}")
        for state, jobs in got["samples"].items():
            for j in jobs:
                expect_state = "waiting" if state == "wait" else state
                if j["state"] != expect_state:
                    problems.append(f"{p.name} job {j['id']}: BullMQ getState {j['state']} != {expect_state}")
                if not j["name"] or not j["timestamp"] or not (j["dataKeys"] or str(j["id"]).startswith("repeat:")):
                    problems.append(f"{p.name} job {j['id']}: BullMQ decoded an incomplete job {j}")
                if state in ("completed", "failed") and not (
                    j["finishedOn"] and j["processedOn"] and j["attemptsMade"]
                ):
                    problems.append(f"{p.name} job {j['id']}: finished job without processedOn/finishedOn/atm {j}")
                if state == "failed" and not (j["failedReason"] and j["stacktrace"] == j["attemptsMade"]):
                    problems.append(f"{p.name} job {j['id']}: failed job without reason/stacktrace {j}")
                if state == "prioritized" and not j["priority"]:
                    problems.append(f"{p.name} job {j['id']}: prioritized job with priority 0")
    if problems:
        raise RuntimeError("loaded layout disagrees with Node BullMQ:\n  " + "\n  ".join(problems[:20]))
    log(
        f"layout check: Node BullMQ 6 reads {', '.join(names)} exactly as planned "
        "(counts, states, paused, schedulers, job fields)"
    )
    return True


def setup_django(rds: PrivateRedis, tmpdir: str):
    # Nothing from the caller's environment may point the app at another Redis or database.
    for k in list(os.environ):
        if k.startswith("QUEUEWATCH_") or k in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE"):
            del os.environ[k]
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "dashboard.settings",
            "QUEUEWATCH_DEBUG": "1",
            "QUEUEWATCH_REDIS_URL": rds.url,
            "DATABASE_URL": f"sqlite:///{os.path.join(tmpdir, 'bench.sqlite3')}",
            # Keep discovery cached for the whole run so page timings do not randomly include a
            # rescan; the cost of a request that does rescan is measured separately ("cold").
            "QUEUEWATCH_DISCOVERY_TTL": "3600",
            "QUEUEWATCH_LOG_LEVEL": "WARNING",
        }
    )
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench", password="bench-password-123")
    client = Client(HTTP_HOST="127.0.0.1")  # ALLOWED_HOSTS has no "testserver"
    client.force_login(user)
    return client


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queues", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=20, help="timed repetitions per figure (default 20)")
    ap.add_argument("--events", type=int, default=20, help="events stream entries per queue (default 20)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument(
        "--no-verify-node",
        action="store_true",
        help="skip cross-checking the loaded data with Node BullMQ (tests/node)",
    )
    ap.add_argument("--profile", action="store_true", help="print cProfile output for the snapshot and pages")
    args = ap.parse_args()
    if args.queues < 1 or args.jobs < 0 or args.runs < 1:
        ap.error("--queues >= 1, --jobs >= 0, --runs >= 1")

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    # Also when started in the background by a non-interactive shell, which ignores SIGINT.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    rds = PrivateRedis()
    try:
        rds.start()
        log(f"private redis-server pid {rds.proc.pid} on 127.0.0.1:{rds.port} (dir {rds.tmpdir})")
        return run(args, rds)
    except KeyboardInterrupt:
        log("\ninterrupted")
        return 130
    finally:
        rds.stop()
        log("private redis-server stopped, temp dir removed")


def run(args, rds: PrivateRedis) -> int:
    load0 = os.getloadavg()
    plans = plan_queues(args.queues, args.jobs, args.seed)
    big = plans[0]
    log(
        f"plan: {len(plans)} queues, {sum(p.jobs for p in plans):,} jobs; biggest {big.name}: {big.jobs:,} jobs "
        f"({big.states['failed']:,} failed); smallest: {min(p.jobs for p in plans):,} jobs"
    )
    loaded = load(rds, plans, events_per_queue=args.events)
    admin = rds.client(socket_timeout=60)
    info_mem = admin.info("memory")
    dbsize = admin.dbsize()
    log(
        f"loaded {dbsize:,} keys with {loaded['commands']:,} commands in {loaded['seconds']:.1f}s; "
        f"used_memory {info_mem['used_memory'] / 2**20:,.0f} MiB"
    )

    # Sanity: the layout is what the plan says.
    assert admin.zcard(f"{PREFIX}:{big.name}:failed") == big.states["failed"]
    assert admin.llen(f"{PREFIX}:{big.name}:wait") == big.states["wait"]

    verified = None if args.no_verify_node else verify_with_bullmq(rds, plans)

    from queues.connections import ConnectionSpec
    from queues.keys import QueueRef
    from queues.redis.discovery import discover_queue_names
    from queues.redis.listing import list_jobs
    from queues.redis.snapshot import read_snapshots
    from queues.sources.redis_node import redis_client

    spec = ConnectionSpec(name="default", url=rds.url)
    client = redis_client(spec.url)  # the app's client options (bytes, timeouts, client name)
    client.ping()

    results: dict[str, Result] = {}
    names: list[str] = []

    def discover():
        names[:] = discover_queue_names(client, PREFIX)

    results["discovery"] = measure("discover_queue_names (SCAN bull:*:meta)", discover, max(3, args.runs // 4), admin)
    assert len(names) == len(plans), (len(names), len(plans))
    queues = [QueueRef("default", PREFIX, n) for n in names]
    snaps: list = []

    def snapshot():
        snaps[:] = read_snapshots(client, queues)

    results["snapshot"] = measure(f"read_snapshots ({len(queues)} queues)", snapshot, args.runs, admin)
    snap_by_name = {s.queue.name: s for s in snaps}
    assert snap_by_name[big.name].counts["failed"] == big.states["failed"]

    # A small queue for the "regardless of set size" comparison: the smallest with >= 200
    # failed jobs (two full pages of 100), else the one with the most failed jobs after the big one.
    cands = sorted((p for p in plans[1:] if p.states["failed"] >= 200), key=lambda p: p.states["failed"])
    small = cands[0] if cands else max(plans[1:] or plans, key=lambda p: p.states["failed"])
    big_ref = QueueRef("default", PREFIX, big.name)
    small_ref = QueueRef("default", PREFIX, small.name)

    def last_full_page(total: int, size: int) -> int:
        return max(1, total // size)

    # Reader-only timings of the job list (no Django), to separate Redis+parsing from rendering.
    for label, ref, total in (("big", big_ref, big.states["failed"]), ("small", small_ref, small.states["failed"])):
        for size in (25, 100):
            for page_name, page in (("p1", 1), ("deep", last_full_page(total, size))):
                key = f"reader_{label}_failed_{page_name}_s{size}"
                results[key] = measure(
                    f"list_jobs {ref.name} failed size={size} page={page}",
                    lambda ref=ref, page=page, size=size: list_jobs(client, ref, "failed", page=page, page_size=size),
                    args.runs,
                    admin,
                )

    # ---- Django pages ----
    client_http = setup_django(rds, rds.tmpdir)
    from django.urls import reverse

    from dashboard.connections import registry as qw_registry

    def get(url: str, expect_rows: int | None = None, row_marker: str = "", marker: bytes = b'<table class="jobs'):
        def fn():
            resp_ = client_http.get(url)
            if resp_.status_code != 200:
                raise RuntimeError(f"GET {url} -> {resp_.status_code}: {resp_.content[:500]!r}")
            return resp_

        resp_ = fn()
        if marker not in resp_.content:
            raise RuntimeError(f"GET {url}: page lacks {marker!r}: {resp_.content.decode()[-3000:]}")
        if expect_rows is not None:
            body = resp_.content.decode()
            rows = body.count(row_marker)
            if rows != expect_rows:
                raise RuntimeError(f"GET {url}: {rows} rows, expected {expect_rows}")
        return fn

    def expire_discovery():
        # Workaround for dashboard/connections/registry.py: Monitored.discovered_at starts at 0.0 and
        # "fresh" is ``time.monotonic() - discovered_at < ttl``. time.monotonic() counts from
        # boot, so on a host up for less than the TTL the empty initial queue list is treated as
        # fresh and the overview shows "No BullMQ queues found". -inf always means "stale".
        for name in qw_registry.get_registry().names:
            qw_registry.get_registry().connection(name).discovered_at = float("-inf")

    from django.conf import settings as dj_settings

    if time.monotonic() < dj_settings.QUEUEWATCH_DISCOVERY_TTL:
        log(
            f"note: host uptime ({time.monotonic():.0f} s) < QUEUEWATCH_DISCOVERY_TTL "
            f"({dj_settings.QUEUEWATCH_DISCOVERY_TTL} s): the registry would treat its empty initial "
            "queue list as fresh (dashboard/connections/registry.py bug); the bench forces the first discovery"
        )
    expire_discovery()
    from dashboard.browse.views import OVERVIEW_PAGE_SIZE

    # The overview shows OVERVIEW_PAGE_SIZE rows a page (sorted and filtered over all queues).
    shown = min(OVERVIEW_PAGE_SIZE, len(plans))
    overview = get(
        reverse("overview"),
        expect_rows=shown,
        row_marker=f"<td><code>{PREFIX}</code></td>",
        marker=b'<table class="queues">',
    )
    results["overview"] = measure(f"GET / overview ({len(plans)} queues, {shown} a page)", overview, args.runs, admin)
    last_page = -(-len(plans) // OVERVIEW_PAGE_SIZE)
    overview_sorted = get(
        reverse("overview") + f"?sort=failed&dir=desc&page={last_page}",
        expect_rows=len(plans) - (last_page - 1) * OVERVIEW_PAGE_SIZE,
        row_marker=f"<td><code>{PREFIX}</code></td>",
        marker=b'<table class="queues">',
    )
    results["overview_sorted_last"] = measure(
        f"GET / overview sorted by failed, last page ({last_page})", overview_sorted, args.runs, admin
    )

    def overview_cold():
        expire_discovery()
        overview()

    results["overview_cold"] = measure(
        "GET / overview, discovery cache expired", overview_cold, max(3, args.runs // 4), admin, warmup=0
    )

    def queue_url(name: str, state: str, page: int, size: int) -> str:
        return reverse("queue", args=["default", PREFIX, name]) + f"?state={state}&page={page}&size={size}"

    page_keys = []
    for label, plan in (("big", big), ("small", small)):
        total = plan.states["failed"]
        for size in (25, 100):
            for page_name, page in (("p1", 1), ("deep", last_full_page(total, size))):
                key = f"{label}_failed_{page_name}_s{size}"
                fn = get(
                    queue_url(plan.name, "failed", page, size),
                    expect_rows=min(size, total),
                    row_marker='<tr data-job-id="',
                )
                results[key] = measure(
                    f"GET {plan.name} failed size={size} page={page}", fn, args.runs, admin, note=f"{total:,} failed"
                )
                page_keys.append(key)
    wtotal = big.states["wait"]
    for page_name, page in (("p1", 1), ("deep", last_full_page(wtotal, 25))):
        key = f"big_waiting_{page_name}_s25"
        fn = get(
            queue_url(big.name, "waiting", page, 25),
            expect_rows=min(25, wtotal),
            row_marker='<tr data-job-id="',
        )
        results[key] = measure(
            f"GET {big.name} waiting size=25 page={page}", fn, args.runs, admin, note=f"{wtotal:,} waiting"
        )
        page_keys.append(key)

    # What a job-list request costs when it is the one that finds the discovery cache expired
    # (registry.queue() -> queues() rescans inline; with the default 10 s TTL that is one
    # request every 10 s per process).
    fn = get(
        queue_url(big.name, "failed", 1, 25),
        expect_rows=min(25, big.states["failed"]),
        row_marker='<tr data-job-id="',
    )

    def page_cold():
        expire_discovery()
        fn()

    results["big_failed_p1_s25_cold"] = measure(
        f"GET {big.name} failed size=25 page=1, discovery expired",
        page_cold,
        max(3, args.runs // 4),
        admin,
        warmup=0,
        note="not in the job-list target",
    )

    if args.profile:
        profile(f"read_snapshots ({len(queues)} queues)", snapshot)
        profile("GET / overview", overview)
        profile(
            f"GET {big.name} failed size=100 deep page",
            get(queue_url(big.name, "failed", last_full_page(big.states["failed"], 100), 100)),
        )

    # ---- report ----
    log("")
    log(f"{'measurement':<58} {'p50 ms':>8} {'p95 ms':>8} {'cpu ms':>7} {'redis ms':>8} {'cmds/run':>8}  notes")
    log("-" * 130)
    for r in results.values():
        cmds = {k: v for k, v in r.commands.items() if k != "__usec__"}
        top = ", ".join(f"{k}={v / r.runs:g}" for k, v in sorted(cmds.items(), key=lambda kv: -kv[1])[:4])
        log(
            f"{r.label:<58} {r.p50:8.1f} {r.p95:8.1f} {r.cpu_p50:7.1f} "
            f"{r.redis_ms_per_run:8.2f} {r.commands_per_run:8.1f}  "
            f"{r.note + '; ' if r.note else ''}{top}"
        )
    log("-" * 130)
    log("p50/p95 = wall time; cpu ms = this process's CPU time (median), i.e. redis-py, the reader,")
    log("Django and templates; redis ms = time Redis spent executing the commands (INFO commandstats")
    log("usec). On a busy host wall time exceeds cpu + redis; cpu + redis is what contention cannot inflate much.")
    load1 = os.getloadavg()
    log(
        f"host: {os.cpu_count()} CPUs, load average {load1[0]:.2f} / {load1[1]:.2f} / {load1[2]:.2f} (1/5/15 min) "
        f"at the end, {load0[0]:.2f} at the start"
    )

    out: dict = {
        "queues": len(plans),
        "jobs": sum(p.jobs for p in plans),
        "redis_keys": dbsize,
        "redis_used_memory_mb": round(info_mem["used_memory"] / 2**20, 1),
        "load_seconds": round(loaded["seconds"], 2),
        "load_commands": loaded["commands"],
        "layout_verified_by_bullmq": verified,
        "runs": args.runs,
        "big_queue": big.name,
        "big_queue_jobs": big.jobs,
        "big_queue_failed": big.states["failed"],
        "big_queue_waiting": big.states["wait"],
        "small_queue": small.name,
        "small_queue_failed": small.states["failed"],
        "discovery_ms": round(results["discovery"].p50, 2),
        "discovery_ms_p95": round(results["discovery"].p95, 2),
        "discovery_commands": round(results["discovery"].commands_per_run, 1),
        "discovery_redis_ms": round(results["discovery"].redis_ms_per_run, 2),
        "discovery_cpu_ms": round(results["discovery"].cpu_p50, 2),
        "host_cpus": os.cpu_count(),
        "host_loadavg_1m_start": round(load0[0], 2),
        "host_loadavg_1m_end": round(load1[0], 2),
    }
    for key, r in results.items():
        if key == "discovery":
            continue
        name = "snapshot" if key == "snapshot" else key
        out[f"{name}_ms_p50"] = round(r.p50, 2)
        out[f"{name}_ms_p95"] = round(r.p95, 2)
        out[f"{name}_commands"] = round(r.commands_per_run, 1)
        out[f"{name}_redis_ms"] = round(r.redis_ms_per_run, 2)
        out[f"{name}_cpu_ms_p50"] = round(r.cpu_p50, 2)
    # Headline aliases.
    out["failed_page_ms_p50"] = out["big_failed_p1_s25_ms_p50"]
    out["failed_page_ms_p95"] = out["big_failed_p1_s25_ms_p95"]
    out["failed_page_commands"] = out["big_failed_p1_s25_commands"]
    out["job_list_ms_p95_max"] = round(max(results[k].p95 for k in page_keys), 2)
    out["snapshot_target_met"] = results["snapshot"].p50 < TARGET_SNAPSHOT_MS
    out["snapshot_target_met_p95"] = results["snapshot"].p95 < TARGET_SNAPSHOT_MS
    out["job_list_target_met"] = all(results[k].p50 < TARGET_LIST_MS for k in page_keys)
    out["job_list_target_met_p95"] = all(results[k].p95 < TARGET_LIST_MS for k in page_keys)

    out["overview_target_met"] = results["overview"].p50 < TARGET_OVERVIEW_MS

    def verdict(p50_ok, p95_ok):
        return "met" if p95_ok else ("met at p50, MISSED at p95" if p50_ok else "MISSED")

    log(
        f"targets: snapshot of {len(queues)} queues < {TARGET_SNAPSHOT_MS} ms: "
        f"{verdict(out['snapshot_target_met'], out['snapshot_target_met_p95'])}; "
        f"every job-list page < {TARGET_LIST_MS} ms: "
        f"{verdict(out['job_list_target_met'], out['job_list_target_met_p95'])}"
    )
    log(
        f"overview render p50 {results['overview'].p50:.1f} ms (target <= {TARGET_OVERVIEW_MS} ms: "
        f"{'met' if out['overview_target_met'] else 'MISSED'}) beside the snapshot p50 {results['snapshot'].p50:.1f} ms"
    )
    print(json.dumps(out, sort_keys=False), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
