"""The overview's columns, declared once.

Each ``OverviewColumn`` says what its header is, what its cell shows (``value``: read from the
queue's signals, formatted as displayed), how the cell is drawn (a function of that value that
returns the ``<td>``) and, if the column sorts, by what. Everything else is derived from ``COLUMNS``:

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

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext, ngettext, pgettext
from django.utils.translation import gettext_lazy as _

from dashboard.core.labels import LABELS
from dashboard.core.order_document import RATE_WINDOW
from dashboard.live.rates import QueueSignals
from dashboard.web.figure_markup import age_since, num, rate_num
from dashboard.web.formatting import rate_value
from dashboard.web.links import queue_url
from queues.snapshot import QueueSnapshot, waiting_jobs
from queues.states import BROWSABLE_STATES


@dataclass(frozen=True)
class OverviewColumn:
    name: str  # unique; the ``sort`` URL parameter when the column sorts
    header: str  # translatable (``gettext_lazy``): shown in the viewer's language
    value: Callable[[QueueSignals], Hashable]  # what the cell shows, as displayed
    # The cell: ``cell(value, sig, qurl)`` returns its ``<td>`` as safe HTML (``format_html``
    # escapes what it is given), from ``value``, the queue's signals (for its identity,
    # ``sig.snapshot.queue``) and ``qurl`` (the queue page's URL), its words in ``gettext``.
    # Python, not a template snippet: a row of template snippets took ~1 ms to render, most of
    # a 100-row overview page, and of what the monitor spends on each changed row.
    cell: Callable[[Any, QueueSignals, str], str]
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


def _state_cell(state: str) -> Callable[[Any, QueueSignals, str], str]:
    # The state spelled into the markup once (a known identifier). A zero is not a link: there
    # is nothing to open.
    linked = f'<td class="num state-{state}"><a href="{{}}?state={state}">{{}}</a></td>'
    zero = f'<td class="num state-{state}"><span class="zero">0</span></td>'
    unknown = f'<td class="num state-{state}">—</td>'

    def cell(value: Any, sig: QueueSignals, qurl: str) -> str:
        if value:
            return format_html(linked, qurl, num(value, compact=True))
        return zero if value == 0 else unknown

    return cell


def _name_cell(is_dlq: Any, sig: QueueSignals, qurl: str) -> str:
    badge = (
        format_html(
            ' <span class="badge dlq" title="{}">{}</span>', gettext("application dead-letter queue"), gettext("DLQ")
        )
        if is_dlq
        else ""
    )
    return format_html(
        '<td><bdi class="queue-name"><a href="{}">{}</a></bdi>{}</td>', qurl, sig.snapshot.queue.name, badge
    )


def _status_cell(value: Any, sig: QueueSignals, qurl: str) -> str:
    paused, stalled = value
    badges = []
    if paused:
        badges.append(format_html('<span class="badge paused">{}</span>', pgettext("job state", "paused")))
    if stalled:
        words = ngettext("%(counter)s stalled", "%(counter)s stalled", stalled) % {"counter": stalled}
        badges.append(
            format_html(' <span class="badge stalled" title="{}">{}</span>', gettext("in active without a lock"), words)
        )
    return format_html("<td>{}</td>", SafeString("".join(badges)))


def _state_column(state: str) -> OverviewColumn:
    count = _count_of(state)
    return OverviewColumn(
        name=state,
        header=LABELS[state],
        numeric=True,
        value=lambda sig: count(sig.snapshot.counts),
        cell=_state_cell(state),
        sort=lambda s: (count(s.counts) or 0, s.queue.name),
        published=_published_count(state),
    )


COLUMNS: list[OverviewColumn] = [
    OverviewColumn(
        name="name",
        header=_("Queue"),
        value=lambda sig: sig.is_dlq,
        cell=_name_cell,
        sort=lambda s: (s.queue.name.lower(), s.queue.prefix),
    ),
    OverviewColumn(
        name="prefix",
        header=_("Prefix"),
        value=lambda sig: None,  # part of the queue's identity
        cell=lambda value, sig, qurl: format_html("<td><code>{}</code></td>", sig.snapshot.queue.prefix),
    ),
    *(_state_column(state) for state in BROWSABLE_STATES),
    OverviewColumn(
        name="oldest",
        header=_("Oldest waiting"),
        numeric=True,
        # The timestamp, not the age: the browser keeps the age counting (static/queuewatch.js);
        # and whether it is a bound ("at least", queues.ready_since).
        value=lambda sig: (sig.snapshot.oldest_waiting_ts, sig.snapshot.oldest_waiting_bound),
        cell=lambda value, sig, qurl: format_html('<td class="num">{}</td>', age_since(*value)),
        sort=lambda s: (s.oldest_waiting_age_ms or -1, s.queue.name),
        published=PublishedKey(("oldest_waiting_age_ms",), lambda age: _number(age, 0) or -1),
    ),
    OverviewColumn(
        name="throughput",
        header=_("Throughput /min"),
        numeric=True,
        title=_("completed / failed per minute, last 5 minutes"),
        value=lambda sig: (rate_value(sig.completed_per_min[RATE_WINDOW]), rate_value(sig.failed_per_min[RATE_WINDOW])),
        cell=lambda value, sig, qurl: format_html(
            '<td class="num">{} / <span class="bad">{}</span></td>', rate_num(value[0]), rate_num(value[1])
        ),
        published=_published_rate("completed", "failed"),
    ),
    OverviewColumn(
        name="dead_letters",
        header=_("Dead letters /min"),
        numeric=True,
        title=_("jobs entering the dead-letter set per minute, last 5 minutes"),
        value=lambda sig: (rate_value(sig.dlq_growth_per_min[RATE_WINDOW]), bool(sig.dlq_growth_per_min[RATE_WINDOW])),
        cell=lambda value, sig, qurl: format_html(
            '<td class="num{}">{}</td>', " bad" if value[1] else "", rate_num(value[0])
        ),
        published=_published_rate("dead_letter"),
    ),
    OverviewColumn(
        name="workers",
        header=_("Workers"),
        numeric=True,
        title=_("workers connected to the queue (the monitor reads CLIENT LIST every few seconds)"),
        # None (unknown: no monitor, or CLIENT LIST refused) shows a dash, never "0".
        value=lambda sig: (sig.workers, sig.workers == 0 and bool(waiting_jobs(sig.snapshot.counts))),
        cell=lambda value, sig, qurl: format_html(
            '<td class="num workers{}">{}</td>', " bad" if value[1] else "", "—" if value[0] is None else value[0]
        ),
        published=_PUBLISHED_WORKERS,
    ),
    OverviewColumn(
        name="spark",
        header=_("Last hour"),
        title=_("last hour: completed, failed, dead-letter depth"),
        # Drawn from stored history on page load; live rows carry none and keep the page's.
        value=lambda sig: None,
        cell=lambda value, sig, qurl: format_html(
            '<td class="spark-cell"><span class="spark" data-spark="{}" aria-hidden="true"></span></td>',
            sig.spark_json,
        ),
    ),
    OverviewColumn(
        # Sorts by the paused flag: ``sort=paused`` is the parameter bookmarks already carry.
        name="paused",
        header=_("Status"),
        value=lambda sig: (sig.snapshot.paused, len(sig.stalled_now)),
        cell=_status_cell,
        sort=lambda s: (s.paused, s.queue.name),
        published=PublishedKey(("paused",), lambda paused: paused is True),
    ),
]

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


def render_cells(sig: QueueSignals) -> SafeString:
    """The row's cells (``<td>``s) for this queue."""
    qurl = queue_url(sig.snapshot.queue)
    return SafeString("".join(col.cell(col.value(sig), sig, qurl) for col in COLUMNS))
