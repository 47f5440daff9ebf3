"""Helpers for the alerting tests: real signals built the way the monitor builds them."""

from __future__ import annotations

import datetime as dt

from dashboard.alerts.models import AlertRule, Channel
from dashboard.live.rates import build_signals
from queues.alert_kinds.needs import SCHEDULERS
from queues.alert_rules import ConnectionFacts, Facts
from queues.keys import QueueRef
from queues.rates import QueueSeries, count_event
from queues.snapshot import COUNT_STATES, QueueSnapshot
from queues.timings import QueueTimings

T0 = dt.datetime(2026, 6, 1, 12, 0, 30, tzinfo=dt.UTC)


def ms(t: dt.datetime) -> int:
    return int(t.timestamp() * 1000)


def signals(
    name="orders",
    *,
    now=T0,
    counts=None,
    paused=False,
    oldest_age_s=None,
    events=(),
    stalled=(),
    connection="default",
    attempt_failures=(),
    timings=(),
    workers=None,
):
    """``events``: (event name, seconds before ``now``) pairs, counted like the monitor does;
    ``attempt_failures``: seconds before ``now`` of failed attempts that will be retried (the
    monitor counts them from candidate events, not with ``count_event``); ``timings``: (job
    name, "wait" or "processing", milliseconds, seconds before ``now``) samples, counted into
    the queue's ``QueueTimings`` as the monitor's job clock does."""
    snap = QueueSnapshot(
        QueueRef(connection, "bull", name),
        {**dict.fromkeys(COUNT_STATES, 0), **(counts or {})},
        paused,
        0,
        oldest_waiting_ts=None if oldest_age_s is None else ms(now) - int(oldest_age_s * 1000),
        taken_at=ms(now),
    )
    series = QueueSeries()
    for ev, before_s in events:
        count_event(series, ev, ms(now) - int(before_s * 1000), {})
    for before_s in attempt_failures:
        series.bucket(ms(now) - int(before_s * 1000)).attempt_failed += 1
    clock = QueueTimings()
    for job_name, figure, duration_ms, before_s in timings:
        clock.count(name=job_name, ts_ms=ms(now) - int(before_s * 1000), kind=figure, ms=duration_ms)
    return build_signals(snap, series, now_ms=ms(now), stalled_now=list(stalled), timings=clock, workers=workers)


def facts(*sigs, connections=None, schedulers=None) -> Facts:
    return Facts(
        queues=list(sigs),
        connections=connections or {"default": ConnectionFacts()},
        needs={SCHEDULERS.name: schedulers or {}},
    )


def make_rule(name="rule", *, channels=(), **fields) -> AlertRule:
    rule = AlertRule.objects.create(name=name, **{"kind": "backlog", "threshold": 10, "repeat_minutes": 0, **fields})
    rule.channels.set(channels)
    return rule


def make_channel(name="ops") -> Channel:
    return Channel.objects.create(name=name, kind=Channel.WEBHOOK, config={"url": "http://127.0.0.1:9/"})
