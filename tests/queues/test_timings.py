"""Log-spaced histograms (queues.timings) and the job clock (queues.job_clock), without Redis:
bucket widths, percentiles within 10 %, exact sums, and the ready/active/finish rules."""

from __future__ import annotations

import random

import pytest

from queues.events import Event
from queues.job_clock import JobClock
from queues.keys import QueueRef
from queues.timings import (
    MAX_NAMES,
    OTHER_NAME,
    PROMETHEUS_LE_SECONDS,
    UPPER_BOUNDS,
    Histogram,
    NameMinute,
    QueueTimings,
    bucket_of,
    summarize,
)

Q = QueueRef("default", "bull", "jobs")


def test_no_bucket_is_wider_than_ten_percent():
    ratios = [hi / lo for lo, hi in zip(UPPER_BOUNDS[1:], UPPER_BOUNDS[2:])]
    assert max(ratios) < 1.10 and min(ratios) > 1.0


def test_prometheus_bounds_are_exact_bucket_bounds():
    for le in PROMETHEUS_LE_SECONDS:
        assert UPPER_BOUNDS[bucket_of(le * 1000)] == pytest.approx(le * 1000, rel=1e-12)
        assert bucket_of(le * 1000 * 1.000001) == bucket_of(le * 1000) + 1  # a value just above is in the next one


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_percentiles_are_within_ten_percent_of_the_exact_ones(seed):
    rng = random.Random(seed)
    values = [int(rng.lognormvariate(6, 1.5)) + 2 for _ in range(5000)]
    h = Histogram()
    for v in values:
        h.add(v)
    ordered = sorted(values)
    for q in (0.5, 0.95, 0.99):
        exact = ordered[-(-int(q * len(values) * 1000) // 1000) - 1]  # nearest rank
        assert h.percentile(q) == pytest.approx(exact, rel=0.10)
    assert h.count == 5000 and h.sum_ms == sum(values)


def test_minutes_sum_into_hours_exactly():
    rng = random.Random(7)
    minutes = [NameMinute() for _ in range(60)]
    everything = Histogram()
    for m in minutes:
        for _ in range(rng.randrange(50)):
            v = rng.randrange(1, 100_000)
            m.processing.add(v)
            everything.add(v)
        m.completed = rng.randrange(10)
    hour = NameMinute()
    for m in minutes:
        # Through the stored form (JSON keys are strings), as the roll-up reads it.
        hour.merge(
            NameMinute(
                processing=Histogram.from_json(m.processing.as_json(), m.processing.sum_ms), completed=m.completed
            )
        )
    assert hour.processing.counts == everything.counts and hour.processing.sum_ms == everything.sum_ms
    assert hour.completed == sum(m.completed for m in minutes)


def test_cumulative_prometheus_buckets():
    h = Histogram()
    for v in (3, 5, 6, 150, 1000, 20_000_000):
        h.add(v)
    cum = dict(zip(PROMETHEUS_LE_SECONDS, h.cumulative()))
    assert cum[0.005] == 2 and cum[0.01] == 3 and cum[0.2] == 4 and cum[1.0] == 5 and cum[10000] == 5
    assert h.count == 6


def test_summary_shape_is_the_api_contract():
    by_name = {"a": NameMinute(completed=1), "b": NameMinute(failed=2)}
    by_name["a"].wait.add(100)
    doc = summarize(by_name, window="5m")
    assert set(doc) == {"window", "names", "all"} and doc["window"] == "5m"
    assert set(doc["names"]["a"]) == {"wait_ms", "processing_ms", "completed", "failed", "attempt_failures"}
    assert set(doc["names"]["a"]["wait_ms"]) == {"p50", "p95", "p99"}
    assert doc["names"]["b"]["wait_ms"]["p50"] is None
    assert doc["all"]["completed"] == 1 and doc["all"]["failed"] == 2


def test_names_beyond_the_cap_are_counted_together():
    t = QueueTimings()
    for i in range(MAX_NAMES + 5):
        t.count(name=f"job-{i}", ts_ms=1000, kind="completed")
    names = t.window(now_ms=2000, minutes=1)
    assert len(names) == MAX_NAMES + 1 and names[OTHER_NAME].completed == 5


def ev(event: str, job: str, ts: int, **fields) -> Event:
    return Event(Q, f"{ts}-0", event, {"jobId": job, "event": event, **fields})


def test_wait_and_processing_from_events():
    clock = JobClock()
    assert clock.observe(ev("added", "1", 1000, name="email")) == []
    [wait] = clock.observe(ev("active", "1", 1250))
    assert (wait.name, wait.kind, wait.ms) == ("email", "wait", 250)
    [done] = clock.observe(ev("completed", "1", 1450))
    assert (done.kind, done.ms) == ("completed", 200)


def test_a_delayed_job_waits_from_its_due_time_and_a_retry_waits_again():
    clock = JobClock()
    clock.observe(ev("added", "1", 1000, name="report"))
    clock.observe(ev("delayed", "1", 1000, delay="5000"))
    clock.observe(ev("waiting", "1", 5600, prev="delayed"))  # promoted by a worker later than due
    [wait] = clock.observe(ev("active", "1", 5700))
    assert wait.ms == 700
    clock.observe(ev("delayed", "1", 5800, delay="6800"))  # backoff after a failed attempt
    clock.observe(ev("waiting", "1", 6900, prev="delayed"))
    [wait] = clock.observe(ev("active", "1", 6910))
    assert wait.ms == 110
    [failed] = clock.observe(ev("failed", "1", 7000))
    assert (failed.kind, failed.ms) == ("failed", 90)


def test_a_job_from_before_following_is_named_once_by_one_read():
    reads = []  # one entry per probe: the jobs it read

    class Probes:
        def job_fields(self, jobs, fields):
            assert list(fields) == ["name"]
            reads.append([job_id for _, job_id in jobs])
            return [[b"resize" if job_id == "7" else None] for _, job_id in jobs]

    clock = JobClock()
    assert clock.observe(ev("active", "7", 100)) == [] and clock.observe(ev("completed", "7", 300)) == []
    assert clock.observe(ev("completed", "8", 300)) == []
    samples = clock.resolve_names(lambda conn: Probes())
    assert sorted((s.name, s.kind, s.ms) for s in samples) == [
        ("(unknown)", "completed", None),
        ("resize", "completed", 200),
    ]
    assert len(reads) == 1 and len(reads[0]) == 2
    clock.observe(ev("waiting", "7", 400, prev="failed"))
    assert [s.name for s in clock.observe(ev("active", "7", 450))] == ["resize"]  # remembered: no second read
    assert clock.resolve_names(lambda conn: Probes()) == [] and len(reads) == 1


def test_warming_learns_without_counting_and_memory_is_bounded():
    clock = JobClock(memory=3)
    clock.warm(ev("added", "1", 100, name="a"))
    clock.warm(ev("active", "1", 150))
    [done] = clock.observe(ev("completed", "1", 400))
    assert (done.name, done.ms) == ("a", 250)
    for i in range(10):
        clock.observe(ev("added", f"n{i}", 500 + i, name="b"))
    assert len(clock) == 3
