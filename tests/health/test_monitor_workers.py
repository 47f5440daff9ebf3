"""One CLIENT LIST for the workers: the ``queue.no_workers`` check judges the workers the leading
monitor last published (``channels.read_workers``), as the other checks judge its figures, and
reads ``CLIENT LIST`` itself only when no monitor document is fresh or the document does not
cover the connection's queues. Real Node BullMQ 6.7 workers, a real monitor, and commandstats
of a redis-server of the test's own (``private_redis``), so every ``CLIENT LIST`` counted is
one the code under test sent."""
# Literal `bull:` keys kept: a private redis-server, and client names as BullMQ sets them.

from __future__ import annotations

import time

import pytest

from dashboard.core import dash_redis
from dashboard.health import checks as health_checks
from dashboard.live import channels as live
from queues.health import FAIL, PASS, UNKNOWN
from queues.keys import QueueRef
from queues.redis.health_checks import run_checks
from queues.workers import Worker
from tests.support.health import make_queue
from tests.support.live import monitor_thread
from tests.support.node_workers import NodeWorkers
from tests.support.servers import node_available
from tests.support.waiting import wait_for

MAIL = QueueRef("default", "bull", "mail")


def now_ms() -> int:
    return int(time.time() * 1000)


def no_workers(results, queue="mail"):
    found = [r for r in results if r.kind == "queue.no_workers" and r.queue == queue]
    assert len(found) == 1, [r.as_dict() for r in results]
    return found[0]


def client_list_calls(client) -> int:
    return int((client.info("commandstats").get("cmdstat_client|list") or {}).get("calls", 0))


def mail_workers(dash) -> list | None:
    return ((dash_redis.read_workers(dash) or {}).get("queues") or {}).get(live.queue_id(MAIL))


@pytest.mark.node
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not node_available(), reason="needs Node.js and npm")
def test_the_check_judges_the_monitors_workers_and_reads_client_list_only_without_them(private_redis, settings):
    settings.QUEUEWATCH_WORKERS_INTERVAL_S = 1
    url = private_redis.connection_pool.connection_kwargs
    url = f"redis://127.0.0.1:{url['port']}/{url.get('db', 0)}"
    with NodeWorkers(url) as node:
        node.send("add", queue="mail", jobs=[{"name": "send"}] * 4)
        node.send("start", id="a", queue="mail", name="box-7", hold=True)
        node.send("start", id="b", queue="mail", hold=True)
        truth = sorted(w["rawname"] for w in node.send("getWorkers", queue="mail")["workers"])
        assert len(truth) == 2

        with monitor_thread(tick=0.3, name="workers-check-monitor", lock_ttl_ms=2000):
            wait_for(
                lambda: mail_workers(private_redis) is not None and len(mail_workers(private_redis)) == 2, timeout=20
            )

            # The monitor's own health run judges the document it published (and stores its report).
            def stored_judged_by_monitor() -> bool:
                report = health_checks.read_stored(private_redis) or {"connections": []}
                found = [
                    r
                    for c in report["connections"]
                    for r in c["results"]
                    if r["kind"] == "queue.no_workers" and r["queue"] == "mail"
                ]
                return len(found) == 1 and found[0]["details"].get("source") == "monitor"

            wait_for(stored_judged_by_monitor, timeout=20)
        doc = dash_redis.read_workers(private_redis)
        assert doc is not None  # kept for three periods after the monitor stopped: still fresh

        # The health page's run, in a web process: the monitor's reading, no CLIENT LIST of its own.
        before = client_list_calls(private_redis)
        r = no_workers(health_checks.run_all().results)
        assert client_list_calls(private_redis) == before
        assert (r.status, r.details["source"], r.details["workers"]) == (PASS, "monitor", 2)
        assert r.details["workers_taken_at"] == doc["taken_at"]
        assert sorted(r.details["names"]) == truth  # the same evidence as BullMQ's own getWorkers()
        assert r.summary == "2 worker connection(s)."

        # No fresh document (it expired: no monitor leading): one CLIENT LIST per connection.
        private_redis.delete(dash_redis.WORKERS_KEY)
        r = no_workers(health_checks.run_all().results)
        assert client_list_calls(private_redis) == before + 1
        assert (r.status, r.details["source"]) == (PASS, "client-list")
        assert sorted(r.details["names"]) == truth and "workers_taken_at" not in r.details

        node.send("stop", id="a")
        node.send("stop", id="b")
        wait_for(lambda: not node.send("getWorkers", queue="mail")["workers"], timeout=10)
        r = no_workers(health_checks.run_all().results)
        # Two of the four jobs were taken (and held) by the workers; two still wait.
        assert (r.status, r.summary) == (FAIL, "2 jobs waiting and no worker is connected.")


def test_a_document_without_a_queue_or_the_connection_means_reading_client_list(private_redis):
    mail, late = make_queue(private_redis, "mail"), make_queue(private_redis, "late")
    private_redis.lpush("bull:late:wait", "1")
    read = [Worker("box-7", "10.0.0.9:4000", 60, 0, "bull:bWFpbA==:w:box-7")]

    private_redis.config_resetstat()
    results = run_checks(private_redis, [mail], None, now_ms(), workers={mail: read}, workers_at=123)
    r = no_workers(results)
    assert (r.status, r.details["source"], r.details["names"], r.details["workers_taken_at"]) == (
        PASS,
        "monitor",
        ["bull:bWFpbA==:w:box-7"],
        123,
    )
    assert client_list_calls(private_redis) == 0

    # "late" was discovered after the monitor's last read: this connection is read once, here.
    results = run_checks(private_redis, [mail, late], None, now_ms(), workers={mail: read}, workers_at=123)
    assert client_list_calls(private_redis) == 1
    assert {no_workers(results, q).details["source"] for q in ("mail", "late")} == {"client-list"}
    assert (no_workers(results, "mail").status, no_workers(results, "late").status) == (PASS, FAIL)


@pytest.mark.django_db
def test_a_connection_the_monitor_could_not_read_is_read_here(private_redis):
    """The document lists the connection as unknown (refused, or down when the monitor read):
    the check asks CLIENT LIST itself, and where that is refused too it judges from activity
    with the same words as before."""
    make_queue(private_redis, "mail")
    private_redis.lpush("bull:mail:wait", "1")
    dash_redis.publish_workers(
        private_redis, {"taken_at": now_ms(), "queues": {}, "unknown": {"default": "down"}}, every_s=10
    )
    private_redis.config_resetstat()
    r = no_workers(health_checks.run_all().results)
    assert client_list_calls(private_redis) == 1
    assert (r.status, r.details["source"]) == (FAIL, "client-list")

    private_redis.execute_command("ACL", "SETUSER", "default", "-client|list")
    try:
        r = no_workers(health_checks.run_all().results)
    finally:
        private_redis.execute_command("ACL", "SETUSER", "default", "+client|list")
    assert r.status == UNKNOWN and r.details["source"] == "activity"
    assert r.summary.startswith("CLIENT LIST is not allowed (")
