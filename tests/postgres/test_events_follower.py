"""The PostgreSQL events follower against a real PostgreSQL whose BullMQ schema Node BullMQ 6.7
migrated: events written by BullMQ's own SQL (``publish_event``, the function every operation
calls) are read by cursor for every followed queue, with ``LISTEN`` waking the read; an event
whose transaction commits after a later id was read is still delivered, once; BullMQ's trim and
a transaction left open too long are reported as gaps; a new follower resumes the cursors."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from queues.keys import QueueRef
from queues.postgres.events import PostgresEventsFollower, listen_connection
from queues.sources import ConnectionSpec, source_for
from tests.support.servers import run_node

pytestmark = [pytest.mark.postgres, pytest.mark.node]


@pytest.fixture(scope="module")
def migrated(postgres_server) -> str:
    """A database whose ``bullmq`` schema Node BullMQ migrated (and whose queue ``seeded`` has
    two jobs)."""
    url = postgres_server.create_database("events_follower")
    run_node("pg_fixture.mjs", "add", url, "seeded", "2")
    yield url
    postgres_server.drop_database("events_follower")


def queue(name: str) -> QueueRef:
    return QueueRef("pg", "bullmq", name)


def publish(conn: psycopg.Connection, name: str, event: str, job: str) -> int:
    """BullMQ's own way to write an event (``publish_event``, in the caller's transaction)."""
    row = conn.execute(
        "SELECT bullmq.publish_event(%s, %s, jsonb_build_object('jobId', %s::text, 'prev', 'waiting'))",
        [name, event, job],
    ).fetchone()
    return int(row[0])


def follower_for(url: str, **options) -> PostgresEventsFollower:
    return PostgresEventsFollower(listen_connection(url), connection="pg", windows={}, **options)


def read_until(follower, predicate, *, timeout: float = 10.0, block_ms: int = 200):
    """Read (events, gaps) batches until ``predicate(all events, all gaps)``; returns them."""
    events, gaps = [], {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got, lost = follower.read(block_ms)
        events += got
        gaps.update(lost)
        if predicate(events, gaps):
            return events, gaps
    raise AssertionError(f"never: {[(e.queue.name, e.stream_id, e.name) for e in events]} gaps {gaps}")


def test_it_reads_what_node_bullmq_wrote_and_wakes_on_notify(migrated):
    follower = follower_for(migrated)
    try:
        assert follower.follow([queue("seeded"), queue("quiet")]) == [queue("seeded"), queue("quiet")]
        assert follower.last_ids[queue("quiet")] == "0"
        # The tail before the cursor: Node's two adds, as Redis stream fields.
        recent = follower.recent([queue("seeded")], count=10)
        assert [e.name for e in recent] == ["added", "waiting", "added", "waiting"]
        assert recent[0].fields == {"event": "added", "jobId": "1", "name": "added"}
        assert abs(recent[0].ts_ms - time.time() * 1000) < 120_000
        assert follower.read(0) == ([], {})  # the catch-up read: nothing new

        run_node("pg_fixture.mjs", "add", migrated, "seeded", "1")
        events, _ = read_until(follower, lambda ev, _g: len(ev) >= 2)
        assert [(e.name, e.job_id) for e in events] == [("added", "3"), ("waiting", "3")]
        assert follower.last_ids[queue("seeded")] == events[-1].stream_id

        # A blocking read returns when BullMQ notifies, not at the end of its block.
        with psycopg.connect(migrated, autocommit=True) as writer:
            threading.Timer(0.3, publish, [writer, "quiet", "completed", "9"]).start()
            started = time.monotonic()
            events, gaps = read_until(follower, lambda ev, _g: ev, block_ms=5000)
            assert time.monotonic() - started < 3
        assert [(e.queue.name, e.name, e.job_id) for e in events] == [("quiet", "completed", "9")]
        assert gaps == {}
    finally:
        follower.close()


def test_an_event_committed_after_a_later_id_was_read_is_delivered_once(migrated):
    follower = follower_for(migrated)
    name = "out-of-order"
    try:
        follower.follow([queue(name)])
        with psycopg.connect(migrated) as slow, psycopg.connect(migrated) as fast:
            early = publish(slow, name, "active", "1")  # draws its id first, commits last
            later = publish(fast, name, "active", "2")
            assert early < later
            fast.commit()
            events, _ = read_until(follower, lambda ev, _g: ev)
            assert [e.stream_id for e in events] == [str(later)]
            assert follower.read(300) == ([], {})  # still in flight: nothing to deliver yet
            slow.commit()
        events, gaps = read_until(follower, lambda ev, _g: ev)
        assert [(e.stream_id, e.job_id) for e in events] == [(str(early), "1")]
        assert gaps == {}
        # Once settled, nothing is delivered twice and the window closes.
        deadline = time.monotonic() + 5
        while follower.windows["bullmq"].pending and time.monotonic() < deadline:
            assert follower.read(100) == ([], {})
        assert not follower.windows["bullmq"].pending
        assert follower.windows["bullmq"].cursors[name].floor == later
    finally:
        follower.close()


def test_a_transaction_holding_events_too_long_is_a_gap_and_an_idle_one_is_not(migrated):
    follower = follower_for(migrated, settle_s=0.6)
    name = "held-open"
    try:
        follower.follow([queue(name)])
        with psycopg.connect(migrated) as idle, psycopg.connect(migrated) as holder:
            idle.execute("CREATE TEMP TABLE scratch (n int)")  # a transaction id, no event
            idle.execute("INSERT INTO scratch VALUES (1)")
            with psycopg.connect(migrated, autocommit=True) as writer:
                publish(writer, name, "active", "1")
            events, gaps = read_until(follower, lambda ev, _g: ev)
            # Only the idle transaction runs: the window waits for it, then settles quietly.
            time.sleep(0.7)
            assert follower.read(100) == ([], {})
            assert not follower.windows["bullmq"].pending

            publish(holder, name, "active", "2")  # drawn now, committed much later
            with psycopg.connect(migrated, autocommit=True) as writer:
                publish(writer, name, "active", "3")
            events, gaps = read_until(follower, lambda ev, g: g, timeout=5)
            assert [e.job_id for e in events] == ["3"]
            lost_from, lost_to = gaps[queue(name)]
            assert lost_from <= lost_to
    finally:
        follower.close()


def test_events_trimmed_before_they_were_read_are_a_gap(migrated):
    name = "trimmed"
    with psycopg.connect(migrated, autocommit=True) as writer:
        writer.execute("INSERT INTO bullmq.meta (queue, field, value) VALUES (%s, 'opts.maxLenEvents', '5')", [name])
        publish(writer, name, "active", "0")
        follower = follower_for(migrated)
        try:
            follower.follow([queue(name)])
            for job in range(1, 4):
                publish(writer, name, "active", str(job))
            events, gaps = read_until(follower, lambda ev, _g: len(ev) == 3)
            assert gaps == {}  # within maxLenEvents: nothing lost
            # BullMQ trims on every 256th id of the sequence, the ids <= that id - maxLenEvents.
            job, trimmed_at = 3, None
            while trimmed_at is None or job < 300:
                job += 1
                event_id = publish(writer, name, "active", str(job))
                if event_id % 256 == 0 and trimmed_at is None:
                    trimmed_at = event_id
            events, gaps = read_until(follower, lambda ev, g: g)
            assert queue(name) in gaps
            assert int(events[0].stream_id) == trimmed_at - 4  # the oldest BullMQ kept
            assert events[-1].job_id == str(job)
        finally:
            follower.close()


def test_a_new_follower_resumes_the_cursors_and_catches_up(migrated):
    source = source_for(ConnectionSpec("pg", migrated, ("bullmq",)))
    name = "resumed"
    try:
        first = source.events_follower(block_ms=200)
        first.follow([queue(name)])
        with psycopg.connect(migrated, autocommit=True) as writer:
            publish(writer, name, "active", "1")
            read_until(first, lambda ev, _g: ev)
            cursors = dict(first.last_ids)
            first.close()  # the connection is lost
            publish(writer, name, "active", "2")
            publish(writer, name, "active", "3")
        second = source.events_follower(block_ms=200)
        assert second.follow([queue(name)], cursors) == [queue(name)]
        started = time.monotonic()
        events, gaps = second.read(5000)  # the catch-up read does not wait
        assert time.monotonic() - started < 2
        assert [e.job_id for e in events] == ["2", "3"] and gaps == {}
        second.close()
    finally:
        source.close()
