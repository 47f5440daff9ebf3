"""Actions, schedulers and probes on a Redis Cluster: BullMQ's scripts run through the cluster
client on hash-tagged queues real Node BullMQ 6.7 built (tests/node/cluster_fixture.mjs), each
checked against what Node's ``getJobCounts()`` says afterwards; a redrive between queues of
different hash slots is refused with a way out instead of failing inside Lua."""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import replace
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse

from queues.connections import ConnectionSpec
from queues.keys import QueueRef
from queues.redact import Redactor
from queues.redis.snapshot import queue_slot
from queues.sources.factory import source_for
from tests.support.accounts import token_for, user_with
from tests.support.cluster_queues import NAME, PREFIXES, build_queues, node_does, node_schedules, node_sees
from tests.support.redis_db import point_at

pytestmark = [pytest.mark.cluster, pytest.mark.node, pytest.mark.xdist_group("redis-cluster")]

ORDERS = QueueRef(NAME, "{app}", "orders")
ORDERS_DLQ = QueueRef(NAME, "{app}", "orders-dlq")  # the same hash tag: the same slot as orders
Q4, Q5 = QueueRef(NAME, "bull", "{q4}"), QueueRef(NAME, "bull", "{q5}")


@pytest.fixture(scope="module")
def built(redis_cluster):
    return build_queues(redis_cluster)


@pytest.fixture
def source(redis_cluster, built):
    source = source_for(ConnectionSpec(NAME, redis_cluster.url, PREFIXES))
    yield source
    source.close()


@pytest.fixture
def api(settings, client, redis_cluster, redis_db, built):
    """POST to the API as an operator, the app on the cluster connection."""
    point_at(settings, ConnectionSpec(NAME, redis_cluster.url, PREFIXES))
    settings.QUEUEWATCH_DASHBOARD_REDIS_URL = redis_db.url
    settings.QUEUEWATCH_DLQ_MAP = {"orders-dlq": "orders", "{q4}-dlq": "{q5}"}
    token = token_for(user_with("operator", username="cluster-op"))

    def post(route: str, queue: QueueRef, *args: str, **body):
        return client.post(
            reverse(route, args=[queue.connection, queue.prefix, queue.name, *args]),
            json.dumps(body),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )

    yield post
    point_at(settings)


def job_ids(source, queue: QueueRef, state: str) -> list[str]:
    page = source.jobs.page(queue, state, page=1, page_size=50, name_filter="", scan_limit=1000, redactor=Redactor())
    return [row.id for row in page.jobs]


@pytest.mark.django_db
def test_retry_of_a_failed_job_through_the_api(api, source, redis_cluster, built):
    failed = job_ids(source, ORDERS, "failed")
    answer = api("api_job_action", ORDERS, "retry", failed[0])
    assert answer.status_code == 200, answer.content
    assert answer.json()["outcome"] == "done"
    counts = node_sees(redis_cluster, ORDERS)["counts"]
    before = built[ORDERS]
    assert counts["failed"] == before["failed"] - 1
    assert counts["waiting"] + counts["prioritized"] == before["waiting"] + before["prioritized"] + 1
    (snapshot,) = source.snapshots([ORDERS])
    assert snapshot.counts == counts
    built[ORDERS] = counts


@pytest.mark.django_db
def test_clean_and_pause_through_the_api(api, source, redis_cluster, built):
    answer = api("api_queue_action", Q4, "clean", state="delayed", older_than_minutes=0, reason="tidy")
    assert answer.status_code == 200, answer.content
    assert answer.json()["affected"] == built[Q4]["delayed"] == 2
    assert node_sees(redis_cluster, Q4)["counts"] == {**built[Q4], "delayed": 0}

    assert api("api_queue_action", Q5, "pause", reason="deploy").status_code == 200
    paused = node_sees(redis_cluster, Q5)
    assert paused["paused"] is True
    assert source.snapshots([Q5])[0].counts == paused["counts"]
    assert api("api_queue_action", Q5, "resume", reason="deployed").status_code == 200
    resumed = node_sees(redis_cluster, Q5)
    assert resumed["paused"] is False and resumed["counts"] == built[Q5]
    built[Q4] = {**built[Q4], "delayed": 0}


@pytest.mark.django_db
def test_redrive_within_one_slot_moves_the_job_and_across_slots_is_refused(api, source, redis_cluster, built):
    node_does(redis_cluster, "add", ORDERS_DLQ, 1)
    (dead,) = job_ids(source, ORDERS_DLQ, "waiting")
    before = node_sees(redis_cluster, ORDERS)["counts"]
    answer = api("api_job_action", ORDERS_DLQ, "redrive", dead, reason="fixed")
    assert answer.status_code == 200, answer.content
    assert node_sees(redis_cluster, ORDERS_DLQ)["counts"]["waiting"] == 0
    assert node_sees(redis_cluster, ORDERS)["counts"]["waiting"] == before["waiting"] + 1

    q4_dlq = QueueRef(NAME, "bull", "{q4}-dlq")  # its tag is q4: not the slot of {q5}
    assert queue_slot(q4_dlq) != queue_slot(Q5)
    node_does(redis_cluster, "add", q4_dlq, 1)
    (stuck,) = job_ids(source, q4_dlq, "waiting")
    refused = api("api_job_action", q4_dlq, "redrive", stuck, reason="fixed")
    assert refused.status_code == 409
    body = refused.json()
    assert body["outcome"] == "cross_slot"
    assert "same hash slot" in body["message"] and "same hash tag" in body["message"]
    assert node_sees(redis_cluster, q4_dlq)["counts"]["waiting"] == 1  # left where it was


def test_a_scheduler_node_made_is_edited_and_removed_with_bullmq_scripts(source, redis_cluster, built):
    q3 = QueueRef(NAME, "bull", "{q3}")
    assert source.schedulers.list(q3) == []
    node_schedules(redis_cluster, q3, "nightly", 3_600_000)
    assert [(s.id, s.every) for s in source.schedulers.list(q3)] == [("nightly", 3_600_000)]
    spec = source.schedulers.spec(q3, scheduler_id="nightly")
    result = source.schedulers.edit(q3, spec=replace(spec, every=60_000))
    assert result.ok, result
    assert node_sees(redis_cluster, q3)["schedulers"] == [{"id": "nightly", "every": 60_000}]
    assert source.schedulers.remove(q3, scheduler_id="nightly").ok
    assert node_sees(redis_cluster, q3)["schedulers"] == []


def test_a_zone_less_pattern_runs_in_the_configured_workers_zone_on_a_cluster(redis_cluster, built):
    """As on one node (tests/actions/test_scheduler_workers_zone.py): ``QUEUEWATCH_CRON_TZ`` names
    the zone the workers run a pattern without ``tz`` in, and the scheduler is created and shown in it."""
    from queues.scheduler_edit import SchedulerSpec

    q3 = QueueRef(NAME, "bull", "{q3}")
    zoned = source_for(ConnectionSpec(NAME, redis_cluster.url, PREFIXES, cron_tz="America/New_York"))
    try:
        spec = SchedulerSpec(scheduler_id="zoned-morning", name="report", pattern="0 3 * * *")
        assert zoned.schedulers.create(q3, spec=spec).ok
        (made,) = [s for s in zoned.schedulers.list(q3) if s.id == "zoned-morning"]
        assert (made.zone.name, made.zone.source) == ("America/New_York", "configured")
        due = dt.datetime.fromtimestamp(made.next_run / 1000, ZoneInfo("America/New_York"))
        assert (due.hour, due.minute) == (3, 0)  # 03:00 in New York, not 03:00 UTC
    finally:
        zoned.schedulers.remove(q3, scheduler_id="zoned-morning")
        zoned.close()


def test_probes_read_active_lists_locks_and_fields_across_nodes(source, built):
    queues = list(built)
    assert source.probes.active({q: 0 for q in queues}).ids == {q: [] for q in queues}
    assert source.probes.without_lock({ORDERS: ["1", "2"]}) == {ORDERS: ["1", "2"]}  # no locks held
    rows = source.probes.job_fields([(q, "1") for q in queues], ["name"])
    assert len(rows) == len(queues) and all(row == [b"finish"] for row in rows)
    due = source.probes.due_delayed(queues, now_ms=int(time.time() * 1000) + 7_200_000)  # all due in 2 h
    assert due == {q: built[q]["delayed"] for q in queues}
