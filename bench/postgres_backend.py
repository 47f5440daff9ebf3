"""Queuewatch on BullMQ's PostgreSQL backend at size: 1,000 queues and 1,000,000 job rows.

    .venv/bin/python bench/postgres_backend.py [--queues 1000] [--rows 1000000] [--retry-jobs 100000]
                                               [--probes 150] [--window 30] [--tabs 50]
                                               [--parts live,retry]

What it starts (loopback only, free ports, all stopped at the end, also on Ctrl-C/timeout): a
private PostgreSQL 15 (``tests/support/postgres.py``'s throwaway cluster, plus
``pg_stat_statements``), a private dashboard ``redis-server``, Queuewatch (uvicorn + ``manage.py
monitor``) monitoring only the PostgreSQL connection, and real Node BullMQ 6.7 on PostgreSQL
(``bench/node/pg_load.mjs``, with tests/node's packages).

The data (how it is made)
-------------------------
BullMQ migrates the schema itself (``migrate: true``). Then, for ``--queues`` queues:

* 2 queues of ``--retry-jobs`` failed jobs each (``retry-bullmq``, ``retry-queuewatch``);
* every other queue gets 50 waiting jobs through BullMQ's own bulk add SQL (``SELECT
  add_jobs_bulk(queue, entries)``, the function ``Queue.addBulk`` calls: ids from the queue's
  id sequence, ``seq`` from ``job_seq``, ``added``/``waiting`` events), and its completed and
  failed jobs (3 completed to 1 failed, up to ``--rows`` in all) are written with ``COPY``
  straight into ``job``: BullMQ has no SQL that makes a finished job without running it, and
  running a million jobs through workers would take this machine an hour. The copied rows carry
  what a finished row carries (``finished_at_ms`` over the last 24 h, ``attempts_made``,
  ``failed_reason``, a stack trace, a return value) under custom ids (``c-<n>``, ``f-<n>``) and
  ``seq`` values past ``job_seq``, which is then moved beyond them. ``ANALYZE`` follows.

What is measured
----------------
1. ``overview_snapshot_ms``: ``PostgresSource.snapshots()`` of every queue (the monitor's exact
   read, and the overview's when sorted by a count) on a database where nothing was committed
   between the runs, so the completed and failed counts are kept from the previous read
   (``queues.postgres.finished_reuse``); ``overview_snapshot_after_commit_ms``: the same read
   when a transaction was committed just before it (``SELECT pg_current_xact_id()`` on another
   connection, outside the timing), so every count is read again, the finished ones included:
   the cost of an exact read of 1,000,000 rows, what a snapshot costs while anything writes;
   ``overview_page_snapshot_ms`` (and ``..._after_commit_ms``): of the 100 queues one overview
   page shows (sorted by name, the default), and ``discover()``; p50/p95 of 20 runs each. Goal
   p95 <= 200 ms.
2. ``failed_page_ms``: the queue page's first 25 failed jobs (``jobs.page``) of a 100,000-failed
   queue and of an ordinary queue, p50/p95 of 50 runs; page 100 of the big queue is reported too.
   Goal p95 <= 100 ms.
3. ``event_to_browser_ms``: with 100 jobs/s of other work (10 queues, every 5th job failing), a job
   of queue ``latency`` fails every 100-200 ms; a logged-in websocket on that queue's failed list
   records when the row arrives. ``event`` time is the ``failed`` row's ``created_at_ms`` in
   BullMQ's ``event`` table (PostgreSQL's clock, the same machine's). Goal p95 <= 150 ms.
4. ``statements_per_s``: statements Queuewatch's processes sent, per second, over ``--window``
   seconds with 1 and then ``--tabs`` open tabs (half overviews, half failed lists: of the load
   queues, or with ``--tabs-on latency`` all on the first tab's own list, which separates the cost
   of tabs from that of distinct lists to keep current), the workload running throughout.
   Queuewatch connects as its own role (``queuewatch``), so ``pg_stat_statements`` (top-level
   statements, ``calls``) counts exactly its statements and none of BullMQ's. Flat means the tabs add nothing.
5. ``retry``: BullMQ's own ``Queue.retryJobs({state: 'failed', count: 1000})`` (SQL
   ``retry_jobs``, counters reset) on one queue of ``--retry-jobs`` failed jobs, against
   Queuewatch's bulk retry on the other: the engine a "retry, counters reset" task runs
   (``source.bulk.run``, unpaced, the whole failed state by filter, batches of 1,000 in one
   transaction each, BullMQ's ``reprocess_job`` per job, the crash journal saved per batch in
   an in-memory store). Goal: Queuewatch at least 0.5x BullMQ's speed.

Every phase records the machine's 1-minute load average: on a shared machine the figures move
with it.

Prints progress to stderr and ONE JSON object with every figure as the last line of stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg  # noqa: E402
from benchlib import (  # noqa: E402
    BENCH_NODE,
    Procs,
    QueuewatchApp,
    RedisServer,
    Tab,
    code_version,
    install_time_limit,
    log,
    overview_tab,
    percentile,
    run_bench,
    timed_get,
)

from queues.bulk.plan import BulkPlan  # noqa: E402
from queues.bulk.progress import MemoryStore  # noqa: E402
from queues.keys import QueueRef  # noqa: E402
from queues.redact import Redactor  # noqa: E402
from queues.selection import JobFilter  # noqa: E402
from queues.sources import ConnectionSpec, source_for  # noqa: E402
from tests.support.postgres import PostgresServer  # noqa: E402

SCHEMA = "bullmq"
DB = "bench"
ROLE = "queuewatch"
JOB_ID_RE = re.compile(r'data-job-id="([^"]+)"')
COPY_COLUMNS = (
    "queue, id, seq, name, state, data, opts, max_attempts, attempts_made, attempts_started,"
    " return_value, failed_reason, stacktrace, added_at_ms, processed_at_ms, finished_at_ms, processed_by"
)


class StatsPostgres(PostgresServer):
    """The tests' throwaway cluster, with ``pg_stat_statements`` loaded."""

    def _start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.data}"
            " -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
            " -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=top"
            " -c shared_buffers=256MB"
        )
        from tests.support.postgres import postgres_binary

        proc = self._run(postgres_binary("pg_ctl"), "-D", self.data, "-l", self.log, "-o", options, "-w", "start")
        if proc.returncode != 0:
            raise RuntimeError(f"PostgreSQL did not start: {proc.stderr[-1500:]}")


def summarize(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50": round(percentile(values, 50), 2),
        "p95": round(percentile(values, 95), 2),
        "max": round(max(values), 2),
    }


def timed(fn, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


class Bench:
    def __init__(self, args):
        self.args = args
        self.tmp = Path(tempfile.mkdtemp(prefix="qw-bench-pg-"))
        self.procs = Procs(self.tmp)
        self.pg: StatsPostgres | None = None
        self.redis: RedisServer | None = None
        self.arrived: dict[str, float] = {}

    # --- the data -------------------------------------------------------------------------------

    def node(self, *args: str, timeout: float = 600) -> dict:
        proc = self.procs.start(f"node-{args[0]}", ["node", "pg_load.mjs", *args], cwd=BENCH_NODE, json_stdout=True)
        key = {"migrate": "migrated", "retry": "retry"}[args[0]]
        try:
            return proc.expect(key, timeout)
        finally:
            self.procs.stop(proc)

    def make_data(self, url: str) -> dict:
        a = self.args
        self.node("migrate", url)
        now = int(time.time() * 1000)
        regular = [f"q{i:04d}" for i in range(a.queues - 2)]
        big = ["retry-bullmq", "retry-queuewatch"]
        t0 = time.monotonic()
        with psycopg.connect(url, autocommit=False) as conn:
            conn.execute(f"SET search_path = {SCHEMA}")
            # BullMQ's own bulk add: 50 waiting jobs per ordinary queue.
            for start in range(0, len(regular), 50):
                for name in regular[start : start + 50]:
                    entries = [
                        {
                            "name": "email",
                            "data": json.dumps({"to": f"user{n}@example.com", "n": n}),
                            "opts": {"attempts": 3},
                            "timestamp": now - 1000 * (50 - n),
                            "attempts": 3,
                        }
                        for n in range(50)
                    ]
                    conn.execute("SELECT count(*) FROM add_jobs_bulk(%s, %s::jsonb)", (name, json.dumps(entries)))
                conn.commit()
            added = time.monotonic() - t0
            waiting_rows = 50 * len(regular)
            finished_left = a.rows - waiting_rows - len(big) * a.retry_jobs
            per_queue = max(0, finished_left // len(regular))
            extra = max(0, finished_left - per_queue * len(regular))
            seq = int(conn.execute("SELECT nextval('job_seq')").fetchone()[0]) + 1
            rnd = random.Random(7)
            copied = 0
            t1 = time.monotonic()
            with conn.cursor().copy(f"COPY job ({COPY_COLUMNS}) FROM STDIN") as copy:

                def row(queue: str, n: int, failed: bool):
                    nonlocal seq, copied
                    seq += 1
                    copied += 1
                    finished = now - rnd.randrange(86_400_000)
                    return (
                        queue,
                        f"{'f' if failed else 'c'}-{n}",
                        seq,
                        "email",
                        "failed" if failed else "completed",
                        json.dumps({"to": f"user{n}@example.com", "n": n}),
                        '{"attempts": 3}',
                        3,
                        3 if failed else 1,
                        3 if failed else 1,
                        None if failed else '{"sent": true}',
                        f"SMTP 451 temporary failure for user{n % 97}" if failed else None,
                        json.dumps([f"Error: SMTP 451\n    at send (mailer.js:{n % 300}:7)"]) if failed else None,
                        finished - 5000,
                        finished - 200,
                        finished,
                        "worker-1",
                    )

                for i, name in enumerate(regular):
                    count = per_queue + (1 if i < extra else 0)
                    for n in range(count):
                        copy.write_row(row(name, n, failed=n % 4 == 3))
                for name in big:
                    for n in range(a.retry_jobs):
                        copy.write_row(row(name, n, failed=True))
            conn.execute("SELECT setval('job_seq', %s)", (seq + 1,))
            conn.commit()
            copy_s = time.monotonic() - t1
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"VACUUM ANALYZE {SCHEMA}.job")
            total = conn.execute(f"SELECT count(*) FROM {SCHEMA}.job").fetchone()[0]
            events = conn.execute(f"SELECT count(*) FROM {SCHEMA}.event").fetchone()[0]
        log(
            f"data: {total} job rows in {a.queues} queues ({waiting_rows} via add_jobs_bulk in {added:.1f} s, "
            f"{copied} by COPY in {copy_s:.1f} s), {events} event rows"
        )
        return {
            "job_rows": int(total),
            "queues": a.queues,
            "added_by_add_jobs_bulk": waiting_rows,
            "copied": copied,
            "event_rows": int(events),
            "add_s": round(added, 1),
            "copy_s": round(copy_s, 1),
        }

    def make_role(self, url: str) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            conn.execute(f"CREATE ROLE {ROLE} LOGIN")
            conn.execute(f"GRANT pg_read_all_stats TO {ROLE}")
            conn.execute(f"GRANT USAGE ON SCHEMA {SCHEMA} TO {ROLE}")
            conn.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {SCHEMA} TO {ROLE}")
            conn.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA {SCHEMA} TO {ROLE}")

    # --- 1 and 2: reads in this process ---------------------------------------------------------

    def reads(self, url: str) -> dict:
        source = source_for(ConnectionSpec("pg", url, (SCHEMA,)))
        try:
            queues = source.discover()
            source.snapshots(queues)  # warm
            discover = timed(source.discover, 20)
            snapshots = timed(lambda: source.snapshots(queues), 20)
            page_of_overview = timed(lambda: source.snapshots(queues[:100]), 20)
            with psycopg.connect(url, autocommit=True) as writer:

                def after_commit(read):
                    def run():
                        writer.execute("SELECT pg_current_xact_id()")  # a commit: nothing kept is proven
                        t0 = time.perf_counter()
                        read()
                        return (time.perf_counter() - t0) * 1000

                    return [run() for _ in range(20)]

                snapshots_after_commit = after_commit(lambda: source.snapshots(queues))
                page_after_commit = after_commit(lambda: source.snapshots(queues[:100]))
            redactor = Redactor()
            big, small = QueueRef("pg", SCHEMA, "retry-queuewatch"), QueueRef("pg", SCHEMA, "q0001")

            def page(q, n=1):
                return lambda: source.jobs.page(
                    q, "failed", page=n, page_size=25, name_filter="", scan_limit=1000, redactor=redactor
                )

            shown = page(big)()
            assert len(shown.jobs) == 25 and shown.total == self.args.retry_jobs, (len(shown.jobs), shown.total)
            res = {
                "queues_discovered": len(queues),
                "discover_ms": summarize(discover),
                "overview_snapshot_ms": summarize(snapshots),
                "overview_snapshot_after_commit_ms": summarize(snapshots_after_commit),
                "overview_page_snapshot_ms": summarize(page_of_overview),
                "overview_page_snapshot_after_commit_ms": summarize(page_after_commit),
                "failed_page_ms": {
                    "100k_failed_page_1": summarize(timed(page(big), 50)),
                    "100k_failed_page_100": summarize(timed(page(big, 100), 20)),
                    "ordinary_queue_page_1": summarize(timed(page(small), 50)),
                },
            }
        finally:
            source.close()
        res["loadavg_1m"] = round(os.getloadavg()[0], 2)
        log(
            f"reads: snapshot of {len(queues)} queues p95 {res['overview_snapshot_ms']['p95']} ms "
            f"({res['overview_snapshot_after_commit_ms']['p95']} ms after a commit); "
            f"failed page p95 {res['failed_page_ms']['100k_failed_page_1']['p95']} ms"
        )
        return res

    # --- 3 and 4: the running app ---------------------------------------------------------------

    def statements(self) -> int:
        with self.pg.connect(DB) as conn:
            row = conn.execute(
                "SELECT COALESCE(sum(calls), 0) FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid"
                " WHERE r.rolname = %s",
                (ROLE,),
            ).fetchone()
        return int(row[0])

    async def window(self, label: str) -> dict:
        s0, t0 = self.statements(), time.monotonic()
        await asyncio.sleep(self.args.window)
        s1, t1 = self.statements(), time.monotonic()
        rate = (s1 - s0) / (t1 - t0)
        log(f"{label}: {rate:.1f} statements/s from Queuewatch")
        return {
            "statements": s1 - s0,
            "seconds": round(t1 - t0, 1),
            "per_s": round(rate, 1),
            "loadavg_1m": round(os.getloadavg()[0], 2),
        }

    def on_message(self, tab, html: str, now: float) -> None:
        for job_id in JOB_ID_RE.findall(html):
            self.arrived.setdefault(job_id, now * 1000)

    async def live(self, url: str) -> dict:
        a = self.args
        qw_url = url.replace("postgres@", f"{ROLE}@")
        self.redis = RedisServer(self.procs, "redis-dashboard")
        app = QueuewatchApp(
            self.procs,
            monitored_url=self.redis.url(),
            dashboard_url=self.redis.url(),
            workdir=self.tmp,
            tick_ms=None,
            extra_env={
                "QUEUEWATCH_REDIS_URL": None,
                "QUEUEWATCH_PREFIXES": None,
                "QUEUEWATCH_CONNECTIONS": "pg",
                "QUEUEWATCH_URL_PG": qw_url,
                "QUEUEWATCH_PREFIXES_PG": SCHEMA,
            },
        )
        cookie = app.session_cookie()
        app.start_monitor()
        load = self.procs.start(
            "pg-load",
            ["node", "pg_load.mjs", "load", url, "--rate", str(a.rate), "--queues", "10"],
            cwd=BENCH_NODE,
            json_stdout=True,
        )
        ready = await asyncio.to_thread(load.expect, "ready", 120)
        tab = Tab(app.url, f"/ws/queue/pg/{SCHEMA}/latency/?state=failed&list=1", cookie, on_message=self.on_message)
        deadline = time.monotonic() + 90
        while True:  # the monitor discovers the new queues within its discovery period
            try:
                await tab.connect()
                break
            except Exception as exc:
                if time.monotonic() > deadline:
                    raise RuntimeError("the latency queue's page never opened:\n" + app.monitor.tail()) from exc
                await asyncio.sleep(1)
        while not self.arrived:
            if time.monotonic() > deadline:
                raise RuntimeError("no failed list arrived:\n" + app.monitor.tail())
            await asyncio.sleep(0.2)
        await asyncio.sleep(5)
        one_tab = await self.window("1 tab")
        before = set(self.arrived)
        load.send_line("go")
        thrown: dict[str, float] = {}
        deadline = time.monotonic() + a.probes * 0.15 * 4
        while len(thrown) < a.probes and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
            for other in load.other:
                if "thrown" in other:
                    thrown[other["thrown"]["id"]] = other["thrown"]["ms"]
            load.other.clear()
        load.send_line("stop")
        summary = (await asyncio.to_thread(load.expect, "summary", 60))["summary"]
        for other in load.other:
            if "thrown" in other:
                thrown[other["thrown"]["id"]] = other["thrown"]["ms"]
        load.other.clear()
        await asyncio.sleep(2)
        with self.pg.connect(DB) as conn:
            event_ms = {
                job_id: int(ms)
                for job_id, ms in conn.execute(
                    f"SELECT data ->> 'jobId', created_at_ms FROM {SCHEMA}.event WHERE queue = 'latency'"
                    " AND event = 'failed'"
                ).fetchall()
            }
        e2e, pipeline, missing = [], [], []
        for job_id, t_thrown in thrown.items():
            t_arr = self.arrived.get(job_id)
            if t_arr is None or job_id in before:
                missing.append(job_id)
                continue
            e2e.append(t_arr - t_thrown)
            if job_id in event_ms:
                pipeline.append(t_arr - event_ms[job_id])
        latency = {
            "probes": len(thrown),
            "missing": len(missing),
            "event_to_browser_ms": summarize(pipeline),
            "thrown_to_browser_ms": summarize(e2e),
            "workload": summary,
            "loadavg_1m": round(os.getloadavg()[0], 2),
            "goal_p95_le_150ms": bool(pipeline) and percentile(pipeline, 95) <= 150 and not missing,
        }
        log(f"latency: event->browser p95 {latency['event_to_browser_ms'].get('p95')} ms over {len(pipeline)} probes")
        tabs = [tab]
        for i in range(a.tabs - 1):
            if i % 2 == 0:
                listed = "latency" if a.tabs_on == "latency" else ready["queues"][(i // 2) % 10]
                extra = Tab(app.url, f"/ws/queue/pg/{SCHEMA}/{listed}/?state=failed&list=1", cookie)
            else:  # names the first overview page's rows, as the page's script does
                extra = await asyncio.to_thread(overview_tab, app.url, cookie)
            await extra.connect()
            tabs.append(extra)
        await asyncio.sleep(5)
        many_tabs = await self.window(f"{a.tabs} tabs")
        for t in tabs:
            await t.close()
        pages = await asyncio.to_thread(self.overview_pages, app.url, cookie)
        load.proc.stdin.close()
        self.procs.stop(load)
        app.stop_monitor()
        return {
            "latency": latency,
            "statements_per_s": {"1_tab": one_tab, f"{a.tabs}_tabs": many_tabs},
            "overview_page_ms": pages,
        }

    def overview_pages(self, base: str, cookie: str) -> dict:
        """The overview as a user gets it, with the monitor running and the workload on: sorted
        by a count the order comes from the figures the monitor published, and only the page's
        100 queues are read from PostgreSQL."""
        out = {}
        for label, path in (("by_name", "/?sort=name"), ("by_failed", "/?sort=failed&dir=desc")):
            times = []
            for _ in range(20):
                took, _size, status = timed_get(base + path, cookie=cookie)
                if status != 200:
                    raise RuntimeError(f"{path} answered {status}")
                times.append(took * 1000)
            out[label] = summarize(times)
            log(f"overview page {label}: p50 {out[label].get('p50')} ms, p95 {out[label].get('p95')} ms")
        out["loadavg_1m"] = round(os.getloadavg()[0], 2)
        return out

    # --- 5: retries -----------------------------------------------------------------------------

    def retries(self, url: str) -> dict:
        a = self.args
        bullmq = self.node("retry", url, "retry-bullmq", timeout=1800)["retry"]
        log(f"retry: BullMQ retryJobs moved {a.retry_jobs} jobs in {bullmq['ms']:.0f} ms")
        source = source_for(ConnectionSpec("pg", url, (SCHEMA,)))
        queue = QueueRef("pg", SCHEMA, "retry-queuewatch")
        plan = BulkPlan(
            queue=queue,
            action="retry",
            before_ms=int(time.time() * 1000) + 1,
            filt=JobFilter(state="failed"),
            rate=None,
            reset_counters=True,
        )
        try:
            t0 = time.perf_counter()
            progress = source.bulk.run(
                plan=plan,
                store=MemoryStore(),
                should_cancel=lambda: False,
                on_progress=lambda p: None,
                count_limit=None,
            )
            ours_ms = (time.perf_counter() - t0) * 1000
            with psycopg.connect(url) as conn:
                left = conn.execute(
                    f"SELECT count(*) FILTER (WHERE state = 'waiting'), count(*) FILTER (WHERE state = 'waiting'"
                    f" AND attempts_made <> 0) FROM {SCHEMA}.job WHERE queue = %s",
                    (queue.name,),
                ).fetchone()
        finally:
            source.close()
        res = {
            "jobs": a.retry_jobs,
            "bullmq_retry_jobs_ms": round(bullmq["ms"]),
            "bullmq_counts": {"before": bullmq["before"], "after": bullmq["after"]},
            "queuewatch_path": "bulk task engine (source.bulk.run), unpaced, filter on the failed state",
            "queuewatch_ms": round(ours_ms),
            "queuewatch_progress": {
                "state": progress.state,
                "moved": progress.moved,
                "skipped": progress.skipped,
                "failed": progress.failed,
            },
            "queuewatch_retried_waiting": int(left[0]),
            "queuewatch_counters_not_reset": int(left[1]),
            "speed_vs_bullmq": round(bullmq["ms"] / ours_ms, 3) if ours_ms else None,
            "loadavg_1m": round(os.getloadavg()[0], 2),
        }
        res["goal_ge_0_5x"] = bool(res["speed_vs_bullmq"] and res["speed_vs_bullmq"] >= 0.5)
        speed = res["speed_vs_bullmq"]
        log(f"retry: Queuewatch bulk retry moved {progress.moved} jobs in {ours_ms:.0f} ms ({speed}x BullMQ)")
        return res

    async def run(self) -> dict:
        self.pg = StatsPostgres()
        url = self.pg.create_database(DB)
        data = self.make_data(url)
        self.make_role(url)
        parts = self.args.parts
        reads = self.reads(url)
        live = await self.live(url) if "live" in parts else None
        retry = await asyncio.to_thread(self.retries, url) if "retry" in parts else None
        return {
            "bench": "postgres_backend",
            "code": code_version(None),
            "config": {
                k: sorted(v) if isinstance(v, set) else v for k, v in vars(self.args).items() if k != "time_limit"
            },
            "data": data,
            **reads,
            **(live or {}),
            "retry": retry,
            "goals": {
                "overview_snapshot_p95_le_200ms": reads["overview_snapshot_ms"]["p95"] <= 200,
                "overview_snapshot_after_commit_p95_le_200ms": reads["overview_snapshot_after_commit_ms"]["p95"] <= 200,
                "overview_page_snapshot_p95_le_200ms": reads["overview_page_snapshot_ms"]["p95"] <= 200,
                "failed_page_p95_le_100ms": reads["failed_page_ms"]["100k_failed_page_1"]["p95"] <= 100,
                "event_to_browser_p95_le_150ms": live["latency"]["goal_p95_le_150ms"] if live else None,
                "retry_ge_0_5x_bullmq": retry["goal_ge_0_5x"] if retry else None,
            },
        }

    def cleanup(self) -> None:
        self.procs.stop_all()
        if self.redis is not None:
            self.redis.cleanup()
        if self.pg is not None:
            self.pg.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queues", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--retry-jobs", type=int, default=100_000, help="failed jobs in each of the two retry queues")
    ap.add_argument("--rate", type=int, default=100, help="jobs/s of the background workload")
    ap.add_argument("--probes", type=int, default=150, help="about this many latency probes (one per 100-200 ms)")
    ap.add_argument("--window", type=float, default=30, help="seconds of each statements-per-second window")
    ap.add_argument("--tabs", type=int, default=50)
    ap.add_argument(
        "--tabs-on",
        choices=("load", "latency"),
        default="load",
        help="the extra tabs' failed lists: those of the 10 load queues (default), or all the first tab's own list",
    )
    ap.add_argument(
        "--parts", default="live,retry", help="besides the reads: live, retry (comma-separated; '' for none)"
    )
    ap.add_argument("--time-limit", type=float, default=2400)
    args = ap.parse_args()
    args.parts = {p for p in args.parts.split(",") if p}
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        raise SystemExit("PostgreSQL refuses to run as root and runuser is missing")
    install_time_limit(args.time_limit)
    return run_bench(Bench(args), show_logs_of=lambda name: name in ("monitor", "web", "pg-load"))


if __name__ == "__main__":
    sys.exit(main())
