"""The job tools and the deduplication keys on BullMQ-on-PostgreSQL queues, checked by real Node
BullMQ 6.7 on PostgreSQL (``TZ`` not UTC): a worker runs jobs in the changed priority order, a
rescheduled job runs at its new time, a job failed by hand reads failed with its reason, a held
one is refused, and a released deduplication id lets the next add through. Redis Cluster does not
offer them yet: not shown, "not offered"."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from django.urls import reverse

from dashboard.connections.registry import reset_registry
from queues.keys import QueueRef
from queues.redact import Redactor
from queues.sources import ConnectionSpec, source_for
from tests.support.job_tools_node import ZONE
from tests.support.servers import run_node

pytestmark = [pytest.mark.postgres, pytest.mark.node]


@pytest.fixture(scope="module")
def pg_url(postgres_server) -> str:
    return postgres_server.create_database("pg_job_tools")


@pytest.fixture
def source(pg_url):
    made = source_for(ConnectionSpec("pg", pg_url, ("bullmq",)))
    yield made
    made.close()


def node(mode: str, url: str, queue: str, arg=None) -> dict:
    args = [mode, url, queue] + ([json.dumps(arg)] if arg is not None else [])
    return run_node("pg_job_tools.mjs", *args, env={"TZ": ZONE})


def fresh() -> str:
    return f"pg-tools-{uuid.uuid4().hex[:8]}"


def test_a_node_worker_runs_jobs_in_the_changed_priority_order(source, pg_url):
    name = fresh()
    queue = QueueRef("pg", "bullmq", name)
    ids = node("add", pg_url, name, [{"name": f"j{i}", "opts": {"priority": 10}} for i in range(3)])["ids"]
    plain = node("add", pg_url, name, [{"name": "plain"}])["ids"][0]
    tools = source.job_tools
    assert tools.change_priority(queue, job_id=ids[2], priority=1).outcome == "done"
    assert tools.change_priority(queue, job_id=plain, priority=20).outcome == "done"
    order = node("run", pg_url, name, {"count": 4})["order"]
    assert [o["id"] for o in order] == [ids[2], ids[0], ids[1], plain]
    assert tools.change_priority(queue, job_id=plain, priority=3).outcome == "wrong_state"  # completed
    assert tools.change_priority(queue, job_id="nope", priority=3).outcome == "missing"


def test_a_rescheduled_job_runs_at_its_new_time(source, pg_url):
    name = fresh()
    queue = QueueRef("pg", "bullmq", name)
    job_id = node("add", pg_url, name, [{"name": "later", "opts": {"delay": 3_600_000}}])["ids"][0]
    before = int(time.time() * 1000)  # whole ms, as the delay's base is taken (it was 0.8 ms early once)
    assert source.job_tools.change_delay(queue, job_id=job_id, delay_ms=1500).outcome == "done"
    after = time.time() * 1000
    order = node("run", pg_url, name, {"count": 1, "timeoutMs": 15000})["order"]
    assert [o["id"] for o in order] == [job_id]
    assert before + 1500 <= order[0]["processedOn"] < after + 1500 + 3000
    assert source.job_tools.change_delay(queue, job_id=job_id, delay_ms=10).outcome == "wrong_state"


def test_jobs_moved_to_failed_read_failed_with_their_reason(source, pg_url):
    name = fresh()
    queue = QueueRef("pg", "bullmq", name)
    waiting, delayed, prioritized = node(
        "add",
        pg_url,
        name,
        [{"name": "w"}, {"name": "d", "opts": {"delay": 600_000}}, {"name": "p", "opts": {"priority": 4}}],
    )["ids"]
    for job_id in (waiting, delayed, prioritized):
        result = source.job_tools.move_to_failed(queue, job_id=job_id, reason=f"bad ({job_id})")
        assert result.outcome == "done", result.message
        seen = node("job", pg_url, name, {"id": job_id})
        assert (seen["state"], seen["failedReason"], seen["attemptsMade"]) == ("failed", f"bad ({job_id})", 1)
    assert source.job_tools.move_to_failed(queue, job_id=waiting, reason="again").outcome == "wrong_state"


def test_a_released_deduplication_key_lets_the_next_add_through(source, pg_url):
    name = fresh()
    queue = QueueRef("pg", "bullmq", name)
    opts = {"deduplication": {"id": "report-7", "ttl": 600_000}}
    owner = node("add", pg_url, name, [{"name": "r", "opts": opts}])["ids"][0]
    assert node("add", pg_url, name, [{"name": "r", "opts": opts}])["ids"][0] == owner
    page = source.dedup.page(queue, cursor="0", redactor=Redactor())
    assert [(k.dedup_id, k.owner, k.owner_exists) for k in page.keys] == [("report-7", owner, True)]
    assert 0 < page.keys[0].ttl_ms <= 600_000 and not page.more
    assert source.dedup.release(queue, dedup_id="report-7", owner="other").outcome == "wrong_state"
    assert source.dedup.release(queue, dedup_id="report-7", owner=owner).outcome == "done"
    fresh_id = node("add", pg_url, name, [{"name": "r", "opts": opts}])["ids"][0]
    assert fresh_id != owner and node("owner", pg_url, name, {"dedupId": "report-7"})["id"] == fresh_id


@pytest.mark.django_db
def test_the_job_page_offers_the_tools_on_postgres_and_the_dedup_page_answers(settings, client, pg_url):
    from tests.support.accounts import user_with
    from tests.support.redis_db import point_at

    name = fresh()
    delayed = node("add", pg_url, name, [{"name": "later", "opts": {"delay": 600_000}}])["ids"][0]
    point_at(settings, ConnectionSpec("pg", pg_url, ("bullmq",)))
    try:
        client.force_login(user_with("operator"))
        args = ["pg", "bullmq", name]
        page = client.get(reverse("job", args=[*args, delayed])).content.decode()
        assert reverse("job_action", args=[*args, "change-delay", delayed]) in page
        posted = client.post(reverse("job_action", args=[*args, "change-delay", delayed]), {"delay": "2", "unit": "h"})
        assert posted.status_code == 200
        assert client.get(reverse("queue_dedup", args=args)).status_code == 200
    finally:
        reset_registry()


def test_the_deduplication_keys_are_paged(source, pg_url):
    name = fresh()
    queue = QueueRef("pg", "bullmq", name)
    node("add", pg_url, name, [{"name": "d", "opts": {"deduplication": {"id": f"k/{n:02d} ü"}}} for n in range(55)])
    first = source.dedup.page(queue, cursor="0", redactor=Redactor())
    assert len(first.keys) == 50 and first.more
    second = source.dedup.page(queue, cursor=first.cursor, redactor=Redactor())
    assert len(second.keys) == 5 and not second.more
    assert sorted(k.dedup_id for k in first.keys + second.keys) == [f"k/{n:02d} ü" for n in range(55)]
