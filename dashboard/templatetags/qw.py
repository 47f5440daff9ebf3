"""Template filters for times, durations and links. Outputs are plain strings, auto-escaped
by the template engine; nothing here marks job data safe."""

from __future__ import annotations

import datetime as dt
import json
from urllib.parse import urlencode

from django import template
from django.urls import reverse
from django.utils.html import format_html, format_html_join, json_script
from django.utils.translation import gettext

from dashboard.core.i18n import translate
from dashboard.core.labels import label
from dashboard.live import channels as live
from dashboard.web.figure_markup import age_since, duration, ms_datetime, num, rate, rate_num
from dashboard.web.formatting import (
    SCALES,
    percent,
    rate_text,
    unit_text,
    unit_words,
)
from dashboard.web.links import job_url, queue_url
from queues.health.wording import format_bytes
from queues.rates import RATE_WINDOWS

register = template.Library()
register.filter("percent", percent)
register.filter("ms_datetime", ms_datetime)
register.filter("duration", duration)
register.filter("rate", rate)
register.filter("num", num)
register.simple_tag(num)
register.filter("rate_num", rate_num)
register.simple_tag(rate_num)
register.simple_tag(age_since)
register.simple_tag(job_url)
register.simple_tag(queue_url)


@register.filter
def one_of(word, words: str) -> bool:
    """Whether ``word`` is one of the space-separated ``words``: ``section|one_of:"queue job"``.
    Not the template's ``in``, which on a string tests for a substring ("schedulers" is in
    "queue_schedulers")."""
    return isinstance(word, str) and word in words.split()


@register.simple_tag
def format_rules():
    """The words of the rules in the active language, as JSON for static/queuewatch.js."""
    return json_script(
        {
            "units": unit_words(),
            "scales": {key: str(text) for key, (_, text) in SCALES.items()},
        },
        "qw-format-rules",
    )


@register.filter
def per_min(value):
    """A per-minute rate with its unit: '39/min'."""
    if value in (None, ""):
        return "—"
    return unit_text("/min", rate_text(value))


@register.simple_tag
def reltime(ms):
    """A timestamp the browser shows relative to now ('12 s ago', 'in 4 min') and keeps
    current (static/queuewatch.js). The markup holds only the absolute time, so a live
    fragment is byte-identical until the data itself changes and is not re-sent every tick."""
    if ms in (None, ""):
        return ""
    try:
        iso = dt.datetime.fromtimestamp(int(ms) / 1000, tz=dt.UTC).isoformat()
    except (OverflowError, OSError, ValueError, TypeError):
        return str(ms)
    return format_html(
        '<time class="rel" datetime="{}" title="{}">{}</time>', _iso(ms) or iso, ms_datetime(ms), ms_datetime(ms)
    )


def _iso(ms) -> str | None:
    try:
        return dt.datetime.fromtimestamp(int(ms) / 1000, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, OSError, ValueError, TypeError):
        return None


def _ms_of(value):
    """Milliseconds since the epoch from a number of them or an aware datetime."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return int(value.timestamp() * 1000)
    return value


@register.simple_tag
def abstime(value, precision="s"):
    """An absolute time (epoch milliseconds or an aware datetime) the browser shows in the
    product's one time zone: the viewer's, or UTC when they chose it (static/queuewatch.js).
    The markup holds the instant and a UTC fallback, the same for every viewer, so live
    fragments stay shared. ``precision``: "s" (seconds) or "m" (minutes)."""
    ms = _ms_of(value)
    if ms in (None, ""):
        return ""
    iso = _iso(ms)
    if iso is None:
        return str(ms)
    fallback = ms_datetime(ms)
    if precision == "m":
        fallback = fallback[:16] + " UTC"
    return format_html('<time datetime="{}" data-qw-time="{}" dir="ltr">{}</time>', iso, precision, fallback)


@register.simple_tag
def rate_windows(per_min: dict, windows=""):
    """One rate over several windows, each "39/min · 1m", so figures never run together.
    ``windows``: the minutes, comma-separated; all the rate windows (``queues.rates``) by default."""
    windows = [int(w) for w in str(windows).split(",")] if windows else RATE_WINDOWS
    per = gettext("/min")
    return format_html(
        '<span class="qw-rates">{}</span>',
        format_html_join(
            "",
            '<span class="qw-rate-w">{}<span class="qw-unit">{}</span> <small>· {}</small></span>',
            ((rate_num(per_min.get(w) if hasattr(per_min, "get") else None), per, label(f"{w}m")) for w in windows),
        ),
    )


@register.filter
def filesize(n):
    """A size in binary units, in the reader's language (the health checks' sizes read the same)."""
    return translate(format_bytes(int(n or 0)))


@register.simple_tag
def key_job_url(connection, parts):
    """Link to a job given (prefix, queue, id) parsed from a full job key."""
    prefix, name, job_id = parts
    return reverse("job", args=[connection, prefix, name, job_id])


@register.simple_tag(takes_context=True)
def sort_url(context, column):
    """Overview header link: sort by column, toggling direction when it is already sorted."""
    current, desc = context.get("sort"), context.get("descending")
    direction = (
        "asc"
        if (column == current and desc)
        else ("desc" if column == current or column not in ("name", "connection") else "asc")
    )
    params = {"sort": column, "dir": direction}
    if context.get("query"):
        params["q"] = context["query"]
    return "?" + urlencode(params)


@register.simple_tag(takes_context=True)
def aria_sort(context, column):
    """` aria-sort="…"` on the header of the column a table is sorted by (the page's ``sort`` and
    ``descending``), so assistive technology says the order the arrows and the link show."""
    if context.get("sort") != column:
        return ""
    return format_html(' aria-sort="{}"', "descending" if context.get("descending") else "ascending")


@register.simple_tag(takes_context=True)
def overview_page_url(context, page):
    """Overview pager link: the same filter and sort, another page."""
    params = {"sort": context.get("sort"), "dir": "desc" if context.get("descending") else "asc", "page": page}
    if context.get("query"):
        params["q"] = context["query"]
    return "?" + urlencode(params)


@register.filter
def get(mapping, key):
    return mapping.get(key) if hasattr(mapping, "get") else None


@register.simple_tag
def copy_button(value, what=""):
    """A button that copies ``value`` (a job id, a queue name) to the clipboard (static/queuewatch.js)."""
    if value in (None, ""):
        return ""
    label = gettext("Copy")
    # The icon is drawn by pages.css, so the heading's text stays the name alone.
    return format_html(
        '<button type="button" class="qw-copy" data-copy="{}" title="{}" aria-label="{}"></button>',
        value,
        label,
        f"{label} {what or value}",
    )


@register.simple_tag
def job_id(value):
    """A job id, which may be long: the page cuts it to its column with an ellipsis (pages.css,
    ``code.qw-id``), while the whole id stays in the text (what a copy takes) and its title
    (what hovering shows)."""
    return format_html('<code class="qw-id" title="{}" dir="ltr">{}</code>', value, value)


@register.filter
def queue_rates_id(queue) -> str:
    """The rate cards of a queue page: sent by the monitor with ``queue_live_id``'s fragment."""
    return live.queue_live_id(queue) + "-rates"


# Element ids of live fragments: the functions the monitor uses, so page and fragment agree.
register.filter("row_id", live.row_id)
register.filter("queue_live_id", live.queue_live_id)
register.filter("job_table_id", live.job_table_id)
register.filter("job_live_id", live.job_live_id)
register.filter("task_progress_id", live.task_progress_id)


@register.simple_tag
def ws_url(name, *args):
    """Path of a websocket route (they live in dashboard.routing, not the HTTP URL conf)."""
    return reverse(name, urlconf="dashboard.routing", args=args)


@register.filter
def delivery_detail(text, can_admin):
    """A delivery error as this user may see it: the receiver's own answer (which can be any
    page an internal service serves) for admins only."""
    from dashboard.alerts.notifiers.webhook import receiver_detail

    return receiver_detail(text or "", admin=bool(can_admin))


@register.filter
def json_text(value):
    """A value as compact JSON text (e.g. a merge patch carried in a hidden field); escaped by the
    template engine like any string."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
