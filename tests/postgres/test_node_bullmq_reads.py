"""Queuewatch's PostgreSQL reads against what real Node BullMQ 6.7 wrote and reported on the same
database (tests/node/pg_fixture.mjs): discovery, counts key for key with ``getJobCounts()``,
job pages in BullMQ's order, and the job page's fields."""

from __future__ import annotations

import json

import psycopg
import pytest

from queues.errors import JobNotFound
from queues.redact import Redactor
from queues.sources import ConnectionSpec, source_for

pytestmark = [pytest.mark.postgres, pytest.mark.node]

# Queuewatch lists these states newest first, the others in the order they will run.
NEWEST_FIRST = ("active", "completed", "failed", "waiting-children")
STATES = ("waiting", "prioritized", "delayed", "active", "completed", "failed", "waiting-children")


def test_discovery_finds_every_queue_node_made_schema_by_schema(pg_bullmq, pg_source):
    found = [(q.prefix, q.name) for q in pg_source.discover()]
    assert found == [(q["schema"], q["name"]) for q in pg_bullmq.report["queues"]]
    assert ("bullmq", "tenant/a b·ü") in found
    assert all(pg_source.queue_exists(pg_bullmq.queue(name, schema)) for schema, name in found)
    assert not pg_source.queue_exists(pg_bullmq.queue("pg-mixed", "other"))


def test_counts_equal_getjobcounts_key_for_key_including_a_paused_queue(pg_bullmq, pg_source):
    snaps = pg_source.snapshots(pg_source.discover())
    for snap in snaps:
        node = pg_bullmq.reported(snap.queue.name)
        assert snap.counts == node["allCounts"], snap.queue.name
        assert {k: v for k, v in snap.counts.items() if k != "paused"} == node["counts"], snap.queue.name
        assert snap.paused is node["paused"] and snap.schedulers == node["schedulers"]
    paused = next(s for s in snaps if s.queue.name == "pg-paused")
    assert paused.paused and paused.counts["paused"] == 2 and paused.counts["waiting"] == 0
    assert paused.total == 4  # the ready jobs of a paused queue are still counted


def test_the_oldest_waiting_job_is_the_one_a_worker_takes_next(pg_bullmq, pg_source):
    mixed = pg_bullmq.queue("pg-mixed")
    (snap,) = pg_source.snapshots([mixed])
    first = pg_bullmq.reported("pg-mixed")["ids"]["waiting"][0]
    assert snap.oldest_waiting_id == first  # the LIFO job, as at the tail of Redis's wait list
    created = pg_bullmq.report["jobs"][f"bullmq/pg-mixed/{first}"]["timestamp"]
    assert snap.oldest_waiting_ts == created and snap.oldest_waiting_age_ms >= 0


@pytest.mark.parametrize("name", ["pg-mixed", "pg-paused", "tenant/a b·ü", "other-schema-q"])
def test_job_pages_list_each_state_in_bullmqs_order(pg_bullmq, pg_source, name):
    node = pg_bullmq.reported(name)
    queue = pg_bullmq.queue(name, node["schema"])
    for state in STATES:
        expected = node["newestFirst" if state in NEWEST_FIRST else "ids"][state]
        page = pg_source.jobs.page(
            queue, state, page=1, page_size=25, name_filter="", scan_limit=2000, redactor=Redactor()
        )
        assert [j.id for j in page.jobs] == expected, state
        assert page.total == len(expected) and not page.has_next
        assert pg_source.jobs.first_page(queue, state, size=2)[0] == expected[:2]


def test_pages_and_name_filters_split_like_the_redis_lists(pg_bullmq, pg_source):
    mixed = pg_bullmq.queue("pg-mixed")
    waiting = pg_bullmq.reported("pg-mixed")["ids"]["waiting"]
    second = pg_source.jobs.page(
        mixed, "waiting", page=2, page_size=3, name_filter="", scan_limit=2000, redactor=Redactor()
    )
    assert [j.id for j in second.jobs] == waiting[3:] and second.total == 4 and second.pages == 2
    found = pg_source.jobs.page(
        mixed, "waiting", page=1, page_size=25, name_filter="WAIT-", scan_limit=2, redactor=Redactor()
    )
    assert [j.name for j in found.jobs] == ["wait-lifo", "wait-a"]  # only the first two looked at
    assert found.scanned == 2 and not found.scan_complete


def test_delayed_jobs_say_when_they_are_due(pg_bullmq, pg_source):
    mixed = pg_bullmq.queue("pg-mixed")
    jobs = pg_source.jobs.page(
        mixed, "delayed", page=1, page_size=25, name_filter="", scan_limit=2000, redactor=Redactor()
    ).jobs
    for job in jobs:
        node = pg_bullmq.report["jobs"][f"bullmq/pg-mixed/{job.id}"]
        assert job.due_at == node["timestamp"] + node["delay"]


def test_a_failed_jobs_page_shows_what_node_stored_with_secrets_redacted(pg_bullmq, pg_source):
    mixed = pg_bullmq.queue("pg-mixed")
    job_id = pg_bullmq.reported("pg-mixed")["ids"]["failed"][0]
    node = pg_bullmq.report["jobs"][f"bullmq/pg-mixed/{job_id}"]
    detail = pg_source.jobs.detail(mixed, job_id, cap=64 * 1024, redactor=Redactor())
    assert detail.state == "failed" == node["state"]
    assert json.loads(detail.data.text) == {"why": "first", "password": "[redacted]"}
    assert detail.failed_reason == node["failedReason"]
    assert detail.stacktrace == node["stacktrace"]
    s = detail.summary
    assert (s.name, s.timestamp, s.processed_on, s.finished_on) == (
        node["name"],
        node["timestamp"],
        node["processedOn"],
        node["finishedOn"],
    )
    assert (s.attempts_made, s.attempts_started, s.failed_reason) == (1, 1, "boom: first")
    assert not detail.returnvalue.present


def test_completed_delayed_and_prioritized_jobs_carry_their_own_fields(pg_bullmq, pg_source):
    mixed = pg_bullmq.queue("pg-mixed")
    reported = pg_bullmq.reported("pg-mixed")["ids"]
    done = pg_source.jobs.detail(mixed, reported["completed"][0], cap=65536, redactor=Redactor())
    node = pg_bullmq.report["jobs"][f"bullmq/pg-mixed/{reported['completed'][0]}"]
    assert json.loads(done.returnvalue.text) == {**node["returnvalue"], "token": "[redacted]"}
    later = pg_source.jobs.detail(mixed, reported["delayed"][0], cap=65536, redactor=Redactor())
    assert later.state == "delayed" and later.summary.attempts_allowed == 4
    prio = pg_source.jobs.detail(mixed, reported["prioritized"][0], cap=65536, redactor=Redactor())
    assert prio.state == "prioritized" and prio.summary.priority == 1
    odd = pg_source.jobs.detail(mixed, "custom-id/with slash", cap=65536, redactor=Redactor())
    assert odd.summary.name == "custom" and odd.state == "waiting"


def test_a_big_payload_is_capped_and_its_raw_download_is_whole_and_redacted(pg_bullmq, pg_source):
    mixed = pg_bullmq.queue("pg-mixed")
    big = next(i for i in pg_bullmq.reported("pg-mixed")["ids"]["waiting"] if i == "7")
    detail = pg_source.jobs.detail(mixed, big, cap=1024, redactor=Redactor())
    assert detail.data.truncated and len(detail.data.text) <= 1024 and detail.data.size > 5000
    raw = json.loads(pg_source.jobs.raw_field(mixed, big, "data", redactor=Redactor()))
    assert raw["apiKey"] == "[redacted]" and raw["big"] == "x" * 5000
    assert json.loads(pg_source.jobs.stored_data(mixed, big))["apiKey"] == "sk-live-123"  # stored as is
    live = pg_source.jobs.live_detail(mixed, big, redactor=Redactor())
    assert live is not None and live.state == "waiting" and live.summary.name == "wait-a"


def test_a_missing_job_is_not_found(pg_bullmq, pg_source):
    mixed = pg_bullmq.queue("pg-mixed")
    with pytest.raises(JobNotFound):
        pg_source.jobs.detail(mixed, "no-such-job", cap=1024, redactor=Redactor())
    assert pg_source.jobs.live_detail(mixed, "no-such-job", redactor=Redactor()) is None
    assert not pg_source.jobs.exists(mixed, "no-such-job") and pg_source.jobs.exists(mixed, "7")
    (gone,) = pg_source.jobs.summaries(mixed, ["no-such-job"], redactor=Redactor())
    assert not gone.exists


def test_select_on_the_schema_is_all_the_grant_queuewatch_needs(pg_bullmq, postgres_server):
    with psycopg.connect(pg_bullmq.url, autocommit=True) as admin:
        admin.execute("DROP ROLE IF EXISTS qw_reader")
        admin.execute("CREATE ROLE qw_reader LOGIN")
        for schema in ("bullmq", "other"):
            admin.execute(f"GRANT USAGE ON SCHEMA {schema} TO qw_reader")
            admin.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO qw_reader")
    url = pg_bullmq.url.replace("postgres@", "qw_reader@")
    source = source_for(ConnectionSpec("pg", url, ("bullmq", "other")))
    try:
        queues = source.discover()
        assert len(queues) == 4
        assert [s.counts for s in source.snapshots(queues)] == [q["allCounts"] for q in pg_bullmq.report["queues"]]
        assert source.jobs.detail(queues[0], "2", cap=1024, redactor=Redactor()).state == "failed"
    finally:
        source.close()
