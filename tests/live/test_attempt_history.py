"""Failed attempts that will be retried, stored beside final failures: flushed with the minute's
other counters, rolled up into hours, restored on takeover, and shown on the queue page."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from dashboard.live import history
from dashboard.live.models import QueuePoint
from dashboard.live.rates import build_signals
from dashboard.monitor import persistence
from dashboard.monitor.tracking import QueueState, now_ms
from queues.keys import QueueRef
from queues.rates import minute_of
from queues.snapshot import COUNT_STATES, QueueSnapshot

pytestmark = pytest.mark.django_db

Q = QueueRef("default", "bull", "flappy")


def test_attempt_failures_are_flushed_rolled_up_and_restored_on_takeover():
    this_minute = minute_of(now_ms())
    leader = {Q: QueueState()}
    st = leader[Q]
    for m, (retried, final) in ((this_minute - 60_000, (7, 1)), (this_minute, (3, 0))):
        b = st.series.bucket(m)
        b.attempt_failed, b.failed = retried, final
        st.dirty_minutes.add(m)
    assert persistence.flush(leader, {}, monitor_name="test")

    stored = {
        int(p.start.timestamp() * 1000): (p.attempt_failed, p.failed)
        for p in QueuePoint.objects.filter(resolution=QueuePoint.MINUTE, queue=Q.name)
    }
    assert stored == {this_minute - 60_000: (7, 1), this_minute: (3, 0)}

    history.rollup_and_prune()
    hours = QueuePoint.objects.filter(resolution=QueuePoint.HOUR, queue=Q.name)
    assert sum(p.attempt_failed for p in hours) == 10

    standby = {Q: QueueState()}  # a takeover: the new leader starts from what was stored
    persistence.restore_series(standby, [Q])
    restored = standby[Q].series.minutes
    assert restored[this_minute - 60_000].attempt_failed == 7 and restored[this_minute].attempt_failed == 3
    sig = build_signals(
        QueueSnapshot(Q, dict.fromkeys(COUNT_STATES, 0), False, 0, taken_at=this_minute + 30_000),
        standby[Q].series,
        now_ms=this_minute + 30_000,
    )
    assert sig.attempt_failed_per_min[1] == pytest.approx(3 + 7 * 0.5)  # the minute leaving counts half
    assert sig.failed_per_min[1] == pytest.approx(0.5)


def test_queue_page_shows_the_attempt_failure_rate_next_to_final_failures(logged_in, prefixed_queues):
    from django.urls import reverse

    Q = prefixed_queues.queue("flappy")
    prefixed_queues.client.hset(Q.key("meta"), "opts.maxLenEvents", 10000)
    this_minute = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)
    QueuePoint.objects.create(
        connection=Q.connection,
        prefix=Q.prefix,
        queue=Q.name,
        resolution=QueuePoint.MINUTE,
        start=this_minute,
        attempt_failed=12,
        failed=2,
    )
    page = logged_in.get(reverse("queue", args=[Q.connection, Q.prefix, Q.name])).content.decode()
    # The first window (1m) of each rate, as the raw value the browser formats.
    first_window = r'</dt><dd[^>]*><span class="qw-rates"><span class="qw-rate-w"><data [^>]*value="([^"]*)"'
    failed = re.search(r"<dt>Failed /min" + first_window, page)
    retried = re.search(r"<dt>Failed attempts /min" + first_window, page)
    assert failed and retried and failed.start() < retried.start()
    assert float(failed.group(1)) == 2 and float(retried.group(1)) == 12
