"""The PostgreSQL snapshot counts completed and failed jobs again only when something was
committed since it last counted them, and stays equal to BullMQ's own ``get_counts`` (what
``Queue.getJobCounts()`` runs) through changes BullMQ makes without an event and through a
change committed after a read that could not see it."""

from __future__ import annotations

import time

import psycopg
import pytest

from queues.keys import QueueRef
from queues.postgres.event_window import Snapshot
from queues.postgres.finished_reuse import KeptCounts, base_for_next_read
from queues.postgres.job_commands import run
from queues.sources import ConnectionSpec, source_for
from tests.support.servers import run_node

GET_COUNTS_KEYS = ("active", "completed", "failed", "delayed", "waiting", "prioritized", "waiting-children")


@pytest.fixture(scope="module")
def seeded(postgres_server):
    """A queue Node BullMQ 6.7 filled: one failed job, one completed, one delayed."""
    url = postgres_server.create_database("snapshot_reuse")
    seed = run_node("pg_actions.mjs", "seed", url, "reuse")
    return url, seed


@pytest.fixture
def source(seeded):
    src = source_for(ConnectionSpec("pg", seeded[0], ("bullmq",)))
    yield src
    src.close()


def in_bullmq(conn: psycopg.Connection) -> psycopg.Connection:
    conn.execute("SET search_path = bullmq")
    return conn


def bullmq_counts(url: str, name: str = "reuse") -> dict[str, int]:
    """BullMQ's own ``get_counts`` command, run as Node runs it."""
    with in_bullmq(psycopg.connect(url, autocommit=True)) as conn:
        row = run(conn, "get_counts", (name,))
    assert row is not None and row[-1] is None  # not paused: every ready job is "waiting"
    return {key: int(n) for key, n in zip(GET_COUNTS_KEYS, row[:-1], strict=True)}


def read(source, name: str = "reuse") -> dict[str, int]:
    (snap,) = source.snapshots([QueueRef("pg", "bullmq", name)])
    assert snap.counts["paused"] == 0
    return {k: v for k, v in snap.counts.items() if k != "paused"}


def newest_event(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        return int(conn.execute("SELECT COALESCE(max(id), 0) FROM bullmq.event").fetchone()[0])


@pytest.mark.postgres
@pytest.mark.node
def test_an_unchanged_database_is_not_counted_again_and_any_commit_makes_it_count(seeded, source, postgres_server):
    url, _seed = seeded
    assert read(source) == bullmq_counts(url)
    assert source._snapshots.recounted == 1
    assert read(source) == bullmq_counts(url)
    assert source._snapshots.recounted == 0  # nothing was committed: the finished counts are kept
    with postgres_server.connect() as other:  # a write in another database of the cluster
        other.execute("SELECT pg_current_xact_id()")
    assert read(source) == bullmq_counts(url)
    assert source._snapshots.recounted == 1  # it cannot tell where the write was: counted again


@pytest.mark.postgres
@pytest.mark.node
def test_a_failed_job_removed_without_an_event_is_gone_from_the_next_read(seeded, source):
    url, seed = seeded
    before = read(source)
    assert before["failed"] == 1 and read(source) == before
    events = newest_event(url)
    with in_bullmq(psycopg.connect(url)) as conn:  # Job.remove(): BullMQ's remove publishes no event
        assert run(conn, "remove", ("reuse", seed["failed"], False)) == (1,)
    assert newest_event(url) == events
    after = read(source)
    assert after == bullmq_counts(url) and after["failed"] == 0 and after["completed"] == before["completed"]


@pytest.mark.postgres
@pytest.mark.node
def test_a_change_committed_after_a_read_that_could_not_see_it_is_in_the_read_after(seeded, source):
    url, _seed = seeded
    before = read(source)
    assert before["completed"] == 1
    with in_bullmq(psycopg.connect(url)) as conn:  # Queue.retryJobs({state: 'completed'}), left open
        assert run(conn, "retry_jobs", ("reuse", "completed", 1000, int(time.time() * 1000) + 1)) == (1,)
        assert read(source) == before  # not committed yet: the read cannot see it
        conn.commit()
    after = read(source)
    assert after == bullmq_counts(url)
    assert after["completed"] == 0 and after["waiting"] == before["waiting"] + 1


def snap(xmin: int, xmax: int, *running: int) -> Snapshot:
    return Snapshot(xmin, xmax, running)


def test_counts_read_while_a_transaction_ran_are_not_a_base_for_the_next_read():
    counted = KeptCounts().extended({"q": {"failed": 3}}, snap(100, 100))
    assert base_for_next_read(counted) is counted
    assert base_for_next_read(None).at is None
    # Counted while a transaction ran: its commit may not move xmax (an older id ending), so
    # nothing read at that snapshot is kept.
    assert KeptCounts().extended({"q": {"failed": 3}}, snap(95, 100, 95)).counts == {}
    assert counted.extended({"r": {}}, snap(100, 100)).counts == {"q": {"failed": 3}, "r": {}}


@pytest.mark.postgres
@pytest.mark.node
def test_a_read_while_an_older_transaction_runs_counts_everything_and_keeps_nothing(seeded, source, postgres_server):
    url, _seed = seeded
    run_node("pg_actions.mjs", "seed", url, "older")  # a failed and a completed job of its own
    with postgres_server.connect() as older, postgres_server.connect() as newer:
        older.execute("BEGIN")
        older.execute("SELECT pg_current_xact_id()")  # running, with the older transaction id
        newer.execute("SELECT pg_current_xact_id()")  # a newer one ends: the older is listed as running
        first = read(source, "older")
        assert first == bullmq_counts(url, "older") and first["failed"] == first["completed"] == 1
        assert read(source, "older") == first
        assert source._snapshots.recounted == 1  # its ending may not move xmax: nothing was kept
        older.execute("COMMIT")
