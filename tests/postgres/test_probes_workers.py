"""The monitor's probes and the workers on BullMQ-on-PostgreSQL, against jobs and workers of real
Node BullMQ 6.7 (tests/node/pg_probes.mjs): stalled jobs are the active rows whose lock lapsed,
the attempt counters read as Node reports them, finished jobs are counted per minute, due
delayed jobs are counted, and the workers are those BullMQ's own ``getWorkers()`` lists (the
sessions it names in ``pg_stat_activity``), on the health page too."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from dashboard.connections.registry import reset_registry
from dashboard.health import checks as health_checks
from queues import health
from queues.keys import QueueRef
from queues.sources import ConnectionSpec, source_for
from tests.support.redis_db import point_at
from tests.support.servers import NODE_DIR, ensure_node_modules, run_node
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.node]

QUEUE = QueueRef("pg", "bullmq", "probed")


@pytest.fixture(scope="module")
def stalled_db(postgres_server):
    url = postgres_server.create_database("pg_probes")
    return url, run_node("pg_probes.mjs", "stall", url, QUEUE.name)


@pytest.fixture
def probed(stalled_db):
    url, report = stalled_db
    source = source_for(ConnectionSpec("pg", url, ("bullmq",)))
    yield source, report
    source.close()


def test_stalled_jobs_are_the_active_rows_whose_lock_lapsed(probed):
    source, report = probed
    (snap,) = source.snapshots([QUEUE])
    assert snap.counts["active"] == report["counts"]["active"] == 2
    active = source.probes.active({QUEUE: snap.counts["active"]})
    assert sorted(active.ids[QUEUE]) == sorted(report["stuck"]) and not active.partial
    # The holder left with a 1.5 s lock: once it has passed, both are stalled.
    wait_for(lambda: sorted(source.probes.without_lock(active.ids).get(QUEUE, [])) == sorted(report["stuck"]))
    # A job that is not active is never called stalled, whatever its lock.
    assert source.probes.without_lock({QUEUE: [report["dead"], "no-such-job"]}) == {}


def test_attempt_fields_read_as_node_reports_them(probed):
    source, report = probed
    jobs = [(QUEUE, report["retried"]), (QUEUE, report["dead"]), (QUEUE, "no-such-job")]
    retried, dead, missing = source.probes.job_fields(jobs, ("atm", "ats", "stc", "finishedOn", "name"))
    node = report["jobs"]
    assert retried == [
        str(node[report["retried"]]["attemptsMade"]).encode(),
        str(node[report["retried"]]["attemptsStarted"]).encode(),
        b"0",
        str(node[report["retried"]]["finishedOn"]).encode(),
        b"retry-me",
    ]
    assert int(retried[0]) == 3 and int(dead[0]) == 1 and dead[4] == b"dead"
    assert missing == [None] * 5


def test_finished_jobs_are_counted_per_minute_and_due_delayed_ones_counted(probed):
    source, report = probed
    node = report["jobs"]
    minute = node[report["retried"]]["finishedOn"] // 60_000 * 60_000
    dead_minute = node[report["dead"]]["finishedOn"] // 60_000 * 60_000
    minutes = sorted({minute, dead_minute, minute - 60_000})
    counts = source.probes.finished_counts([QUEUE], minutes=minutes, width_ms=60_000)[QUEUE]
    assert sum(c for c, _ in counts) == 1 and sum(f for _, f in counts) == 1
    assert counts[minutes.index(minute)][0] == 1 and counts[minutes.index(dead_minute)][1] == 1
    now = int(time.time() * 1000)
    assert source.probes.due_delayed([QUEUE], now_ms=now) == {QUEUE: 1}
    assert source.probes.due_delayed([QUEUE], now_ms=0) == {QUEUE: 0}


@pytest.fixture
def serving(postgres_server):
    """Two Node workers (one named "alpha") holding their connections on queue "served"."""
    url = postgres_server.create_database("pg_workers")
    ensure_node_modules()
    proc = subprocess.Popen(
        ["node", "pg_probes.mjs", "serve", url, "served"],
        cwd=NODE_DIR,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        line = proc.stdout.readline()
        assert line, f"pg_probes.mjs serve exited ({proc.poll()})"
        yield url, json.loads(line)
    finally:
        proc.stdin.close()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_workers_are_the_sessions_bullmq_names(serving):
    url, node = serving
    source = source_for(ConnectionSpec("pg", url, ("bullmq",)))
    try:
        served, other = QueueRef("pg", "bullmq", "served"), QueueRef("pg", "bullmq", "serve")
        found = source.workers([served, other])
    finally:
        source.close()
    assert node["workers"] == len(found[served]) == 2
    assert sorted(w.name for w in found[served]) == ["", "alpha"]
    assert sorted(w.client for w in found[served]) == ["served", "served:w:alpha"]
    assert all(w.addr.startswith("127.0.0.1:") for w in found[served])
    assert found[other] == []  # a queue whose name is a prefix of another's has none


@pytest.mark.django_db
def test_the_workers_check_judges_postgres_queues(settings, serving, postgres_server):
    url, _ = serving
    run_node("pg_fixture.mjs", "add", url, "unserved", "2")
    run_node("pg_fixture.mjs", "add", url, "served", "1")
    point_at(settings, ConnectionSpec("pg", url, ("bullmq",)))
    try:
        report = health_checks.run_all(connections=["pg"])
    finally:
        reset_registry()
    found = {f"{r.kind}@{r.queue}": r for r in report.connections[0].results if r.queue}
    served, unserved = found["queue.no_workers@served"], found["queue.no_workers@unserved"]
    assert served.status == health.PASS and served.details["workers"] == 2
    assert served.details["source"] == "pg_stat_activity"
    assert unserved.status == health.FAIL and "2 jobs waiting and no worker is connected." in str(unserved.summary)
