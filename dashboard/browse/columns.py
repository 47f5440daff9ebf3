"""The overview's columns, declared once.

Each ``OverviewColumn`` says what its header is, what its cell shows (``value``: read from the
queue's signals, formatted as displayed), how the cell is drawn (a template snippet that gets
that value) and, if the column sorts, by what. Everything else is derived from ``COLUMNS``:

* the overview page's header row and its row partial (``{% overview_headers %}`` and
  ``{% overview_cells sig %}`` in ``templates/browse/overview.html``), which is also the
  fragment the monitor sends over the websocket;
* the sort parameters the overview accepts (``sort_key``);
* the monitor's change detection (``row_key``): a row is re-rendered when any column's value
  changes, and only then. A cell must therefore show nothing but its ``value`` and the
  queue's identity (which never changes for a row); anything else it shows would not update
  live.

See docs/recipe-column.md for adding one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.template import engines
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop, ngettext_lazy

from dashboard.core.labels import LABELS
from dashboard.core.order_document import RATE_WINDOW
from dashboard.live.rates import QueueSignals
from dashboard.web.formatting import rate_value
from dashboard.web.links import queue_url
from queues.snapshot import QueueSnapshot, waiting_jobs
from queues.states import BROWSABLE_STATES


@dataclass(frozen=True)
class OverviewColumn:
    name: str  # unique; the ``sort`` URL parameter when the column sorts
    header: str  # translatable (``gettext_lazy``): shown in the viewer's language
    value: Callable[[QueueSignals], Hashable]  # what the cell shows, as displayed
    # The cell, a Django template snippet (``qw`` tags loaded) rendered with ``value``, ``col``
    # (this column), ``sig`` and ``s`` (the snapshot) and ``qurl`` (the queue page's URL);
    # ``qw`` and ``i18n`` tags are loaded, so mark the cell's words with ``{% translate %}``.
    cell: str
    sort: Callable[[QueueSnapshot], Any] | None = None  # sort key; overview sorts before signals exist
    # The same order read from the monitor's order document, so a sorted page reads only its own
    # queues; alone (no ``sort``), for figures only the monitor derives (rates, workers).
    published: PublishedKey | None = None
    numeric: bool = False  # right-aligned header
    title: str = ""  # header tooltip

    @property
    def sortable(self) -> bool:
        return self.sort is not None or self.published is not None


class PublishedKey(NamedTuple):
    """A sort key read from the order document (``dashboard.core.order_document``): ``key`` of a
    queue's values at ``paths``, each ``None`` when unknown (or the queue not published yet)."""

    paths: tuple[str, ...]
    key: Callable[..., Any]


def _number(value: Any, unknown: float) -> float:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else unknown


def _published_count(state: str) -> PublishedKey:
    """A state's count as ``_count_of`` reads it from a snapshot (a missing one as 0)."""
    if state == "waiting":
        return PublishedKey(("counts.waiting", "counts.paused"), lambda w, p: _number(w, 0) + _number(p, 0))
    return PublishedKey((f"counts.{state}",), lambda n: _number(n, 0))


def _count_of(state: str) -> Callable[[dict], int | None]:
    """A state's figure in a snapshot's counts; ``waiting`` is every unprioritized ready job,
    also those a kind counts under ``paused`` (``queues.snapshot.waiting_jobs``)."""
    if state == "waiting":
        return lambda counts: waiting_jobs(counts) if "waiting" in counts else None
    return lambda counts: counts.get(state)


def _published_rate(*names: str) -> PublishedKey:
    """Sort key: the sum of these rates over RATE_WINDOW minutes, as the monitor published them
    (``rates_per_min`` of the state document); -1 (last) when unknown."""

    def key(*values: Any) -> float:
        known = [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
        return sum(known) if known else -1.0

    return PublishedKey(tuple(f"rates_per_min.{name}.{RATE_WINDOW}" for name in names), key)


# Unknown workers sort below none.
_PUBLISHED_WORKERS = PublishedKey(("workers",), lambda w: w if isinstance(w, int) and not isinstance(w, bool) else -1)


def _state_column(state: str) -> OverviewColumn:
    count = _count_of(state)
    return OverviewColumn(
        name=state,
        header=LABELS[state],
        numeric=True,
        value=lambda sig: count(sig.snapshot.counts),
        # The state spelled into the snippet (a known identifier): cheaper than a lookup per row.
        # A zero is not a link: there is nothing to open.
        cell=f'<td class="num state-{state}">{{% if value %}}'
        f'<a href="{{{{ qurl }}}}?state={state}">{{% num value compact=True %}}</a>'
        f'{{% elif value == 0 %}}<span class="zero">0</span>{{% else %}}—{{% endif %}}</td>',
        sort=lambda s: (count(s.counts) or 0, s.queue.name),
        published=_published_count(state),
    )


COLUMNS: list[OverviewColumn] = [
    OverviewColumn(
        name="name",
        header=_("Queue"),
        value=lambda sig: sig.is_dlq,
        cell='<td><bdi class="queue-name"><a href="{{ qurl }}">{{ s.queue.name }}</a></bdi>{% if value %} '
        '<span class="badge dlq" title="{% translate "application dead-letter queue" %}">'
        '{% translate "DLQ" %}</span>{% endif %}</td>',
        sort=lambda s: (s.queue.name.lower(), s.queue.prefix),
    ),
    OverviewColumn(
        name="prefix",
        header=_("Prefix"),
        value=lambda sig: None,  # part of the queue's identity
        cell="<td><code>{{ s.queue.prefix }}</code></td>",
    ),
    *(_state_column(state) for state in BROWSABLE_STATES),
    OverviewColumn(
        name="oldest",
        header=_("Oldest waiting"),
        numeric=True,
        # The timestamp, not the age: the browser keeps the age counting (static/queuewatch.js);
        # and whether it is a bound ("at least", queues.ready_since).
        value=lambda sig: (sig.snapshot.oldest_waiting_ts, sig.snapshot.oldest_waiting_bound),
        cell='<td class="num">{% age_since value.0 value.1 %}</td>',
        sort=lambda s: (s.oldest_waiting_age_ms or -1, s.queue.name),
        published=PublishedKey(("oldest_waiting_age_ms",), lambda age: _number(age, 0) or -1),
    ),
    OverviewColumn(
        name="throughput",
        header=_("Throughput /min"),
        numeric=True,
        title=_("completed / failed per minute, last 5 minutes"),
        value=lambda sig: (rate_value(sig.completed_per_min[RATE_WINDOW]), rate_value(sig.failed_per_min[RATE_WINDOW])),
        cell='<td class="num">{{ value.0|rate_num }} / <span class="bad">{{ value.1|rate_num }}</span></td>',
        published=_published_rate("completed", "failed"),
    ),
    OverviewColumn(
        name="dead_letters",
        header=_("Dead letters /min"),
        numeric=True,
        title=_("jobs entering the dead-letter set per minute, last 5 minutes"),
        value=lambda sig: (rate_value(sig.dlq_growth_per_min[RATE_WINDOW]), bool(sig.dlq_growth_per_min[RATE_WINDOW])),
        cell='<td class="num{% if value.1 %} bad{% endif %}">{{ value.0|rate_num }}</td>',
        published=_published_rate("dead_letter"),
    ),
    OverviewColumn(
        name="workers",
        header=_("Workers"),
        numeric=True,
        title=_("workers connected to the queue (the monitor reads CLIENT LIST every few seconds)"),
        # None (unknown: no monitor, or CLIENT LIST refused) shows a dash, never "0".
        value=lambda sig: (sig.workers, sig.workers == 0 and bool(waiting_jobs(sig.snapshot.counts))),
        cell='<td class="num workers{% if value.1 %} bad{% endif %}">'
        "{% if value.0 is None %}—{% else %}{{ value.0 }}{% endif %}</td>",
        published=_PUBLISHED_WORKERS,
    ),
    OverviewColumn(
        name="spark",
        header=_("Last hour"),
        title=_("last hour: completed, failed, dead-letter depth"),
        # Drawn from stored history on page load; live rows carry none and keep the page's.
        value=lambda sig: None,
        cell='<td class="spark-cell">'
        '<span class="spark" data-spark="{{ sig.spark_json }}" aria-hidden="true"></span></td>',
    ),
    OverviewColumn(
        # Sorts by the paused flag: ``sort=paused`` is the parameter bookmarks already carry.
        name="paused",
        header=_("Status"),
        value=lambda sig: (sig.snapshot.paused, len(sig.stalled_now)),
        cell='<td>{% if value.0 %}<span class="badge paused">{% translate "paused" context "job state" %}</span>'
        "{% endif %}{% if value.1 %} "
        '<span class="badge stalled" title="{% translate "in active without a lock" %}">'
        "{% blocktranslate count counter=value.1 %}"
        "{{ counter }} stalled{% plural %}{{ counter }} stalled"
        "{% endblocktranslate %}</span>{% endif %}</td>",
        sort=lambda s: (s.paused, s.queue.name),
        published=PublishedKey(("paused",), lambda paused: paused is True),
    ),
]

# The words the cell snippets above translate with {% translate %}: makemessages reads this
# file as Python, not as a template, so they are marked here too for extraction.
CELL_WORDS = (
    gettext_noop("application dead-letter queue"),
    gettext_noop("DLQ"),
    gettext_noop("in active without a lock"),
    ngettext_lazy("%(counter)s stalled", "%(counter)s stalled", 1),
)

DEFAULT_SORT = "connection"
# Sorts whose key reads only ``s.queue`` (its identity): the overview can order and page the
# queues before reading any snapshot, and read only the page's.
NAME_SORTS = frozenset({DEFAULT_SORT, "name"})


def _by_connection(s: QueueSnapshot):
    return (s.queue.connection, s.queue.prefix, s.queue.name)


def sort_key(name: str) -> Callable[[QueueSnapshot], Any] | None:
    """The sort key for an overview ``sort`` parameter; ``None`` if nothing sorts by it."""
    if name == DEFAULT_SORT:
        return _by_connection
    return next((col.sort for col in COLUMNS if col.name == name and col.sort is not None), None)


def published_key(name: str) -> PublishedKey | None:
    """The order-document sort key of an overview ``sort`` parameter; ``None`` if that column
    does not sort by what the monitor published (the name sorts)."""
    return next((col.published for col in COLUMNS if col.name == name and col.published is not None), None)


def row_key(sig: QueueSignals) -> tuple:
    """Everything a queue's overview row shows, as displayed. Equal keys mean identical rows,
    so the monitor skips rendering (the costly part) for unchanged queues."""
    return tuple(col.value(sig) for col in COLUMNS)


@functools.lru_cache(maxsize=8)
def _cells_template(columns: tuple[OverviewColumn, ...]):
    # One template for the whole row, compiled once per set of columns: one render per row,
    # as cheap as a hand-written row. Each cell sees its own column and value as ``col`` and
    # ``value`` (passed as plain context names: index lookups in templates are slow).
    source = "{% load qw i18n %}" + "".join(
        f"{{% with col=col_{i} value=value_{i} %}}{col.cell}{{% endwith %}}" for i, col in enumerate(columns)
    )
    return engines["django"].from_string(source)


def render_cells(sig: QueueSignals) -> SafeString:
    """The row's cells (``<td>``s) for this queue."""
    columns = tuple(COLUMNS)
    s = sig.snapshot
    context = {"sig": sig, "s": s, "qurl": queue_url(s.queue)}
    for i, col in enumerate(columns):
        context[f"col_{i}"] = col
        context[f"value_{i}"] = col.value(sig)
    return SafeString(_cells_template(columns).render(context))
