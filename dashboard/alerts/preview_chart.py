"""The rule preview's chart: what the rule measured each minute of the replayed day, per target,
with its threshold (and resolve threshold) drawn over it and the minutes it would have fired
shaded. Drawn on the server as SVG geometry (``preview_chart.html`` renders it), so it shows
without JavaScript and costs the page nothing to load; the incidents table under it says the
same in words. Time runs left to right in every language, as on the queue page's charts.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field

from dashboard.web.formatting import number_text
from queues import alert_kinds

WIDTH, HEIGHT = 720, 220
LEFT, RIGHT, TOP, BOTTOM = 56, 12, 10, 24  # room for the value axis' labels and the hours under it
MAX_LINES = 6  # more lines than this are unreadable: the targets with the highest peaks are drawn
HOUR_TICKS = 6  # an hour label every 24 / 6 = 4 hours


@dataclass
class Line:
    label: str
    css: str  # s0 … s5: the line's colour (alerts.css)
    path: str  # SVG path data; a gap in the measurements starts a new segment
    peak: float


@dataclass
class Chart:
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right_x: int = WIDTH - RIGHT
    top: int = TOP
    bottom_y: int = HEIGHT - BOTTOM
    lines: list[Line] = field(default_factory=list)
    hidden_lines: int = 0  # targets measured but not drawn (beyond MAX_LINES)
    threshold_y: float | None = None
    resolve_y: float | None = None
    threshold: float | None = None
    resolve_threshold: float | None = None
    unit: str = ""
    firing: list[tuple[float, float]] = field(default_factory=list)  # (x, width) of each firing span
    y_ticks: list[tuple[float, str]] = field(default_factory=list)
    x_ticks: list[tuple[float, str]] = field(default_factory=list)
    flag: bool = False  # a yes/no condition (1: it holds): no threshold to draw

    @property
    def plot_height(self) -> int:
        return self.bottom_y - self.top


def nice_step(span: float, ticks: int = 4) -> float:
    """A round step (1, 2 or 5 times a power of ten) giving about ``ticks`` ticks over ``span``."""
    if span <= 0:
        return 1.0
    raw = span / ticks
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def preview_chart(preview, rule) -> Chart | None:
    """The chart of a replayed ``preview`` of ``rule``, or None when nothing was measured."""
    if not preview.replayable or not preview.series or preview.start is None or preview.end is None:
        return None
    kind = alert_kinds.KINDS.get(rule.kind)
    flag = bool(kind and kind.duration_threshold)
    chart = Chart(flag=flag, unit=str(kind.unit) if kind else "")
    start, end = preview.start, preview.end
    total = max((end - start).total_seconds(), 60.0)
    plot_w, plot_h = chart.right_x - chart.left, chart.bottom_y - chart.top

    def x_of(t: dt.datetime) -> float:
        return round(chart.left + plot_w * min(max((t - start).total_seconds() / total, 0.0), 1.0), 1)

    peaks = {
        target: max((v for _, v in points if v is not None), default=0.0) for target, points in preview.series.items()
    }
    drawn = sorted(peaks, key=lambda t: (-peaks[t], t.key))[:MAX_LINES]
    chart.hidden_lines = len(peaks) - len(drawn)
    top_value = 1.0 if flag else max([peaks[t] for t in drawn] + [float(rule.threshold or 0)], default=0.0)
    if not flag and rule.resolve_threshold is not None:
        top_value = max(top_value, float(rule.resolve_threshold))
    step = 1.0 if flag else nice_step(top_value or 1.0)
    y_max = 1.0 if flag else step * math.ceil(((top_value or 1.0) * 1.1) / step)

    def y_of(value: float) -> float:
        return round(chart.bottom_y - plot_h * min(max(value / y_max, 0.0), 1.0), 1)

    chart.y_ticks = [(y_of(i * step), number_text(i * step, decimals=2)) for i in range(int(round(y_max / step)) + 1)]
    chart.x_ticks = [
        (x_of(t), t.astimezone(dt.UTC).strftime("%H:%M"))
        for t in (start + dt.timedelta(seconds=total * i / HOUR_TICKS) for i in range(HOUR_TICKS + 1))
    ]
    for i, target in enumerate(drawn):
        parts, pen_down = [], False
        for t, value in preview.series[target]:
            if value is None:
                pen_down = False
                continue
            parts.append(f"{'L' if pen_down else 'M'}{x_of(t)} {y_of(value)}")
            pen_down = True
        kind_noun = kind.item_noun if kind else "scheduler"
        chart.lines.append(Line(target.label(kind_noun), f"s{i}", " ".join(parts), peaks[target]))
    if not flag and kind is not None and kind.has_threshold:
        chart.threshold, chart.threshold_y = float(rule.threshold), y_of(float(rule.threshold))
        if rule.resolve_threshold is not None and rule.resolve_threshold != rule.threshold:
            chart.resolve_threshold = float(rule.resolve_threshold)
            chart.resolve_y = y_of(float(rule.resolve_threshold))
    for incident in preview.fired:
        x0, x1 = x_of(incident.fired_at), x_of(incident.resolved_at or end)
        chart.firing.append((x0, max(round(x1 - x0, 1), 1.0)))
    return chart
