"""Events missed between a queue's first read and where following its stream starts (the
follower takes up a newly followed queue only after its current blocking read), or lost to a
trimmed stream: which jobs they touched is unknown, so the next refresh reads every watched job
of the queue again (a job page opened on a new queue once stayed at the progress it first
showed), and its watched lists, once."""

from __future__ import annotations

from dashboard.connections.registry import get_registry
from dashboard.monitor.tracking import CountTracker
from queues.keys import QueueRef
from queues.live_counts import LiveCounts
from queues.snapshot import COUNT_STATES, QueueSnapshot

Q = QueueRef("default", "bull", "new-tenant")


def read_at(tracker: CountTracker, last_event_id: str) -> None:
    """The queue read exactly when its stream ended at ``last_event_id``."""
    snapshot = QueueSnapshot(
        queue=Q, counts=dict.fromkeys(COUNT_STATES, 0), paused=False, schedulers=0, last_event_id=last_event_id
    )
    tracker.states[Q].snapshot = snapshot
    tracker.states[Q].live = LiveCounts(snapshot)


def test_following_that_starts_after_the_first_read_makes_watched_jobs_read_again(settings, scratch_queues):
    tracker = CountTracker(get_registry())
    tracker.add_queues([Q])
    read_at(tracker, "1000-0")
    tracker.following_from({Q: "1500-0"})  # a progress event at 1500 came before the stream's start
    missed = tracker.take_changes(Q)
    assert missed.events_missed and missed.moves is None and missed.jobs == frozenset()
    assert not tracker.take_changes(Q).events_missed  # once: the next refresh reads them


def test_following_from_the_first_reads_own_position_misses_nothing(settings, scratch_queues):
    tracker = CountTracker(get_registry())
    tracker.add_queues([Q])
    read_at(tracker, "1000-0")
    tracker.following_from({Q: "1000-0"})
    changes = tracker.take_changes(Q)
    assert not changes.events_missed and changes.moves == []


def test_a_trimmed_stream_makes_watched_jobs_read_again(settings, scratch_queues):
    tracker = CountTracker(get_registry())
    tracker.add_queues([Q])
    read_at(tracker, "1000-0")
    tracker.stream_gap(Q, lost_from=1_000, lost_to=2_000)
    assert tracker.take_changes(Q).events_missed
