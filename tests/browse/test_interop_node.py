"""The reader against queues written by real Node BullMQ 6.7: counts equal BullMQ's own
getJobCounts(), and job details match what Node reports."""

from __future__ import annotations

import json

import pytest
import redis

from dashboard.connections.registry import get_redactor, get_registry
from queues import snapshot
from queues.keys import QueueRef
from queues.redis import jobs

pytestmark = [pytest.mark.node, pytest.mark.django_db]


def test_discovery_finds_every_queue_including_braced_prefix(node_queues):
    found = {(q.prefix, q.name) for q in get_registry().queues("default")}
    expected = {(q["prefix"], q["name"]) for q in node_queues["queues"]}
    assert found == expected


def test_snapshot_counts_equal_getjobcounts_for_every_queue_and_state(node_queues):
    registry = get_registry()
    snaps = {
        (s.queue.prefix, s.queue.name): s for s in registry.source("default").snapshots(registry.queues("default"))
    }
    for q in node_queues["queues"]:
        snap = snaps[(q["prefix"], q["name"])]
        assert snap.counts == q["counts"], q["name"]
        assert snap.paused == q["paused"], q["name"]
        assert snap.schedulers == q["schedulers"], q["name"]
    # The fixture covers every state at least once, so the comparison above means something.
    for state in snapshot.COUNT_STATES:
        if state != "active":
            assert any(q["counts"][state] for q in node_queues["queues"]), state


def test_oldest_waiting_age_is_measured(node_queues):
    registry = get_registry()
    mixed = QueueRef("default", "bull", "mixed")
    snap = registry.source("default").snapshots([mixed])[0]
    assert snap.oldest_waiting_id is not None
    assert 0 <= snap.oldest_waiting_age_ms < 10 * 60 * 1000


def test_job_details_match_node(node_queues):
    registry = get_registry()
    found = registry.jobs("default")
    checked = 0
    for full_id, expected in node_queues["jobs"].items():
        prefix, rest = (
            full_id.split("/", 1)
            if not full_id.startswith("{")
            else (full_id[: full_id.index("}/") + 1], full_id[full_id.index("}/") + 2 :])
        )
        name, job_id = rest.split("/", 1)
        detail = found.detail(QueueRef("default", prefix, name), job_id, cap=256 * 1024, redactor=get_redactor())
        assert detail.summary.name == expected["name"]
        assert detail.summary.attempts_made == expected["attemptsMade"]
        assert detail.stacktrace == expected["stacktrace"]
        assert detail.failed_reason == (expected["failedReason"] or "")
        if expected.get("returnvalue") is not None:
            assert json.loads(detail.returnvalue.text) == expected["returnvalue"]
        if expected.get("logs"):
            assert detail.logs == expected["logs"]
        checked += 1
    assert checked >= 10


def test_failed_state_and_completed_with_old_failure_reason(node_queues):
    client = redis.Redis.from_url(get_registry().source("default").spec.url)  # the test's own reads
    mixed = QueueRef("default", "bull", "mixed")
    states = {}
    for full_id in node_queues["jobs"]:
        if full_id.startswith("bull/mixed/"):
            job_id = full_id.split("/", 2)[2]
            states[job_id] = jobs.job_state(client, mixed, job_id)[0]
    assert "failed" in states.values() and "completed" in states.values()
    # A job that failed once and then completed keeps failedReason but is completed.
    flaky = [i for i, e in node_queues["jobs"].items() if e["failedReason"] and e.get("returnvalue") is not None]
    assert flaky
    for full_id in flaky:
        assert states[full_id.split("/", 2)[2]] == "completed"


def test_schedulers_read_with_pattern_every_and_timezone(node_queues):
    items = get_registry().schedulers("default").list(QueueRef("default", "bull", "sched"))
    assert len(items) == 2
    cron = next(s for s in items if s.pattern)
    every = next(s for s in items if s.every)
    assert cron.tz == "Europe/Berlin" and cron.pattern == "0 */5 * * * *"
    assert every.every == 60000
    assert all(s.next_run and s.iterations is not None and not s.legacy for s in items)
