"""Monitor resilience with real processes: leader failover without double counting, and a
trimmed events stream detected and reconciled."""
# Literal `bull:` keys kept: a monitor discovers every queue of its (whole, leased) database.

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from dashboard.connections.registry import get_registry
from dashboard.live.models import QueuePoint
from queues.keys import QueueRef
from tests.support.live import run_monitor_until
from tests.support.parallel import heavy_trial
from tests.support.servers import ROOT, run_node
from tests.support.waiting import wait_for

pytestmark = pytest.mark.node

LEADER_KEY = "queuewatch:monitor:leader"  # queues.redis.leader.LeaderLock's key


class MonitorProcess:
    def __init__(self, name: str, env: dict):
        self.name = name
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "monitor", "--name", name, "--lock-ttl-ms", "2000"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line)

    def leading(self) -> bool:
        return any(f"{self.name}: leading" in line for line in self.lines)

    def standing_by(self) -> bool:
        return any(f"{self.name}: waiting for leadership" in line for line in self.lines)

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(15)


@pytest.fixture
def monitor_env(tmp_path, redis_url):
    db = tmp_path / "monitor.sqlite3"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("QUEUEWATCH_")},
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "QUEUEWATCH_SECRET_KEY": "t" * 40,
        "QUEUEWATCH_REDIS_URL": redis_url,
        "DATABASE_URL": f"sqlite:///{db}",
        "QUEUEWATCH_MONITOR_TICK_MS": "500",
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    procs = []
    yield env, db, procs
    for p in procs:
        p.stop(signal.SIGKILL)


def stored_total(db, queue, counter="failed") -> int:
    with sqlite3.connect(db, timeout=10) as conn:
        return conn.execute(
            f"select coalesce(sum({counter}), 0) from dashboard_queuepoint where queue=? and resolution=60", (queue,)
        ).fetchone()[0]


def lock_renewed(client, times: int):
    """A predicate: the leader lock has been renewed ``times`` times since it was made (its TTL
    went up), i.e. the leader kept leading through that many heartbeats."""
    seen = {"ttl": client.pttl(LEADER_KEY), "renewals": 0}

    def renewed() -> bool:
        ttl = client.pttl(LEADER_KEY)
        seen["renewals"] += ttl > seen["ttl"]
        seen["ttl"] = ttl
        return seen["renewals"] >= times

    return renewed


@pytest.mark.slow  # > 20 s (--durations)
@heavy_trial
def test_standby_takes_over_when_the_leader_is_killed_without_double_counting(monitor_env, redis_url, redis_client):
    env, db, procs = monitor_env
    url = redis_url
    run_node("produce.mjs", "complete", url, "failover", "1")  # the queue exists
    a = MonitorProcess("mon-a", env)
    procs.append(a)
    wait_for(a.leading, timeout=20)
    b = MonitorProcess("mon-b", env)
    procs.append(b)
    # The standby contends while the leader renews its lock through several heartbeats.
    wait_for(b.standing_by, timeout=20)
    wait_for(lock_renewed(redis_client, 3), timeout=10)
    assert a.leading() and not b.leading()

    run_node("produce.mjs", "fail", url, "failover", "30")
    wait_for(lambda: stored_total(db, "failover") == 30, timeout=20)

    a.stop(signal.SIGKILL)
    killed_at = time.monotonic()
    wait_for(b.leading, timeout=15)
    takeover = time.monotonic() - killed_at
    assert takeover < 6, f"standby took {takeover:.1f}s to lead"

    run_node("produce.mjs", "fail", url, "failover", "20")
    wait_for(lambda: stored_total(db, "failover") == 50, timeout=20)
    # More ticks and flushes (a later completion elsewhere is stored): nothing may be counted twice.
    run_node("produce.mjs", "complete", url, "after-failover", "1")
    wait_for(lambda: stored_total(db, "after-failover", "completed") == 1, timeout=20)
    assert stored_total(db, "failover") == 50


@pytest.mark.django_db(transaction=True)
def test_trimmed_stream_is_detected_and_reconciled(live_setup, redis_url):
    url = redis_url
    run_node("produce.mjs", "complete", url, "trimmy", "5", "20")

    def completed_total():
        return sum(QueuePoint.objects.filter(queue="trimmy", resolution=60).values_list("completed", flat=True))

    # First run: follows the stream and stores a cursor.
    run_monitor_until(lambda m: m.stats["ticks"] >= 2 and m.applied_cursors.get(QueueRef("default", "bull", "trimmy")))
    base = completed_total()

    # While no monitor runs, 300 completions go through a stream capped at ~20 entries.
    result = run_node("produce.mjs", "complete", url, "trimmy", "300", "20")
    assert live_setup.xlen("bull:trimmy:events") < 200

    # Second run resumes from the stored cursor, finds it trimmed away, and reconciles.
    monitor = run_monitor_until(lambda m: m.stats["gaps"] >= 1 and m.stats["ticks"] >= 2)
    assert monitor.stats["gaps"] >= 1
    wait_for(lambda: completed_total() >= base + 300, timeout=10)
    assert completed_total() == 305  # all 305 completions are in the completed set's scores

    snap = get_registry().source("default").snapshots([QueueRef("default", "bull", "trimmy")])[0]
    assert snap.counts == result["counts"]
