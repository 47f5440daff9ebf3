"""The markup of figures, shared by the templates (``dashboard.templatetags.qw`` registers these
as its tags and filters) and by code that draws HTML itself (the overview's cells,
``dashboard.browse.columns``): counts and rates as raw values the browser formats for the
viewer's language, times and ages. Every function returns escaped text or safe HTML built with
``format_html``; none marks its input safe."""

from __future__ import annotations

import datetime as dt
import time

from django.utils.html import conditional_escape, format_html
from django.utils.translation import gettext

from dashboard.web.formatting import COMPACT_COUNTS_FROM, duration_text, number_text, rate_text, rate_value


def ms_datetime(ms):
    """Milliseconds since the epoch → 'YYYY-MM-DD HH:MM:SS UTC'."""
    if ms in (None, ""):
        return ""
    try:
        return dt.datetime.fromtimestamp(int(ms) / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError, TypeError):
        return str(ms)


def duration(ms):
    """A millisecond duration (``duration_text``)."""
    if ms in (None, ""):
        return "—"
    try:
        return duration_text(float(ms) / 1000)
    except (TypeError, ValueError, OverflowError):
        return str(ms)


def rate(value):
    """A per-minute rate without its unit (``rate_text``)."""
    if value in (None, ""):
        return "—"
    return rate_text(value)


def num(value, compact=False):
    """A count as a raw number the browser formats for the page's language: thousands
    separators, and with ``compact`` a short form (12.3k) with the exact figure on hover.
    Shared live fragments keep the raw value (static/queuewatch.js formats it)."""
    if value in (None, ""):
        return "—"
    try:
        text = number_text(value, compact_from=COMPACT_COUNTS_FROM if compact else None)
    except (TypeError, ValueError):
        text = value
    return format_html('<data class="qw-num{}" value="{}">{}</data>', " qw-compact" if compact else "", value, text)


def rate_num(value):
    """A per-minute rate for the browser to format (compact from 1,000, exact on hover)."""
    v = rate_value(value)
    if v is None:
        return "—"
    return format_html('<data class="qw-num qw-compact qw-rate" value="{}">{}</data>', v, rate(v))


def age_since(ms, bound=False):
    """How long ago ``ms`` was, as a duration the browser keeps counting ('3 min 4 s');
    ``bound``: it was at least that long ago ('at least 3 min 4 s', queues.ready_since)."""
    if ms in (None, ""):
        return "—"
    iso = dt.datetime.fromtimestamp(int(ms) / 1000, tz=dt.UTC).isoformat()
    age = format_html(
        '<time class="age" datetime="{}" title="{}">{}</time>',
        iso,
        gettext("since %(time)s") % {"time": ms_datetime(ms)},
        duration(max(0, int(time.time() * 1000) - int(ms))),
    )
    if not bound:
        return age
    # The translation places the age (Arabic puts it after "at least" too, but may not).
    return format_html(conditional_escape(gettext("at least %(age)s")).replace("%(age)s", "{}"), age)
