"""How numbers, rates and durations read: one set of rules, used by the template tags
(``dashboard/templatetags/qw.py``), the monitor's change keys and anything else in Python, and
followed step for step by ``static/queuewatch.js`` (docs/architecture.md, "Numbers and times")."""

from __future__ import annotations

import math

from django.utils.translation import pgettext_lazy

# ---- Numbers and durations: one set of rules -------------------------------------------------
# The words are defined here, once, and translated in django.po; ``{% format_rules %}`` (in
# base.html) hands them to static/queuewatch.js, whose formatters (used by charts.js too) follow
# the same rules step for step, so a value reads the same whether the server or the browser
# wrote it (tests/i18n/test_number_formats.py runs both). Digits are Latin in every language,
# with "," between thousands and "." before decimals, as in ids and JSON. Units are the
# glossary's abbreviations, which take no plural. The JS falls back to the keys.
UNITS = {
    "ms": pgettext_lazy("unit", "%(n)s ms"),
    "s": pgettext_lazy("unit", "%(n)s s"),
    "min": pgettext_lazy("unit", "%(n)s min"),
    "h": pgettext_lazy("unit", "%(n)s h"),
    "d": pgettext_lazy("unit", "%(n)s d"),
    "/min": pgettext_lazy("unit", "%(n)s/min"),
}
# Short scales of compact numbers, largest first.
SCALES = {
    "B": (1e9, pgettext_lazy("short scale", "%(n)sB")),
    "M": (1e6, pgettext_lazy("short scale", "%(n)sM")),
    "K": (1e3, pgettext_lazy("short scale", "%(n)sK")),
}
COMPACT_COUNTS_FROM = 10_000  # a 4-digit count reads fine with its separator
COMPACT_RATES_FROM = 1_000


def unit_text(key: str, text: str) -> str:
    return str(UNITS[key]) % {"n": text}


def _rounded(value: float, decimals: int) -> tuple[int, str]:
    """``|value|`` rounded half up: the whole part and the decimals (no trailing zeros). The same
    float operations as the JS, so both round alike."""
    scale = 10**decimals
    whole, fraction = divmod(math.floor(abs(value) * scale + 0.5), scale)
    return whole, str(fraction).rjust(decimals, "0").rstrip("0") if decimals else ""


def number_text(value, *, decimals: int = 1, compact_from: float | None = None) -> str:
    """A number with thousands separators and at most ``decimals`` decimals; from
    ``compact_from`` on, short (12.3K) with one decimal."""
    value = float(value)
    if not math.isfinite(value):
        return "—"
    sign = "-" if value < 0 else ""
    if compact_from is not None and abs(value) >= compact_from:
        return sign + _compact(abs(value))
    whole, fraction = _rounded(value, decimals)
    if not whole and not fraction:
        sign = ""
    return f"{sign}{whole:,}" + (f".{fraction}" if fraction else "")


def _compact(value: float) -> str:
    """A positive number in its largest short scale (999.96K reads 1M)."""
    scales = list(SCALES.values())
    i = next((i for i, (size, _) in enumerate(scales) if value >= size), len(scales) - 1)
    if i > 0 and _rounded(value / scales[i][0], 1)[0] >= 1000:
        i -= 1
    size, text = scales[i]
    return str(text) % {"n": number_text(value / size)}


def rate_text(value) -> str:
    """A per-minute rate without its unit: '0', '0.25', '4.2', '39', '1.2K'."""
    v = abs(float(value))
    return number_text(value, decimals=2 if v < 1 else 1 if v < 10 else 0, compact_from=COMPACT_RATES_FROM)


def duration_text(seconds) -> str:
    """A duration in the largest sensible units: '420 ms', '4.2 s', '59 s', '1 min 1 s', '12 min',
    '1 h 5 min', '3 d 4 h'. Negative durations (clocks apart) read as zero."""
    s = max(0.0, float(seconds))
    if not math.isfinite(s):
        return "—"
    if s == 0:
        return unit_text("s", "0")
    if s < 1:
        return unit_text("ms", number_text(s * 1000, decimals=1 if s < 0.01 else 0))
    if s < 60:
        return unit_text("s", number_text(s, decimals=1) if s < 10 else str(math.floor(s)))
    minutes, sec = divmod(math.floor(s), 60)
    if minutes < 60:
        return unit_text("min", str(minutes)) + (" " + unit_text("s", str(sec)) if minutes < 10 and sec else "")
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return unit_text("h", str(hours)) + (" " + unit_text("min", str(minutes)) if minutes else "")
    days, hours = divmod(hours, 24)
    return unit_text("d", number_text(days)) + (" " + unit_text("h", str(hours)) if hours else "")


def rate_value(value):
    """A per-minute rate rounded as shown: 0.4, 12, 12300 (three significant digits from
    1,000). Equal values render identically, so the monitor's change keys use this too."""
    if value in (None, ""):
        return None
    v = float(value)
    if v == 0:
        return 0
    if v < 10:
        return round(v, 1)
    if v < 1000:
        return int(round(v))
    digits = len(str(int(v))) - 3
    return int(round(v, -digits))


def percent(value):
    return f"{float(value) * 100:.1f}%"
