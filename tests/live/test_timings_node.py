"""Wait and processing times against real Node BullMQ 6.7: jobs named `fast` (200 ms)
and `slow` (1 s), the first 15 of them waiting a known 1.5 s for a worker, measured by the
monitor from the events stream alone. Its percentiles are held to the events' own times (within
a bucket), and the events, job by job, to what BullMQ's job fields say (``processedOn -
timestamp``, ``finishedOn - processedOn``). The monitor is restarted while the workload runs:
every job is counted exactly once, jobs in flight across the restart included."""

from __future__ import annotations

import math
import subprocess

import pytest
from django.db.models import Sum
from django.urls import reverse
from django.utils import timezone

from dashboard.alerts.models import Alert, AlertRule
from dashboard.live import timing_points
from dashboard.live.models import JobTimingPoint
from queues.keys import QueueRef
from queues.timings import Histogram
from tests.support.live import monitor_thread
from tests.support.parallel import heavy_trial
from tests.support.servers import NODE_DIR, ensure_node_modules, finish, node_available, run_node
from tests.support.waiting import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.node,
    pytest.mark.slow,
    pytest.mark.skipif(not node_available(), reason="needs Node.js and npm"),
]

KNOWN_WAIT_MS = 1500
# The monitor times from stream ids (Redis' clock, when the add/moveToActive script ran);
# BullMQ's `timestamp`/`processedOn` are Node's clock before that command's round trip (an
# addBulk's MULTI). On a loaded machine that is a few ms: for waits of a few ms, 10 % is below
# it, so a 10 ms floor applies. Waits of a second are held to 10 %.
ABSOLUTE_SLACK_MS = 10


def nearest_rank(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


def timed_by_the_events_stream(client, name: str) -> dict[str, dict[str, int]]:
    """Each completed job's wait (``added`` → ``active``) and processing (``active`` →
    ``completed``) as BullMQ's scripts recorded them in the queue's events stream: entry ids, the
    time on Redis' clock when the script ran. (This workload has no delays and no retries.)"""
    ready: dict[str, int] = {}
    active: dict[str, int] = {}
    timed = {}
    for entry_id, fields in client.xrange(QueueRef("default", "bull", name).key("events")):
        ms = int(entry_id.split(b"-")[0])
        job = fields.get(b"jobId", b"").decode()
        event = fields[b"event"]
        if event in (b"added", b"waiting"):
            ready.setdefault(job, ms)
        elif event == b"active":
            active[job] = ms
        elif event == b"completed":
            timed[job] = {"wait_ms": active[job] - ready[job], "processing_ms": ms - active[job]}
    return timed


def stored(name: str, field: str) -> int:
    return JobTimingPoint.objects.filter(queue=name, resolution=60).aggregate(n=Sum(field))["n"] or 0


def stored_samples(name: str, kind: str) -> int:
    return sum(
        Histogram.from_json(getattr(r, f"{kind}_buckets")).count
        for r in JobTimingPoint.objects.filter(queue=name, resolution=60)
    )


@heavy_trial
def test_percentiles_match_bullmq_across_a_monitor_restart(live_setup, redis_url, settings, logged_in):
    name = "timed"
    settings.QUEUEWATCH_RECONCILE_MS = 600_000
    settings.QUEUEWATCH_ALERT_INTERVAL_S = 0.5
    # Part 2: a per-job-name p95 processing rule, evaluated by the monitor on its own figures.
    AlertRule.objects.create(
        name="slow jobs",
        kind="processing_p95",
        threshold=0.5,
        window_minutes=15,
        job_name="*",
        queue_glob=name,
        repeat_minutes=0,
    )
    run_node("truth.mjs", "counts", redis_url, name)  # the queue exists before the monitor starts
    ensure_node_modules()
    with monitor_thread(tick=0.3, name="timing-a", lock_ttl_ms=2000) as first:
        wait_for(lambda: name in {q.name for q in first.applied_cursors})
        workload = subprocess.Popen(
            ["node", "timings.mjs", redis_url, name, str(KNOWN_WAIT_MS), "12"],
            cwd=NODE_DIR,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert workload.stdout.readline().strip() == "STARTED"
        # Stop mid-run: fast jobs have finished, the slow ones of the first batch are in flight.
        wait_for(lambda: stored(name, "completed") >= 8, timeout=20)
    try:
        with monitor_thread(tick=0.3, name="timing-b", lock_ttl_ms=2000) as second:
            out, _ = finish(workload, timeout=90)
            truth = __import__("json").loads(out.strip().splitlines()[-1])["jobs"]
            assert len(truth) == 15 + 12 * 6
            wait_for(
                lambda: stored(name, "completed") >= len(truth) and stored_samples(name, "wait") >= len(truth),
                timeout=20,
            )
            assert second.tracker.clock.names_to_read == 0
            wait_for(lambda: Alert.objects.filter(item="slow", state=Alert.FIRING).exists(), timeout=10)
    finally:
        if workload.poll() is None:
            workload.kill()

    # Exactly once: every job's completion, processing time and wait, neither lost nor doubled.
    assert stored(name, "completed") == len(truth) and stored(name, "failed") == 0
    slow_alert = Alert.objects.get(item="slow")  # 1 s jobs above 0.5 s; 200 ms jobs never were
    assert slow_alert.value_last > 0.5 and slow_alert.summary.startswith("p95 processing time")
    assert not Alert.objects.filter(item="fast").exclude(value_last=0).exists()
    assert stored_samples(name, "processing") == len(truth)
    assert stored_samples(name, "wait") == len(truth)

    recorded = timed_by_the_events_stream(live_setup, name)
    assert set(recorded) == {j["id"] for j in truth}
    doc = timing_points.window_summary(QueueRef("default", "bull", name), "15m", now=timezone.now())
    assert set(doc["names"]) == {"fast", "slow"}
    for job_name in ("fast", "slow"):
        jobs = [j for j in truth if j["name"] == job_name]
        figures = doc["names"][job_name]
        assert figures["completed"] == len(jobs) and figures["attempt_failures"] == 0
        for kind in ("wait", "processing"):
            field = f"{kind}_ms"
            # BullMQ's two records of a job, its events and its hash fields, agree job by job; a
            # few may not on a loaded machine: a field is Node's time before its command waited
            # for a core and the round trip, the event Redis' when the script ran (CI once saw a
            # 200 ms job at 315 ms by its fields, about 230 ms by its events)...
            apart = [
                (j["id"], recorded[j["id"]][field], j[field])
                for j in jobs
                if abs(recorded[j["id"]][field] - j[field]) > max(0.10 * j[field], ABSOLUTE_SLACK_MS)
            ]
            assert len(apart) <= 0.10 * len(jobs), (job_name, kind, apart)
            # ...and the monitor's percentiles are the events' own, within a bucket (4.7 %).
            for p, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
                exact = nearest_rank([recorded[j["id"]][field] for j in jobs], q)
                measured = figures[field][p]
                assert abs(measured - exact) <= 0.05 * exact + 1, (job_name, kind, p, measured, exact)
    # The workload's sleeps and wait are floors (a loaded machine only adds to them, and the
    # figures above are held to BullMQ's own timestamps): each is measured at least, within a bucket.
    assert doc["names"]["slow"]["processing_ms"]["p50"] >= 0.9 * 1000
    assert doc["names"]["fast"]["processing_ms"]["p50"] >= 0.9 * 200
    assert doc["names"]["fast"]["wait_ms"]["p99"] >= 0.9 * KNOWN_WAIT_MS
    assert doc["all"]["completed"] == len(truth)

    api = logged_in.get(reverse("api_queue_timings", args=["default", "bull", name]) + "?window=15m")
    assert api.status_code == 200 and api.json() == doc
    assert logged_in.get(reverse("api_queue_timings", args=["default", "bull", name]) + "?window=2m").status_code == 400
    table = logged_in.get(reverse("queue_timings", args=["default", "bull", name]) + "?period=15m&sort=processing_p95")
    rows = table.content.decode()
    assert rows.index('data-job-name="slow"') < rows.index('data-job-name="fast"')  # slowest first


def test_a_burst_into_a_queue_created_just_before_is_timed_like_bullmq(live_setup, redis_url, monkeypatch):
    """40 jobs added at once to a queue created 3 s earlier, worked 3 s later by one worker of
    concurrency 4 (250 ms each), while a monitor runs: discovery meets the new queue within a
    pass (here 15 s, so after the work began), and the waits of the jobs that started before it
    followed the queue count all the same, so the percentiles are BullMQ's own."""
    from dashboard.monitor import discovering

    monkeypatch.setattr(discovering, "DISCOVERY_INTERVAL", 15.0)
    run_node("truth.mjs", "counts", redis_url, "anchor")  # met by the monitor's first pass
    ensure_node_modules()
    with monitor_thread(tick=0.3, name="burst") as monitor:
        wait_for(lambda: "anchor" in {q.name for q in monitor.applied_cursors})
        burst = subprocess.run(
            ["node", "burst.mjs", redis_url, "burst", "3000", "3000"],
            cwd=NODE_DIR,
            capture_output=True,
            text=True,
            timeout=90,
            check=True,
        )
        truth = [j["wait_ms"] for j in __import__("json").loads(burst.stdout.strip().splitlines()[-1])["jobs"]]
        assert len(truth) == 40
        wait_for(lambda: stored_samples("burst", "wait") >= 40, timeout=30)  # discovered, then flushed
    doc = timing_points.window_summary(QueueRef("default", "bull", "burst"), "15m", now=timezone.now())
    figures = doc["names"]["burst"]["wait_ms"]
    for p, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
        exact = nearest_rank(truth, q)
        assert abs(figures[p] - exact) <= max(0.10 * exact, ABSOLUTE_SLACK_MS), (p, figures[p], exact)
    assert stored_samples("burst", "wait") == 40  # each job's wait once
