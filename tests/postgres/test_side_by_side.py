"""A Redis connection and a BullMQ-on-PostgreSQL one side by side, with queues and schedulers
real Node BullMQ 6.7 made: the job schedulers of the PostgreSQL queue on /schedulers/, on the
queue's schedulers page and in its API (read as BullMQ's ``getJobSchedulers()`` reports them,
finished ones marked, no edit offered); ``GET /api/v1/queues`` and ``/metrics`` (a running
monitor's figures, labelled by connection) carry both connections' queues."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse
from prometheus_client.parser import text_string_to_metric_families

from dashboard.health.checks import run_and_store
from queues.connections import ConnectionSpec
from queues.keys import QueueRef
from tests.support.accounts import user_with
from tests.support.live import monitor_thread
from tests.support.redis_db import point_at
from tests.support.seeding import seed_failed
from tests.support.servers import run_node
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.node, pytest.mark.django_db(transaction=True)]

TOKEN = "side-by-side-metrics-token-0123"
ORDERS = QueueRef("default", "bull", "orders")


def text_of(response) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode())))


@pytest.fixture
def both(live_setup, settings, redis_db, postgres_db):
    """Redis 'default' (queue 'orders': 2 failed) and PostgreSQL 'pg' (queue 'sch' with three
    schedulers, one finished; queue 'plain' with 3 waiting jobs)."""
    node = run_node("pg_probes.mjs", "schedulers", postgres_db.url, "sch")
    run_node("pg_fixture.mjs", "add", postgres_db.url, "plain", "3")
    seed_failed(live_setup, ORDERS, 2)
    live_setup.hset(ORDERS.key("meta"), "opts.maxLenEvents", 10000)
    point_at(
        settings, ConnectionSpec("default", redis_db.url, ("bull",)), ConnectionSpec("pg", postgres_db.url, ("bullmq",))
    )
    return node


@pytest.fixture
def operator(client):
    client.force_login(user_with("operator"))
    return client


def test_postgres_schedulers_are_listed_like_redis_ones_without_edits(both, operator):
    by_id = {s["key"]: s for s in both["schedulers"]}
    api = operator.get(reverse("api_queue", args=["pg", "bullmq", "sch"]))
    assert api.status_code == 200 and api.json()["schedulers"] == 3
    listed = {s["id"]: s for s in api.json()["schedulers_list"]}
    assert set(listed) == set(by_id) == {"every-minute", "new-year", "once"}
    assert (
        listed["every-minute"]["every"] == 60_000
        and listed["every-minute"]["next_run"] == by_id["every-minute"]["next"]
    )
    assert listed["new-year"]["pattern"] == "0 0 1 1 *" and listed["new-year"]["tz"] == "UTC"
    assert listed["new-year"]["next_run"] == by_id["new-year"]["next"]
    assert listed["once"]["finished"] and listed["once"]["next_run"] is None  # limit 1, run taken
    assert [listed[k]["iterations"] for k in ("every-minute", "once")] == [
        by_id["every-minute"]["iterationCount"],
        by_id["once"]["iterationCount"],
    ]
    for page in (reverse("schedulers"), reverse("queue_schedulers", args=["pg", "bullmq", "sch"])):
        response = operator.get(page)
        assert response.status_code == 200
        text = text_of(response)
        assert "every-minute" in text and "0 0 1 1 *" in text and "Finished" in text
        assert "Job scheduler edits are not offered on this connection" in text
        assert "scheduler-edit" not in response.content.decode()
    edit = operator.get(reverse("scheduler_edit", args=["pg", "bullmq", "sch", "every-minute"]))
    assert edit.status_code == 501 and "does not offer job scheduler edits" in text_of(edit)
    removed = operator.post(
        reverse("queue_action", args=["pg", "bullmq", "sch", "remove-scheduler"]),
        {"id": "every-minute", "reason": "gone"},
    )
    assert removed.status_code == 501
    assert operator.get(reverse("api_queue", args=["pg", "bullmq", "sch"])).json()["schedulers"] == 3


def metric_samples(text: str) -> dict:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def test_api_and_metrics_carry_both_connections(both, settings, client, operator):
    settings.QUEUEWATCH_METRICS_TOKEN = TOKEN
    settings.QUEUEWATCH_WORKERS_INTERVAL_S = 0.5
    with monitor_thread(tick=0.3, name="side-by-side", lock_ttl_ms=2000) as monitor:
        # PostgreSQL is discovered whole, on a thread: its queues are followed a step later.
        wait_for(
            lambda: (
                monitor.stats["ticks"] >= 3
                and any(q.connection == "pg" and st.signals is not None for q, st in monitor.states.items())
            )
        )
        run_and_store(snapshots=monitor.tracker.current_snapshots())
        wait_for(
            lambda: (
                (
                    "queuewatch_queue_workers",
                    frozenset({"connection": "pg", "prefix": "bullmq", "queue": "plain"}.items()),
                )
                in metric_samples(client.get(reverse("metrics"), HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content.decode())
            )
        )
        scraped = metric_samples(client.get(reverse("metrics"), HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content.decode())

    def jobs(connection, prefix, queue, state):
        labels = {"connection": connection, "prefix": prefix, "queue": queue, "state": state}
        return scraped[("queuewatch_queue_jobs", frozenset(labels.items()))]

    assert jobs("pg", "bullmq", "plain", "waiting") == 3 and jobs("default", "bull", "orders", "failed") == 2
    assert scraped[("queuewatch_connection_up", frozenset({"connection": "pg"}.items()))] == 1
    assert scraped[("queuewatch_connection_up", frozenset({"connection": "default"}.items()))] == 1
    plain = frozenset({"connection": "pg", "prefix": "bullmq", "queue": "plain"}.items())
    assert scraped[("queuewatch_queue_workers", plain)] == 0

    def failing(**labels):
        (value,) = [
            v
            for (name, got), v in scraped.items()
            if name == "queuewatch_check_failing" and labels.items() <= dict(got).items()
        ]
        return value

    assert failing(connection="pg", queue="", kind="postgres.reachable") == 0
    assert failing(connection="pg", prefix="bullmq", queue="plain", kind="queue.no_workers") == 1

    listing = operator.get(reverse("api_queues")).json()
    assert {(c["name"], c["ok"]) for c in listing["connections"]} == {("default", True), ("pg", True)}
    found = {(q["connection"], q["name"]): q for q in listing["queues"]}
    assert found[("pg", "plain")]["counts"]["waiting"] == 3 and found[("default", "orders")]["counts"]["failed"] == 2
    overview = text_of(operator.get(reverse("overview")))
    assert "plain" in overview and "orders" in overview and "sch" in overview


def test_postgres_scheduler_pages_show_create_and_run_now_as_not_offered(both, operator):
    args = ["pg", "bullmq", "sch"]
    page = operator.get(reverse("scheduler_detail", args=[*args, "every-minute"]))
    assert page.status_code == 200
    text = text_of(page)
    assert "every-minute" in text and "The template is not read on this connection" in text
    assert "queue-run-scheduler" not in page.content.decode()
    assert "scheduler-create" not in operator.get(reverse("queue_schedulers", args=args)).content.decode()
    created = operator.get(reverse("scheduler_create", args=args))
    assert created.status_code == 501 and "does not offer job scheduler edits" in text_of(created)
    for action, body in (
        ("create-scheduler", {"id": "new", "name": "x", "every": "1000"}),
        ("run-scheduler", {"id": "every-minute"}),
    ):
        refused = operator.post(reverse("queue_action", args=[*args, action]), body)
        assert refused.status_code == 501, (action, refused.content[:300])
    assert operator.get(reverse("api_queue", args=args)).json()["schedulers"] == 3
