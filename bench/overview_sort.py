"""The overview's first page at 10,000 queues, sorted by name and by a figure, timed in-process.

    .venv/bin/python bench/overview_sort.py [--queues 10000] [--jobs 100000] [--runs 20]
                                            [--profile-top 30] [--python-collector]

A micro-benchmark of one request path, without the monitor running: what ``bench/many_queues.py``
measures among much else (its "Overview, first page, by failed"), here alone, so a change to
the overview's sort can be measured in a minute on a quiet or a busy machine.

What it starts (loopback only, free ports, both stopped at the end, also on Ctrl-C/SIGTERM): two
private ``redis-server``s, the monitored one and the dashboard Redis
(``bench/snapshot_bench.py`` ``PrivateRedis``).

1. Loads ``--queues`` queues holding ``--jobs`` jobs in BullMQ 6's layout (the loader of
   ``bench/snapshot_bench.py``: one queue holds a quarter of the jobs, the rest log-normal, so
   most queues have few or no failed jobs and the failed sort has many ties).
2. Publishes in the dashboard Redis what a leading monitor publishes, with the monitor's own
   writers: the queue list (``dash_redis.publish_queue_list``) and the state and order documents
   (``dashboard.monitor.state_document.publish_state`` over a ``QueueState`` per queue, its
   signals built from an exact snapshot of every queue as a refresh builds them; workers known
   for every other queue).
3. Times the overview view through Django's test ``Client``, with the collector tuned as the
   shipped server tunes it (``dashboard.serve.tune_collector``; ``--python-collector``: Python's
   defaults) (a logged-in user with a global role,
   SQLite in a temp dir, the default discovery TTL): the first page sorted by name, and sorted by
   failed (descending), ``--runs`` requests each after one warm-up; wall time and this
   process's CPU time per request (p50, p95, max).
4. Profiles one request sorted by failed with cProfile (cumulative and own time, to stderr), and
   times the order's parts alone: reading and parsing the order document, and ordering the rows.

Progress and the profile go to stderr; ONE JSON object with every figure is the last line of
stdout. Goal: the page sorted by failed within 200 ms p50 (``docs/benchmarks.md``).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import io
import json
import os
import pstats
import signal
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from bench.benchlib import percentile  # noqa: E402
from bench.snapshot_bench import PrivateRedis, load, log, plan_queues  # noqa: E402

REQUESTS = {"by_name": "/?sort=name", "by_failed": "/?sort=failed&dir=desc"}
ROW_MARKER = b'<tr id="row-'  # one per queue row of the page


def setup_django(monitored: PrivateRedis, dash: PrivateRedis, tmpdir: str):
    """Django in this process, pointed at the two private servers only, and a logged-in client."""
    for k in list(os.environ):
        if k.startswith("QUEUEWATCH_") or k in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE"):
            del os.environ[k]
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "dashboard.settings",
            "QUEUEWATCH_SECRET_KEY": "bench-" + "x" * 40,
            "QUEUEWATCH_REDIS_URL": monitored.url,
            "QUEUEWATCH_DASHBOARD_REDIS_URL": dash.url,
            "DATABASE_URL": f"sqlite:///{os.path.join(tmpdir, 'bench.sqlite3')}",
            "QUEUEWATCH_LOG_LEVEL": "WARNING",
            "QUEUEWATCH_INSECURE_DEV": "1",
        }
    )
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench", password="bench-password-123")  # a viewer of every queue
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    return client


def publish_as_monitor() -> int:
    """What a leading monitor publishes, written by its own code: the queue list, then the state
    and order documents from every queue's signals. Returns the number of queues published."""
    from dashboard.connections.registry import get_registry
    from dashboard.core import dash_redis
    from dashboard.live.rates import build_signals
    from dashboard.monitor.queue_state import QueueState, now_ms
    from dashboard.monitor.state_document import publish_state

    source = get_registry().source("default")
    dash = dash_redis.dashboard_redis()
    with source.errors():
        queues = sorted(source.discover())
    dash_redis.publish_queue_list(dash, "default", queues)
    with source.errors():
        snaps = source.snapshots(queues)
    at = now_ms()
    states = {}
    for i, snap in enumerate(snaps):
        st = QueueState(snapshot=snap)
        st.signals = build_signals(snap, st.series, now_ms=at, workers=(i % 3) if i % 2 == 0 else None)
        states[snap.queue] = st
    publish_state(dash, states=states, connection_names=["default"], down={}, monitor_name="bench")
    return len(states)


class GcTimer:
    """The garbage collector's collections (by generation) and the time they took, from
    ``gc.callbacks``: a request that allocates many containers pays for collections of the
    whole heap, which cProfile does not show."""

    def __init__(self) -> None:
        self.collections = [0, 0, 0]
        self.seconds = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started
            self.collections[info["generation"]] += 1

    def __enter__(self) -> GcTimer:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc) -> None:
        gc.callbacks.remove(self)


def timed(client, path: str, runs: int) -> dict:
    """``runs`` requests after one warm-up: wall and CPU time of each, the garbage collector's
    share, and the rows shown."""
    body = client.get(path).content
    walls, cpus = [], []
    with GcTimer() as collector:
        for _ in range(runs):
            c, t = time.process_time(), time.perf_counter()
            response = client.get(path)
            walls.append((time.perf_counter() - t) * 1000)
            cpus.append((time.process_time() - c) * 1000)
            if response.status_code != 200:
                raise RuntimeError(f"{path} answered {response.status_code}")
            body = response.content
    return {
        "p50_ms": round(statistics.median(walls), 1),
        "p95_ms": round(percentile(walls, 95) or 0, 1),
        "max_ms": round(max(walls), 1),
        "cpu_p50_ms": round(statistics.median(cpus), 1),
        "gc_ms_per_request": round(collector.seconds * 1000 / runs, 1),
        "gc_collections_per_request": [round(n / runs, 2) for n in collector.collections],
        "rows": body.count(ROW_MARKER),
        "bytes": len(body),
    }


def first_rows(client, path: str, n: int = 5) -> list[str]:
    """The queue names of the page's first rows, in order (to compare runs of the benchmark)."""
    import re

    html = client.get(path).content.decode()
    return re.findall(r'<bdi class="queue-name"><a href="[^"]*">([^<]+)</a>', html)[:n]


def profile(client, path: str, top: int) -> list[dict]:
    """cProfile of one request (to stderr); the functions with the most own time, for the JSON."""
    pr = cProfile.Profile()
    pr.enable()
    client.get(path)
    pr.disable()
    for order, count in (("cumulative", top), ("tottime", top)):
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats(order).print_stats(count)
        log(f"\n===== cProfile: GET {path} ({order}, top {count}) =====\n{s.getvalue()}")
    stats = pstats.Stats(pr).stats  # type: ignore[attr-defined]
    rows = sorted(stats.items(), key=lambda kv: kv[1][2], reverse=True)[:10]
    return [
        {
            "function": f"{os.path.relpath(f, REPO) if f.startswith(REPO) else f}:{line}({name})",
            "own_ms": round(t * 1000, 1),
        }
        for (f, line, name), (_cc, _nc, t, _ct, _callers) in rows
    ]


def ordering(runs: int) -> dict:
    """The order alone, outside a request: reading and parsing the order document, and
    ``selectors.ordered_overview`` for each sort (the page's snapshots read too); and a digest of
    every row's place in each order, to tell that a change kept what the pages show."""
    from django.contrib.auth import get_user_model

    from dashboard.browse import selectors

    user = get_user_model().objects.get(username="bench")
    out: dict = {}
    read = []
    for _ in range(runs):
        t = time.perf_counter()
        selectors.published_order()
        read.append((time.perf_counter() - t) * 1000)
    out["read_order_p50_ms"] = round(statistics.median(read), 1)
    for label, sort, descending in (("by_name", "name", False), ("by_failed", "failed", True)):
        everything: list = []

        def pick(ordered, everything=everything):
            everything[:] = [getattr(row, "queue", row).name for rows in ordered for row in rows]  # queues or snapshots
            return [rows[:100] for rows in ordered]

        took = []
        for _ in range(runs):
            t = time.perf_counter()
            selectors.ordered_overview(user, sort=sort, descending=descending, query="", pick=pick)
            took.append((time.perf_counter() - t) * 1000)
        out[f"ordered_overview_{label}_p50_ms"] = round(statistics.median(took), 1)
        out[f"order_{label}_sha1"] = hashlib.sha1("\n".join(everything).encode()).hexdigest()
    return out


def run(args, monitored: PrivateRedis, dash: PrivateRedis) -> dict:
    plans = plan_queues(args.queues, args.jobs, args.seed)
    log(f"plan: {len(plans)} queues, {sum(p.jobs for p in plans):,} jobs")
    load(monitored, plans, events_per_queue=args.events)
    client = setup_django(monitored, dash, monitored.tmpdir)
    t = time.perf_counter()
    published = publish_as_monitor()
    took = time.perf_counter() - t
    log(f"published the queue list and the state and order documents of {published:,} queues in {took:.1f}s")
    order_bytes = len(dash.client().get("queuewatch:state:order") or b"")
    if args.server_collector:
        from dashboard import serve

        serve.tune_collector()  # as the shipped server does before serving

    figures: dict = {}
    for label, path in REQUESTS.items():
        figures[label] = timed(client, path, args.runs)
        figures[label]["first_rows"] = first_rows(client, path)
        got = figures[label]
        log(
            f"overview {label}: p50 {got['p50_ms']} ms (CPU {got['cpu_p50_ms']} ms), p95 {got['p95_ms']} ms, "
            f"GC {got['gc_ms_per_request']} ms {got['gc_collections_per_request']}, {got['rows']} rows, "
            f"first {got['first_rows']}"
        )
    figures["ordering"] = ordering(args.runs)
    log(f"ordering alone: {figures['ordering']}")
    figures["profile_by_failed_top_own"] = profile(client, REQUESTS["by_failed"], args.profile_top)
    return {
        "queues": published,
        "jobs": args.jobs,
        "runs": args.runs,
        "order_document_bytes": order_bytes,
        "collector": {"thresholds": list(gc.get_threshold()), "frozen": gc.get_freeze_count()},
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "overview": figures,
        "goal_by_failed_p50_le_200ms": figures["by_failed"]["p50_ms"] <= 200,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queues", type=int, default=10_000)
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=20, help="timed requests per sort (default 20)")
    ap.add_argument("--events", type=int, default=2, help="events stream entries per queue (default 2)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--profile-top", type=int, default=30)
    ap.add_argument(
        "--python-collector",
        dest="server_collector",
        action="store_false",
        help="time with Python's default collector, not the shipped server's (dashboard.serve.tune_collector)",
    )
    args = ap.parse_args()

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    monitored, dash = PrivateRedis(), PrivateRedis()
    try:
        monitored.start()
        dash.start()
        log(f"monitored redis-server on :{monitored.port}, dashboard redis-server on :{dash.port}")
        result = run(args, monitored, dash)
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    finally:
        dash.stop()
        monitored.stop()
        log("private redis-servers stopped, temp dirs removed")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
