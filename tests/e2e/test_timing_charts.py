"""In real Chromium: the queue page's wait and processing time charts draw
p50/p95/p99 from the stored per-job-name minutes, and from the hour roll-up on the 7 d and 90 d
ranges."""

from __future__ import annotations

import pytest

from tests.support.browser import log_in, manage

pytestmark = [pytest.mark.e2e, pytest.mark.node]

# Two job names in the current minute (processing 90 × 100 ms + 10 × 1 s, waits 100 × 2 s), then
# the hour roll-up, as the monitor would have written and rolled them up.
SEED = """
import datetime as dt
from django.utils import timezone
from dashboard.live import timing_points
from queues.keys import QueueRef
from queues.timings import NameMinute
q = QueueRef("default", "bull", "mixed")
minute = timezone.now().replace(second=0, microsecond=0)
rows = []
for name, processing in (("fast", [100] * 90), ("slow", [1000] * 10)):
    f = NameMinute()
    for ms in processing:
        f.processing.add(ms)
        f.wait.add(2000)
    rows.append(timing_points.as_row(q, name=name, resolution=60, start=minute, figures=f))
timing_points.save(rows)
timing_points.rollup(since=minute - dt.timedelta(hours=1), minute_days=7, hour_days=90, now=timezone.now())
"""


def as_ms(text: str) -> float:
    """A legend value ("95.8 ms", "1 s", "1.2 s") in milliseconds."""
    number, unit = text.split(" ")
    return float(number) * {"ms": 1, "s": 1000}[unit]


def legend(page, chart: str) -> dict[str, str]:
    return page.evaluate(
        """(chart) => {
        const out = {};
        document.querySelectorAll(`.chart[data-chart=${chart}] .u-legend .u-series`).forEach(tr => {
            const label = tr.querySelector('.u-label'), value = tr.querySelector('.u-value');
            if (label && value) out[label.textContent.trim()] = value.textContent.trim();
        });
        return out;
    }""",
        chart,
    )


def test_wait_and_processing_percentile_charts_over_minutes_and_the_90_day_hours(page, live_app, bullmq_fixture):
    manage(live_app.env, "shell", "-c", SEED)
    log_in(page, live_app)
    page.goto(live_app.url + "/q/default/bull/mixed/")
    page.wait_for_selector(".chart[data-chart=processing] .uplot")
    page.wait_for_function("document.querySelector('#queue-charts .charts-status').textContent.includes('Per-minute')")
    processing, wait = legend(page, "processing"), legend(page, "wait")
    # Bucket middles: within 5 % of the truth (queues/timings.py); the test allows 10 %.
    assert abs(as_ms(processing["p50"]) - 100) <= 10, processing
    assert abs(as_ms(processing["p95"]) - 1000) <= 100 and abs(as_ms(processing["p99"]) - 1000) <= 100, processing
    assert abs(as_ms(wait["p50"]) - 2000) <= 200, wait

    page.click("#queue-charts button[data-range='90d']")
    page.wait_for_function("document.querySelector('#queue-charts .charts-status').textContent.includes('Hourly')")
    assert page.get_attribute("#queue-charts button[data-range='90d']", "aria-pressed") == "true"
    assert legend(page, "processing")["p95"] == processing["p95"]  # the hour's own percentile: the same
