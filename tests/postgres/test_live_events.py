"""The monitor follows a BullMQ-on-PostgreSQL queue by its events: real Node workers process
jobs while a monitor runs, its counts and rates move within a few ticks (from events, not
only from exact reads), and once the queue is quiet its counts equal ``getJobCounts()``."""

from __future__ import annotations

import json
import subprocess

import pytest

from dashboard.core import dash_redis, state_store
from queues.connections import ConnectionSpec
from tests.support.live import monitor_thread
from tests.support.redis_db import point_at
from tests.support.servers import NODE_DIR, ensure_node_modules, finish, run_node
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.node, pytest.mark.django_db(transaction=True)]

JOBS = 80


def pg_queue_state(name: str) -> dict | None:
    state = state_store.read_state(dash_redis.dashboard_redis()) or {"queues": []}
    return next((q for q in state["queues"] if q["connection"] == "pg" and q["name"] == name), None)


def test_live_counts_and_rates_of_a_postgres_queue_follow_its_events(live_setup, redis_db, postgres_db, settings):
    run_node("pg_fixture.mjs", "add", postgres_db.url, "pg-busy", "1")  # migrates; the queue exists
    point_at(
        settings, ConnectionSpec("default", redis_db.url, ("bull",)), ConnectionSpec("pg", postgres_db.url, ("bullmq",))
    )
    ensure_node_modules()
    with monitor_thread(tick=0.3, name="pg-events", lock_ttl_ms=2000) as monitor:
        wait_for(lambda: pg_queue_state("pg-busy") is not None)
        assert monitor.intake.follows_events("pg")
        command = ["node", "pg_work.mjs", postgres_db.url, "pg-busy", str(JOBS)]
        work = subprocess.Popen(command, cwd=NODE_DIR, stdout=subprocess.PIPE, text=True)
        try:
            assert work.stdout.readline().strip() == "STARTED"
            # While the workers run: finished jobs show up, counted from events.
            wait_for(lambda: 0 < (pg_queue_state("pg-busy")["events_total"]["completed"]) < JOBS * 3 // 4, timeout=20)
            assert work.poll() is None, "the work ended before the monitor saw it move"
            truth = json.loads(finish(work, timeout=90)[0].strip().splitlines()[-1])["counts"]
        finally:
            if work.poll() is None:
                work.kill()
        assert truth["completed"] == JOBS * 3 // 4 + 1 and truth["failed"] == JOBS // 4

        def settled():
            q = pg_queue_state("pg-busy")
            return q is not None and all(q["counts"].get(state, 0) == n for state, n in truth.items())

        wait_for(settled, timeout=15)
        q = pg_queue_state("pg-busy")
        assert q["events_total"]["completed"] == truth["completed"]
        assert q["events_total"]["failed"] == truth["failed"]
        assert q["rates_per_min"]["completed"]["1"] > 0
        assert monitor.intake.events_seen >= JOBS * 4  # added, waiting, active, completed/failed
        assert monitor.intake.gaps_seen == 0
