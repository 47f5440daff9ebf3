"""A health run a share of queues at a time: the same results as one share, every result
counted and stored while only those asked for are kept (at 10,000 queues the results of every
queue at once were the monitor's largest moment)."""

from __future__ import annotations

import pytest
import redis

from dashboard.core import dash_redis
from dashboard.health import checks as health_checks
from dashboard.health.checks import HEALTH_KEY, HEALTH_SUMMARY_KEY, read_stored
from queues import health
from queues.redis import health_checks as redis_health_checks
from tests.support.health import make_queue

pytestmark = pytest.mark.django_db


def found(results) -> list[tuple]:
    """Each result's fields (the words of a queue's: a server's, such as its memory, move
    between two runs)."""
    return sorted(
        (r["kind"], r["queue"] or "", r["status"], r["severity"], r["summary"] if r["queue"] else "") for r in results
    )


def stored_results() -> list[dict]:
    return [r for c in read_stored(dash_redis.dashboard_redis())["connections"] for r in c["results"]]


@pytest.fixture
def five_queues(private_redis):
    queues = {name: make_queue(private_redis, name) for name in ("a", "b/:{c}", "d", "e", "f")}
    private_redis.hset(queues["d"].key("meta"), "paused", 1)  # a failing check in the middle share
    private_redis.rpush(queues["e"].key("wait"), "1")
    private_redis.hset(queues["e"].key("1"), mapping={"name": "j", "timestamp": 1})
    return private_redis


def test_a_run_by_shares_finds_what_one_share_finds_and_stores_all_of_it(five_queues, monkeypatch):
    whole = health_checks.run_all(store=True)
    whole_stored = stored_results()
    monkeypatch.setattr(redis_health_checks, "QUEUES_PER_SHARE", 2)
    monkeypatch.setattr(health_checks.StoredReport, "RESULTS_PER_PART", 3)
    shared = health_checks.run_all(store=True, now=whole.checked_at)
    assert shared.stored
    by_shares = [r.as_dict() for r in shared.results]
    assert found(by_shares) == found(r.as_dict() for r in whole.results)
    assert {r["queue"] for r in by_shares} >= {"a", "b/:{c}", "d", "e", "f"}
    assert ("queue.paused", "d", "fail") in {(r["kind"], r["queue"], r["status"]) for r in by_shares}
    # Shown worst first, whatever order the shares came in.
    assert shared.results == sorted(shared.results, key=health.sort_key)
    # Stored: every result, in parts, as the whole run stored them.
    assert found(stored_results()) == found(whole_stored) == found(by_shares)
    [conn] = read_stored(dash_redis.dashboard_redis())["connections"]
    assert conn["worst"] == shared.connections[0].worst != "ok"
    assert dash_redis.dashboard_redis().keys(HEALTH_KEY + ":writing:*") == []


def test_the_monitor_keeps_the_alert_facts_yet_counts_and_stores_every_result(five_queues, monkeypatch):
    monkeypatch.setattr(redis_health_checks, "QUEUES_PER_SHARE", 2)
    kept = health_checks.run_and_store(keep=health_checks.carries_alert_facts)
    assert kept.results and all(r.check.alert_facts for r in kept.results)
    every = stored_results()
    failing = [r for r in every if r["status"] == health.FAIL]
    assert len(every) > len(kept.results) and any(r["kind"] == "queue.paused" for r in failing)
    summary = dash_redis.get_document(dash_redis.dashboard_redis(), HEALTH_SUMMARY_KEY)
    worst = max((r["severity"] for r in failing), key=health.SEVERITY_RANK.__getitem__)
    assert summary == {"failing": len(failing), "worst": worst, "checked_at": kept.checked_at}
    assert kept.connections[0].worst == worst


def test_a_connection_lost_part_way_ends_with_its_failing_reachability(five_queues, monkeypatch):
    """The shares read before stay; the server's own checks are not judged on a lost connection."""
    monkeypatch.setattr(redis_health_checks, "QUEUES_PER_SHARE", 2)
    real_read = redis_health_checks.read_queue_facts
    calls = []

    def lost_on_the_second_share(client, queues, *args, **kwargs):
        calls.append(queues)
        if len(calls) == 2:
            raise redis.ConnectionError("lost")
        return real_read(client, queues, *args, **kwargs)

    monkeypatch.setattr(redis_health_checks, "read_queue_facts", lost_on_the_second_share)
    report = health_checks.run_all(store=True)
    reachable = [r for r in report.results if r.kind == "redis.reachable"]
    assert [(r.status, r.summary) for r in reachable] == [(health.FAIL, reachable[0].summary)]
    assert "lost" in reachable[0].summary
    assert {r.queue for r in report.results if r.queue} == {q.name for q in calls[0]}
    assert not any(r.kind == "redis.persistence" for r in report.results)
    assert found(stored_results()) == found(r.as_dict() for r in report.results)
