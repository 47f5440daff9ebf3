"""How numbers, rates and durations read: one set of rules, used by the template tags
(``dashboard/templatetags/qw.py``), the monitor's change keys and anything else in Python, and
followed step for step by ``static/queuewatch.js`` (docs/architecture.md, "Numbers and times")."""

from __future__ import annotations

import math

from django.utils.translation import pgettext_lazy

from dashboard.core.i18n import translate
from queues.quantities import UNIT_WORDS, duration_message, plain_number, rounded, unit_message

# ---- Numbers and durations: one set of rules -------------------------------------------------
# The rules and the unit words live in ``queues/quantities.py`` (what ``queues/`` writes reads
# the same); this module adds the short scales of compact numbers and gives the words in the
# active language. ``{% format_rules %}`` (in base.html) hands the words to static/queuewatch.js,
# whose formatters (used by charts.js too) follow the same rules step for step, so a value reads
# the same whether the server or the browser wrote it (tests/i18n/test_number_formats.py runs
# both). The JS falls back to the keys.
# Short scales of compact numbers, largest first.
SCALES = {
    "B": (1e9, pgettext_lazy("short scale", "%(n)sB")),
    "M": (1e6, pgettext_lazy("short scale", "%(n)sM")),
    "K": (1e3, pgettext_lazy("short scale", "%(n)sK")),
}
COMPACT_COUNTS_FROM = 10_000  # a 4-digit count reads fine with its separator
COMPACT_RATES_FROM = 1_000


def unit_words() -> dict[str, str]:
    """Each unit's words in the active language, ``{n}`` standing for the number."""
    return {key: translate(word) for key, word in UNIT_WORDS.items()}


def unit_text(key: str, text: str) -> str:
    return translate(unit_message(key, text))


def number_text(value, *, decimals: int = 1, compact_from: float | None = None) -> str:
    """A number with thousands separators and at most ``decimals`` decimals; from
    ``compact_from`` on, short (12.3K) with one decimal."""
    value = float(value)
    if not math.isfinite(value):
        return "—"
    if compact_from is not None and abs(value) >= compact_from:
        return ("-" if value < 0 else "") + _compact(abs(value))
    return plain_number(value, decimals=decimals)


def _compact(value: float) -> str:
    """A positive number in its largest short scale (999.96K reads 1M)."""
    scales = list(SCALES.values())
    i = next((i for i, (size, _) in enumerate(scales) if value >= size), len(scales) - 1)
    if i > 0 and rounded(value / scales[i][0], 1)[0] >= 1000:
        i -= 1
    size, text = scales[i]
    return str(text) % {"n": number_text(value / size)}


def rate_text(value) -> str:
    """A per-minute rate without its unit: '0', '0.25', '4.2', '39', '1.2K'."""
    v = abs(float(value))
    return number_text(value, decimals=2 if v < 1 else 1 if v < 10 else 0, compact_from=COMPACT_RATES_FROM)


def duration_text(seconds) -> str:
    """A duration in the largest sensible units (``queues.quantities.duration_parts``)."""
    return translate(duration_message(seconds))


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
