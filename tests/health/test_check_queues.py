"""``manage.py check_queues``: human output, ``--json``, and exit codes, run as the real command
(a subprocess with production settings) against redis-servers in wrong and right configurations,
without a monitor; and in-process with a running monitor's state."""
# Literal `bull:` keys kept: redis-servers of the tests' own (server-wide settings), and a monitor.

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time

import pytest
from django.core.management import call_command

from dashboard.health.checks import read_stored
from queues import health
from tests.support.health import make_queue, queue_state
from tests.support.servers import ROOT, RedisServer
from tests.support.waiting import wait_for


@pytest.fixture
def wrong_redis():
    """Eviction on, no persistence, and a queue with a waiting job but no worker."""
    server = RedisServer("maxmemory-policy allkeys-lru")
    client = server.client()
    make_queue(client, "orders")
    client.lpush("bull:orders:wait", "1")
    client.hset("bull:orders:1", mapping={"name": "j", "timestamp": int(time.time() * 1000)})
    yield server
    server.stop()


@pytest.fixture
def right_redis():
    """noeviction and AOF on; a queue with nothing waiting."""
    server = RedisServer("maxmemory-policy noeviction", "appendonly yes")
    make_queue(server.client(), "orders")
    yield server
    server.stop()


def check_queues(server: RedisServer, *args: str, dashboard_db: int = 5) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QUEUEWATCH_", "DJANGO_", "DATABASE_URL"))}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "dashboard.settings",
            "QUEUEWATCH_INSECURE_DEV": "1",
            "QUEUEWATCH_REDIS_URL": server.url(0),
            "QUEUEWATCH_DASHBOARD_REDIS_URL": server.url(dashboard_db),
            "DATABASE_URL": "sqlite:///:memory:",
        }
    )
    return subprocess.run(
        [sys.executable, "manage.py", "check_queues", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_json_output_and_exit_code_against_a_wrong_configuration_without_a_monitor(wrong_redis):
    proc = check_queues(wrong_redis, "--json")
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert report["fail_on"] == "critical" and report["exit_code"] == 1 and report["failing"] == 2
    assert report["monitor_state"]["present"] is False and "monitor" in report["monitor_state"]["note"]
    (conn,) = report["connections"]
    assert conn["name"] == "default" and conn["worst"] == "critical"
    by_kind = {(r["kind"], r["queue"]): r for r in conn["results"]}
    evict = by_kind[("redis.eviction_policy", None)]
    assert (evict["status"], evict["severity"]) == ("fail", "critical") and "noeviction" in evict["fix"]
    assert by_kind[("queue.no_workers", "orders")]["status"] == "fail"
    assert by_kind[("redis.persistence", None)]["status"] == "fail"
    for kind in health.STATE_KINDS:  # no monitor: said clearly, not guessed
        r = by_kind[(kind, "orders")]
        assert r["status"] == "unknown" and "monitor" in r["summary"]
    # Worst first.
    ranks = [(health.STATUS_RANK[r["status"]], -health.SEVERITY_RANK[r["severity"]]) for r in conn["results"]]
    assert ranks == sorted(ranks)
    # The result is stored for /metrics.
    stored = read_stored(wrong_redis.client(5))
    assert stored["checked_at"] == report["checked_at"]


@pytest.mark.slow  # > 20 s (--durations)
def test_fail_on_chooses_the_severity_that_fails_the_run(right_redis):
    # Right configuration: nothing critical, nothing warning; the state-based checks are unknown.
    proc = check_queues(right_redis, "--json", "--fail-on", "warning")
    assert proc.returncode == 0, proc.stdout
    assert json.loads(proc.stdout)["failing"] == 0
    # No persistence is a warning: it fails --fail-on warning but not the default (critical).
    no_persistence = RedisServer()
    try:
        make_queue(no_persistence.client(), "orders")
        assert check_queues(no_persistence, "--json").returncode == 0
        proc = check_queues(no_persistence, "--fail-on", "warning")
        assert proc.returncode == 1
        assert "WARNING  redis.persistence" in proc.stdout and "fix: Enable AOF" in proc.stdout
        assert "1 check(s) fail at or above warning: exit 1." in proc.stdout
        assert check_queues(no_persistence, "--fail-on", "info").returncode == 1
    finally:
        no_persistence.stop()


def test_human_output_without_a_monitor(wrong_redis):
    proc = check_queues(wrong_redis)
    assert proc.returncode == 1
    out = proc.stdout
    assert out.startswith("Monitor state: missing.") and "queue.repeated_stalls" in out
    assert "== default (redis://127.0.0.1:" in out
    assert "FAIL CRITICAL redis.eviction_policy: maxmemory-policy is allkeys-lru" in out
    assert "FAIL CRITICAL queue.no_workers [bull:orders]: 1 job waiting" in out
    assert "why: " in out and "fix: " in out
    assert out.index("CRITICAL") < out.index("WARNING")
    assert "2 check(s) fail at or above critical: exit 1." in out


def test_unreachable_redis_is_a_critical_failure(wrong_redis):
    port = wrong_redis.port
    wrong_redis.kill()
    proc = check_queues(wrong_redis, "--json")
    wrong_redis.start()  # so the fixture can stop it
    assert proc.returncode == 1
    (conn,) = json.loads(proc.stdout)["connections"]
    assert [(r["kind"], r["status"]) for r in conn["results"]] == [("redis.reachable", "fail")]
    assert str(port) in conn["display_url"]


@pytest.mark.django_db(transaction=True)
def test_with_a_running_monitor_state_based_checks_are_decided(followed_queues, running_monitor):
    wait_for(lambda: queue_state("calm")[0] is not None, timeout=20)
    out = io.StringIO()
    try:
        call_command("check_queues", "--json", stdout=out)
        code = 0
    except SystemExit as exc:
        code = exc.code
    report = json.loads(out.getvalue())
    assert code == report["exit_code"] == 0
    assert report["monitor_state"]["present"] and report["monitor_state"]["monitor"] == "test-monitor"
    results = {r["kind"]: r for c in report["connections"] for r in c["results"] if r["queue"] == "calm"}
    for kind in health.STATE_KINDS:
        assert results[kind]["status"] == "pass", results[kind]
