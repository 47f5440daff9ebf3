"""Finding jobs by a field of their data on BullMQ-on-PostgreSQL queues made by real Node BullMQ
6.7: the same ``path = value`` rule as on Redis (one home: ``DataQuery.matches`` on the redacted
data), bounded steps that say how far they got and continue there, data over the size searched
counted and not matched, the page and API answering as they do on Redis, and a background search
walking a PostgreSQL state in the monitor with nobody watching."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from dashboard.browse.models import SearchTask
from dashboard.connections.registry import reset_registry
from dashboard.core.db import db_retry
from queues.data_search import MAX_MATCHES, DataQuery
from queues.keys import QueueRef
from queues.redact import Redactor
from queues.sources import ConnectionSpec, source_for
from tests.support.accounts import token_for, user_with
from tests.support.live import monitor_thread
from tests.support.redis_db import point_at
from tests.support.servers import run_node
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.node]


def search(source, queue, state: str, where: str, *, offset: int = 0, scan_limit: int = 1000, cap: int = 100_000):
    return source.jobs.search_data(
        queue,
        state,
        query=DataQuery.parse(where),
        offset=offset,
        scan_limit=scan_limit,
        data_cap=cap,
        redactor=Redactor(),
    )


def test_a_search_by_data_finds_the_job_node_stored_with_that_field(pg_source, pg_bullmq):
    mixed = pg_bullmq.queue("pg-mixed")
    ids = pg_bullmq.reported("pg-mixed")["ids"]
    found = search(pg_source, mixed, "failed", "why = first")
    assert [j.name for j in found.matches] == ["boom"] and found.matches[0].id in ids["failed"]
    assert (found.examined, found.in_state, found.complete) == (2, 2, True)
    # Numbers match as numbers (10.0 is 10), strings only as written.
    waiting = search(pg_source, mixed, "waiting", "n = 10.0")
    assert [j.name for j in waiting.matches] == ["wait-a"] and waiting.in_state == len(ids["waiting"])
    assert search(pg_source, mixed, "waiting", "n = ten").matches == []
    assert [j.name for j in search(pg_source, mixed, "prioritized", "n = 21").matches] == ["prio-1"]
    delayed = search(pg_source, mixed, "delayed", "n = 31").matches
    assert [j.name for j in delayed] == ["later-1h"] and delayed[0].due_at is not None


def test_a_redacted_secret_is_never_matched(pg_source, pg_bullmq):
    mixed = pg_bullmq.queue("pg-mixed")
    assert search(pg_source, mixed, "failed", "password = hunter2").matches == []
    assert search(pg_source, mixed, "waiting", "apiKey = sk-live-123").matches == []


def test_data_over_the_size_searched_is_counted_not_matched(pg_source, pg_bullmq):
    mixed = pg_bullmq.queue("pg-mixed")
    found = search(pg_source, mixed, "waiting", "n = 10", cap=1000)  # wait-a carries 5,000 characters
    assert found.matches == [] and found.too_large == 1 and found.complete


def test_a_step_is_bounded_and_the_next_continues_where_it_stopped(pg_source, pg_bullmq):
    mixed = pg_bullmq.queue("pg-mixed")
    waiting = pg_bullmq.reported("pg-mixed")["ids"]["waiting"]  # in BullMQ's order, as the page shows
    seen, offset, steps = [], 0, 0
    while offset is not None:
        step = search(pg_source, mixed, "waiting", "n = 11", offset=offset, scan_limit=1)
        assert step.start == offset and step.examined == offset + 1
        seen += [j.id for j in step.matches]
        offset, steps = step.next_offset, steps + 1
    assert steps == len(waiting) and seen == [waiting[waiting.index(seen[0])]] and len(seen) == 1


@pytest.mark.django_db(transaction=True)
def test_a_big_failed_state_stops_after_enough_candidates_and_pages_and_api_answer(
    postgres_db, settings, logged_in, redis_db
):
    made = run_node("pg_bulk.mjs", "mix", postgres_db.url, "big", str(MAX_MATCHES + 20), "0", timeout=150)
    spec = ConnectionSpec("pg", postgres_db.url, ("bullmq",))
    source = source_for(spec)
    try:
        queue = QueueRef("pg", "bullmq", "big")
        first = search(source, queue, "failed", "i = 7")  # every job has an "i": each is a candidate
        assert first.examined == MAX_MATCHES and first.in_state == MAX_MATCHES + 20 and not first.complete
        rest = search(source, queue, "failed", "i = 7", offset=first.examined)
        matches = first.matches + rest.matches
        assert len(matches) == 1 and matches[0].id in made["failed"] and rest.complete
    finally:
        source.close()

    point_at(settings, ConnectionSpec("default", redis_db.url, ("bull",)), spec)
    try:
        settings.QUEUEWATCH_SCAN_SAMPLE = 1000
        answer = logged_in.get(reverse("api_queue_find", args=["pg", "bullmq", "big"]), {"where": "i = 7", "offset": 0})
        assert answer.status_code == 200 and answer.json()["examined"] == MAX_MATCHES
        page = logged_in.get(reverse("queue_find", args=["pg", "bullmq", "big"]), {"state": "failed", "where": "i = 7"})
        assert page.status_code == 200 and "not offered" not in page.content.decode().lower()
        assert f'data-examined="{MAX_MATCHES}"' in page.content.decode()
    finally:
        reset_registry()


@pytest.mark.django_db(transaction=True)
def test_a_background_search_walks_a_postgres_state_with_nobody_watching(live_setup, redis_db, postgres_db, settings):
    made = run_node("pg_bulk.mjs", "mix", postgres_db.url, "deep", "250", "0", timeout=150)
    point_at(
        settings, ConnectionSpec("default", redis_db.url, ("bull",)), ConnectionSpec("pg", postgres_db.url, ("bullmq",))
    )
    settings.QUEUEWATCH_SCAN_SAMPLE = 100
    settings.QUEUEWATCH_SEARCH_PACE_MS = 20
    token = token_for(user_with(None, username="pg-finder"))
    started = Client().post(
        reverse("api_search_start", args=["pg", "bullmq", "deep"]),
        json.dumps({"state": "failed", "where": "i = 42"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert started.status_code == 201, started.content
    pk = started.json()["id"]
    try:
        with monitor_thread(tick=0.3, name="pg-search", lock_ttl_ms=2000):
            wait_for(lambda: db_retry(lambda: SearchTask.objects.get(pk=pk)).finished, timeout=60)
    finally:
        reset_registry()
    done = SearchTask.objects.get(pk=pk)
    assert (done.state, done.examined, done.in_state) == (SearchTask.DONE, 250, 250)
    assert len(done.matches) == 1 and done.matches[0]["id"] in made["failed"]
