"""What the monitor persists: per-minute/hour queue series and stream cursors (resume points)."""

from __future__ import annotations

from django.db import models

from dashboard.core.upsert import Upsert
from queues.rates import COUNTERS


class QueuePoint(models.Model):
    """One queue's signals over one minute (``resolution=60``) or one hour (``3600``).

    Counters (completed, failed, stalled, added, stall_failed, attempt_failed) are totals over
    the period (``failed`` counts final failures, ``attempt_failed`` failed attempts that will
    be retried); gauges (waiting … oldest_age_ms) are the last value seen in it. Written by the monitor in
    the same transaction as its stream cursors, so a takeover resumes without double counting.
    """

    MINUTE, HOUR = 60, 3600

    connection = models.CharField(max_length=40)
    prefix = models.CharField(max_length=200)
    queue = models.CharField(max_length=200)
    resolution = models.PositiveIntegerField()
    start = models.DateTimeField()
    completed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    stalled = models.PositiveIntegerField(default=0)
    added = models.PositiveIntegerField(default=0)
    stall_failed = models.PositiveIntegerField(default=0)
    attempt_failed = models.PositiveIntegerField(default=0)
    waiting = models.PositiveIntegerField(default=0)
    active = models.PositiveIntegerField(default=0)
    delayed = models.PositiveIntegerField(default=0)
    prioritized = models.PositiveIntegerField(default=0)
    failed_depth = models.PositiveIntegerField(default=0)
    stalled_now = models.PositiveIntegerField(default=0)
    oldest_age_ms = models.BigIntegerField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["connection", "prefix", "queue", "resolution", "start"], name="uniq_queue_point"
            ),
        ]
        indexes = [models.Index(fields=["resolution", "start"])]


# QueuePoint's gauges (the counters are ``queues.rates.COUNTERS``) and its unique key.
POINT_GAUGES = ["waiting", "active", "delayed", "prioritized", "failed_depth", "stalled_now", "oldest_age_ms"]
POINT_KEY = ["connection", "prefix", "queue", "resolution", "start"]
# Upserts of points as tuples: the key, the counters, then the gauges when the row carries them
# (a re-counted past minute keeps the gauges it has).
COUNTER_POINTS = Upsert(QueuePoint, key=POINT_KEY, values=COUNTERS)
GAUGE_POINTS = Upsert(QueuePoint, key=POINT_KEY, values=[*COUNTERS, *POINT_GAUGES])


class StreamCursor(models.Model):
    """The last events-stream id the monitor has counted, per queue."""

    connection = models.CharField(max_length=40)
    prefix = models.CharField(max_length=200)
    queue = models.CharField(max_length=200)
    last_id = models.CharField(max_length=40)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["connection", "prefix", "queue"], name="uniq_stream_cursor")]


CURSORS = Upsert(StreamCursor, key=["connection", "prefix", "queue"], values=["last_id"])  # rows: key, last_id


class JobTimingPoint(models.Model):
    """One job name's wait and processing times over one minute (``resolution=60``) or one hour
    (``3600``), as bucket counts of ``queues.timings`` (bucket index -> observations), so minutes
    sum into hours exactly and any period's percentiles come from the summed buckets. Written by
    the monitor in the same transaction as its stream cursors, like ``QueuePoint``."""

    connection = models.CharField(max_length=40)
    prefix = models.CharField(max_length=200)
    queue = models.CharField(max_length=200)
    name = models.CharField(max_length=200)  # the job name (queues.timings.OTHER_NAME beyond the cap)
    resolution = models.PositiveIntegerField()
    start = models.DateTimeField()
    wait_buckets = models.JSONField(default=dict)
    wait_sum_ms = models.BigIntegerField(default=0)
    processing_buckets = models.JSONField(default=dict)
    processing_sum_ms = models.BigIntegerField(default=0)
    completed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)  # final failures
    attempt_failed = models.PositiveIntegerField(default=0)  # failed attempts that will be retried

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["connection", "prefix", "queue", "resolution", "start", "name"], name="uniq_job_timing_point"
            ),
        ]
        indexes = [models.Index(fields=["connection", "prefix", "queue", "resolution", "start"])]


TIMING_KEY = ["connection", "prefix", "queue", "resolution", "start", "name"]
TIMING_VALUES = [
    "wait_buckets",
    "wait_sum_ms",
    "processing_buckets",
    "processing_sum_ms",
    "completed",
    "failed",
    "attempt_failed",
]
