"""History charts: the series ``dashboard.live.history.queue_history`` builds from stored
``QueuePoint`` rows, the JSON view over it, and the page wiring (chart section, scripts)."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from dashboard.live.history import RANGES, SERIES, queue_history
from dashboard.live.models import QueuePoint
from queues.keys import QueueRef

pytestmark = pytest.mark.django_db

UTC = dt.UTC
NOW = dt.datetime(2025, 3, 4, 12, 30, 42, tzinfo=UTC)  # inside the minute 12:30 and the hour 12:00
Q1 = QueueRef("default", "bull", "q1")
DLQ = QueueRef("default", "bull", "q1-dlq")  # matches the default pattern "*-dlq"
UPLOT = "uPlot-1.6.32"


def point(queue: QueueRef, start: dt.datetime, resolution: int = QueuePoint.MINUTE, **fields) -> QueuePoint:
    return QueuePoint.objects.create(
        connection=queue.connection, prefix=queue.prefix, queue=queue.name, resolution=resolution, start=start, **fields
    )


def ts(when: dt.datetime) -> int:
    return int(when.timestamp())


def at(data: dict, when: dt.datetime) -> int:
    """Index of the period starting at ``when``."""
    return data["t"].index(ts(when))


# ---- queue_history ------------------------------------------------------------------------


def test_1h_is_sixty_minute_points_ending_with_the_current_minute():
    data = queue_history(Q1, "1h", NOW)
    this_minute = NOW.replace(second=0)
    assert data["range"] == "1h" and data["resolution"] == 60 and data["is_dlq"] is False
    assert len(data["t"]) == 60
    assert data["t"][-1] == ts(this_minute)
    assert data["t"][0] == ts(this_minute - dt.timedelta(minutes=59))
    assert all(b - a == 60 for a, b in zip(data["t"], data["t"][1:]))
    assert data["queue"] == {"connection": "default", "prefix": "bull", "name": "q1"}
    for name in SERIES:
        assert data[name] == [None] * 60, name  # no stored points: all gaps


def test_minute_points_give_rates_gauges_and_nulls_for_gaps():
    m = NOW.replace(second=0)
    point(
        Q1,
        m - dt.timedelta(minutes=2),
        completed=12,
        failed=3,
        stalled=1,
        added=20,
        stall_failed=1,
        attempt_failed=8,
        waiting=40,
        prioritized=5,
        active=7,
        delayed=9,
        failed_depth=30,
        oldest_age_ms=95_500,
    )
    point(Q1, m, completed=4, waiting=2)  # oldest_age_ms stays null: nothing waiting long
    data = queue_history(Q1, "1h", NOW)
    i = at(data, m - dt.timedelta(minutes=2))
    assert data["completed"][i] == 12
    assert data["failed"][i] == 3
    assert data["attempt_failed"][i] == 8  # retried attempts, apart from the 3 final failures
    assert data["dlq_growth"][i] == 3  # a normal queue's dead letters are its failures
    assert data["stalled"][i] == 1
    assert data["backlog"][i] == 45  # waiting + prioritized
    assert data["oldest_age_s"][i] == 95.5
    assert data["dlq_depth"][i] == 30  # the failed set
    # The minute between the two points was not stored: a gap in every series.
    for name in SERIES:
        assert data[name][i + 1] is None, name
    assert data["completed"][-1] == 4 and data["backlog"][-1] == 2 and data["oldest_age_s"][-1] is None
    assert data["failed"][-1] == 0


def test_points_outside_the_range_or_of_other_queues_and_resolutions_are_left_out():
    m = NOW.replace(second=0)
    point(Q1, m - dt.timedelta(minutes=60), completed=1)  # one minute too old for 1h
    point(Q1, m + dt.timedelta(minutes=1), completed=2)  # in the future
    point(QueueRef("default", "bull", "other"), m, completed=3)
    point(QueueRef("other-conn", "bull", "q1"), m, completed=4)
    point(QueueRef("default", "{app:bull}", "q1"), m, completed=5)
    point(Q1, m.replace(minute=0), resolution=QueuePoint.HOUR, completed=600)
    data = queue_history(Q1, "1h", NOW)
    assert data["completed"] == [None] * 60


def test_24h_is_1440_minute_points():
    m = NOW.replace(second=0)
    oldest = m - dt.timedelta(minutes=1439)
    point(Q1, oldest, completed=7, failed=1)
    point(Q1, oldest - dt.timedelta(minutes=1), completed=99)  # just outside
    point(Q1, m - dt.timedelta(hours=3), completed=5, stalled=2, waiting=10)
    data = queue_history(Q1, "24h", NOW)
    assert data["resolution"] == 60 and len(data["t"]) == 1440
    assert data["t"][0] == ts(oldest) and data["t"][-1] == ts(m)
    assert data["completed"][0] == 7 and data["failed"][0] == 1
    i = at(data, m - dt.timedelta(hours=3))
    assert data["completed"][i] == 5 and data["stalled"][i] == 2 and data["backlog"][i] == 10
    assert sum(v is not None for v in data["completed"]) == 2


def test_7d_is_168_hour_points_with_rates_per_minute():
    h = NOW.replace(minute=0, second=0)
    point(
        Q1,
        h - dt.timedelta(hours=5),
        resolution=QueuePoint.HOUR,
        completed=600,
        failed=90,
        stalled=3,
        added=1200,
        attempt_failed=120,
        waiting=8,
        prioritized=2,
        failed_depth=77,
        oldest_age_ms=7_200_000,
    )
    point(Q1, h - dt.timedelta(hours=167), resolution=QueuePoint.HOUR, completed=60)
    point(Q1, h - dt.timedelta(hours=168), resolution=QueuePoint.HOUR, completed=6000)  # outside
    point(Q1, h - dt.timedelta(hours=5), completed=1)  # a minute point: not used for 7d
    data = queue_history(Q1, "7d", NOW)
    assert data["resolution"] == 3600 and len(data["t"]) == 168
    assert data["t"][-1] == ts(h) and data["t"][0] == ts(h - dt.timedelta(hours=167))
    assert all(b - a == 3600 for a, b in zip(data["t"], data["t"][1:]))
    i = at(data, h - dt.timedelta(hours=5))
    assert data["completed"][i] == 10  # 600 in the hour = 10 per minute
    assert data["failed"][i] == 1.5
    assert data["attempt_failed"][i] == 2
    assert data["dlq_growth"][i] == 1.5
    assert data["stalled"][i] == pytest.approx(0.05)
    # Gauges are not divided: the last value seen in the hour.
    assert data["backlog"][i] == 10 and data["dlq_depth"][i] == 77 and data["oldest_age_s"][i] == 7200
    assert data["completed"][0] == 1
    assert data["completed"][i + 1] is None and data["completed"][-1] is None


def test_dead_letter_queue_growth_is_added_and_depth_is_waiting():
    m = NOW.replace(second=0)
    point(DLQ, m - dt.timedelta(minutes=1), added=6, failed=1, waiting=250, prioritized=0, failed_depth=3)
    data = queue_history(DLQ, "1h", NOW)
    i = at(data, m - dt.timedelta(minutes=1))
    assert data["is_dlq"] is True
    assert data["dlq_growth"][i] == 6
    assert data["dlq_depth"][i] == 250
    assert data["failed"][i] == 1  # still shown as the queue's own failures
    h = NOW.replace(minute=0, second=0)
    point(DLQ, h, resolution=QueuePoint.HOUR, added=90, waiting=300)
    data = queue_history(DLQ, "7d", NOW)
    assert data["dlq_growth"][-1] == 1.5 and data["dlq_depth"][-1] == 300


def test_dead_letter_queue_from_the_configured_map(settings):
    settings.QUEUEWATCH_DLQ_MAP = {"graveyard": "orders"}
    q = QueueRef("default", "bull", "graveyard")
    point(q, NOW.replace(second=0), added=4, failed=0, waiting=9, failed_depth=1)
    data = queue_history(q, "1h", NOW)
    assert data["is_dlq"] is True and data["dlq_growth"][-1] == 4 and data["dlq_depth"][-1] == 9


def test_unknown_range_is_a_value_error():
    for bad in ("", "2h", "1H", "7d ", None):
        with pytest.raises(ValueError):
            queue_history(Q1, bad, NOW)
    assert set(RANGES) == {"1h", "24h", "7d", "90d"}


def test_naive_now_is_taken_as_utc():
    assert queue_history(Q1, "1h", NOW.replace(tzinfo=None))["t"] == queue_history(Q1, "1h", NOW)["t"]


# ---- the JSON view ------------------------------------------------------------------------


def history_url(name="q1", prefix="bull", connection="default"):
    return reverse("queue_history", args=[connection, prefix, name])


@pytest.fixture
def queues(prefixed_queues):
    for name in ("q1", "q1-dlq"):
        prefixed_queues.client.hset(prefixed_queues.queue(name).key("meta"), "opts.maxLenEvents", 10000)
    return prefixed_queues


def test_view_url_shape():
    assert history_url() == "/q/default/bull/q1/history"


def test_view_returns_json_series_for_each_range(logged_in, queues):
    now = timezone.now()
    m = now.replace(second=0, microsecond=0) - dt.timedelta(minutes=10)
    h = now.replace(minute=0, second=0, microsecond=0) - dt.timedelta(hours=10)
    point(queues.queue("q1"), m, completed=30, failed=2, waiting=5, prioritized=1, oldest_age_ms=2500)
    point(queues.queue("q1"), h, resolution=QueuePoint.HOUR, completed=120, failed=30)

    r = logged_in.get(history_url(prefix=queues.prefix))  # 1h by default
    assert r.status_code == 200 and r["Content-Type"].startswith("application/json")
    assert r["Cache-Control"] == "no-store"
    data = r.json()
    assert data["range"] == "1h" and len(data["t"]) == 60
    i = at(data, m)
    assert data["completed"][i] == 30 and data["backlog"][i] == 6 and data["oldest_age_s"][i] == 2.5

    data = logged_in.get(history_url(prefix=queues.prefix), {"range": "24h"}).json()
    assert len(data["t"]) == 1440 and data["completed"][at(data, m)] == 30

    data = logged_in.get(history_url(prefix=queues.prefix), {"range": "7d"}).json()
    i = at(data, h)
    assert len(data["t"]) == 168 and data["completed"][i] == 2 and data["failed"][i] == 0.5
    assert data["completed"][i - 1] is None


def test_view_handles_dead_letter_queues(logged_in, queues):
    m = timezone.now().replace(second=0, microsecond=0) - dt.timedelta(minutes=3)
    point(queues.queue("q1-dlq"), m, added=11, failed=0, waiting=70, failed_depth=0)
    data = logged_in.get(history_url("q1-dlq", prefix=queues.prefix), {"range": "1h"}).json()
    i = at(data, m)
    assert data["is_dlq"] is True and data["dlq_growth"][i] == 11 and data["dlq_depth"][i] == 70


def test_view_bad_range_is_400_json(logged_in, queues):
    r = logged_in.get(history_url(prefix=queues.prefix), {"range": "1y"})
    assert r.status_code == 400
    assert r.json()["error"] == "bad_request" and "1y" in r.json()["message"]


def test_view_unknown_queue_or_connection_is_404(logged_in, queues):
    assert logged_in.get(history_url("nope", prefix=queues.prefix)).status_code == 404
    assert logged_in.get(history_url(prefix="other")).status_code == 404
    assert logged_in.get(history_url(prefix=queues.prefix, connection="elsewhere")).status_code == 404


def test_view_requires_login(client, queues):
    r = client.get(history_url(prefix=queues.prefix))
    assert r.status_code == 302 and r["Location"].startswith(reverse("login"))


def test_view_is_get_only(logged_in, queues):
    assert logged_in.post(history_url(prefix=queues.prefix)).status_code == 405


# ---- pages --------------------------------------------------------------------------------


def test_queue_page_has_the_chart_section(logged_in, queues):
    html = logged_in.get(reverse("queue", args=queues.args("q1"))).content.decode()
    section = re.search(r'<section id="queue-charts"[^>]*>', html)
    assert section, "chart section missing"
    assert f'data-history-url="{history_url(prefix=queues.prefix)}"' in section.group(0)
    for rng in ("1h", "24h", "7d", "90d"):
        assert f'data-range="{rng}"' in html
    for kind in ("throughput", "deadletters", "stalls", "backlog", "wait", "processing"):
        assert f'data-chart="{kind}"' in html
    # The job list first (after the state tabs); the rate cards and the charts below it.
    assert (
        html.index('class="queue-live"')
        < html.index('id="job-list"')
        < html.index('class="qw-rates-box"')
        < html.index('id="queue-charts"')
    )


def test_base_loads_uplot_and_charts_js_after_queuewatch_js_without_inline_scripts(logged_in, queues):
    html = logged_in.get(reverse("overview")).content.decode()
    # Data blocks (type="application/json": the formatting rules) are not code and never run.
    scripts = [s for s in re.findall(r"<script\b[^>]*>", html) if 'type="application/json"' not in s]
    srcs = [re.search(r'src="([^"]+)"', s).group(1) for s in scripts]  # every script has a src
    # Every script is deferred but theme.js, which must set the theme before the first paint.
    assert all(" defer" in s for s, src in zip(scripts, srcs) if src != "/static/theme.js")
    assert "/static/theme.js" in srcs
    assert (
        srcs.index("/static/queuewatch.js")
        < srcs.index(f"/static/vendor/{UPLOT}.iife.min.js")
        < srcs.index("/static/charts.js")
    )
    assert f'<link rel="stylesheet" href="/static/vendor/{UPLOT}.min.css">' in html
    assert len(re.findall(r"<script\b(?![^>]*application/json)[^>]*></script>", html)) == len(scripts)  # no inline code
    queue_html = logged_in.get(reverse("queue", args=queues.args("q1"))).content.decode()
    assert "/static/charts.js" in queue_html


def test_vendored_uplot_is_the_pinned_version_and_is_served(logged_in, queues):
    static = Path(settings.BASE_DIR) / "static"
    js = (static / "vendor" / f"{UPLOT}.iife.min.js").read_text()
    assert js.startswith("/*! https://github.com/leeoniya/uPlot (v1.6.32) */")
    assert (static / "vendor" / f"{UPLOT}.min.css").read_text().startswith(".uplot")
    assert (static / "charts.js").exists()
    r = logged_in.get(f"/static/vendor/{UPLOT}.iife.min.js")
    assert r.status_code == 200


# ---- wait and processing times -------------------------------------------------


def timing_point(queue: QueueRef, name: str, start: dt.datetime, *, wait=(), processing=(), resolution=60):
    from dashboard.live import timing_points
    from queues.timings import NameMinute

    figures = NameMinute()
    for ms in wait:
        figures.wait.add(ms)
    for ms in processing:
        figures.processing.add(ms)
    timing_points.save([timing_points.as_row(queue, name=name, resolution=resolution, start=start, figures=figures)])


def test_timing_series_merge_every_job_name_per_minute_and_roll_up_into_exact_hours():
    from dashboard.live import timing_points
    from queues.timings import Histogram

    m = NOW.replace(second=0)
    fast, slow = [100] * 90, [1000] * 10
    timing_point(Q1, "fast", m - dt.timedelta(minutes=3), wait=[5] * 90, processing=fast)
    timing_point(Q1, "slow", m - dt.timedelta(minutes=3), wait=[2000] * 10, processing=slow)
    timing_point(Q1, "slow", m - dt.timedelta(minutes=1), processing=[3000])
    data = queue_history(Q1, "1h", NOW)
    i = at(data, m - dt.timedelta(minutes=3))
    truth = Histogram()
    for ms in fast + slow:
        truth.add(ms)
    assert data["processing_p50"][i] == truth.percentile(0.5) and abs(data["processing_p50"][i] - 100) <= 10
    assert data["processing_p95"][i] == truth.percentile(0.95) and abs(data["processing_p95"][i] - 1000) <= 100
    assert abs(data["wait_p99"][i] - 2000) <= 200 and abs(data["wait_p50"][i] - 5) <= 0.5
    assert data["wait_p50"][at(data, m - dt.timedelta(minutes=1))] is None  # nothing waited that minute: a gap
    assert data["processing_p50"][i - 1] is None

    timing_points.rollup(since=m - dt.timedelta(hours=2), minute_days=7, hour_days=90, now=NOW)
    truth.add(3000)  # the hour holds both minutes: its percentiles are the hour's own, exactly
    for rng, points in (("7d", 168), ("90d", 2160)):
        data = queue_history(Q1, rng, NOW)
        h = at(data, NOW.replace(minute=0, second=0))
        assert len(data["t"]) == points and data["resolution"] == 3600
        assert data["processing_p99"][h] == truth.percentile(0.99) and data["processing_p95"][h] == truth.percentile(
            0.95
        )
        assert data["processing_p50"][h - 1] is None
