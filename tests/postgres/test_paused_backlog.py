"""A paused BullMQ-on-PostgreSQL queue's ready jobs are its backlog: that backend reports them
under ``paused`` (as its ``getJobCounts()`` does), and every figure meaning "jobs waiting for a
worker" counts them — the overview's waiting column, the backlog rule, the paused check and the
/metrics series, which gains the ``paused`` state for this kind only."""

from __future__ import annotations

import re
import time

import pytest
from django.urls import reverse

from dashboard.alerts.engine import evaluate_rules
from dashboard.alerts.models import Notification
from dashboard.connections.registry import reset_registry
from dashboard.live.rates import build_signals
from queues.alert_rules import ConnectionFacts, Facts
from queues.health.queue_checks import check_paused
from queues.rates import QueueSeries
from queues.timings import QueueTimings
from tests.support.alerting import T0, make_channel, make_rule
from tests.support.redis_db import point_at

pytestmark = [pytest.mark.postgres, pytest.mark.node, pytest.mark.django_db]


@pytest.fixture
def paused_snapshot(pg_source, pg_bullmq):
    (snap,) = pg_source.snapshots([pg_bullmq.queue("pg-paused")])
    node = pg_bullmq.reported("pg-paused")
    assert node["paused"] and snap.paused
    # As Node reported it: the ready jobs under "paused", none under "waiting".
    assert snap.counts["paused"] == node["allCounts"]["paused"] == 2 and snap.counts["waiting"] == 0
    assert snap.counts["prioritized"] == node["allCounts"]["prioritized"] == 1
    return snap


def test_a_paused_postgres_queue_s_ready_jobs_fire_a_backlog_rule(paused_snapshot):
    channel = make_channel()
    make_rule("pg backlog", threshold=2, channels=[channel])
    sig = build_signals(
        paused_snapshot,
        QueueSeries(),
        now_ms=int(time.time() * 1000),
        stalled_now=[],
        timings=QueueTimings(),
        workers=None,
    )
    evaluate_rules(facts=Facts(queues=[sig], connections={"pg": ConnectionFacts()}), now=T0)
    (sent,) = Notification.objects.all()
    assert sent.subject == "[FIRING:1] pg backlog — pg/pg-paused"
    assert sent.payload["alerts"][0]["value"] == 3  # 2 ready while paused + 1 prioritized

    paused = check_paused(paused_snapshot)
    assert paused.details["backlog"] == 3 and "3" in str(paused.summary)


def test_the_overview_shows_a_paused_postgres_queue_s_backlog(settings, pg_bullmq, logged_in):
    point_at(settings, pg_bullmq.spec("pg"))
    try:
        page = logged_in.get(reverse("overview")).content.decode()
    finally:
        reset_registry()
    link = reverse("queue", args=["pg", "bullmq", "pg-paused"])
    row = next(r for r in re.findall(r"<tr id=.*?</tr>", page, re.S) if f'href="{link}"' in r)
    waiting = re.search(r'class="num state-waiting">(.*?)</td>', row, re.S).group(1)
    assert 'value="2"' in waiting, waiting
