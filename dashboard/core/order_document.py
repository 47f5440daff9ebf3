"""The order document: what ordering the overview and the API list needs of every queue, written
by the monitor beside its state document.

At 10,000 queues the state document is megabytes (timings, totals, gaps), and even a document
of one small object per queue cost a sorted request ~200 ms to parse: building 10,000 dicts of
dicts is most of ``json.loads``. So the order document is columnar: the queues once, as
``[connection, prefix, name]``, and one list of 10,000 plain values per figure, under the
figure's path in the state entry (``counts.failed``, ``rates_per_min.completed.5``). A request
parses it in a tenth of the time and sorts by the one or two columns it needs."""

from __future__ import annotations

import itertools
import json
import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from dashboard.core import fast_json
from queues.keys import QueueRef

# The fields of a queue's state entry that sort the overview; nested objects are flattened into
# dotted paths (``counts`` into ``counts.<state>``, ``rates_per_min`` into ``rates_per_min.<rate>.<window>``).
ORDER_FIELDS = ("paused", "counts", "oldest_waiting_age_ms", "rates_per_min", "workers")
# Minutes: the overview's rates are over the last five, and only that window of each rate sorts
# (the others would triple the document's floats, most of writing it).
RATE_WINDOW = 5


def order_values(entry: dict) -> dict[str, Any]:
    """A queue's sortable figures, by path, from its entry of the state document."""
    values: dict[str, Any] = {}

    def walk(path: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{path}.{key}", inner)
        else:
            values[path] = value

    for field in ORDER_FIELDS:
        if field in entry:
            walk(field, entry[field])
    window = f".{RATE_WINDOW}"
    return {path: v for path, v in values.items() if not path.startswith("rates_per_min.") or path.endswith(window)}


# "counts.<state>" and "rates_per_min.<rate>.<window>", joined once per name.
_count_paths: dict[str, str] = {}
_rate_paths: dict[str, str] = {}


def monitor_order_values(entry: dict) -> dict[str, Any]:
    """``order_values`` of an entry the monitor built (``dashboard.monitor.state_document
    .state_entry``: counts of plain numbers, each rate a plain number per window), the same
    values in a tenth of the time: the monitor builds them for every queue whose figures
    changed, thousands a tick. Any other entry goes through ``order_values``."""
    values: dict[str, Any] = {}
    for field in ORDER_FIELDS:
        if field not in entry:
            continue
        value = entry[field]
        if field == "counts":
            for state, n in value.items():
                path = _count_paths.get(state)
                if path is None:
                    path = (
                        _count_paths.setdefault(state, f"counts.{state}")
                        if len(_count_paths) < 64
                        else f"counts.{state}"
                    )
                values[path] = n
        elif field == "rates_per_min":
            for rate, windows in value.items():
                if RATE_WINDOW in windows:
                    path = _rate_paths.get(rate)
                    if path is None:
                        path = f"rates_per_min.{rate}.{RATE_WINDOW}"
                        if len(_rate_paths) < 64:
                            _rate_paths[rate] = path
                    values[path] = windows[RATE_WINDOW]
        else:
            values[field] = value
    return values


class OrderTable:
    """The order document of the monitor's queues, kept row by row: a queue's row is set when its
    figures change, and writing the document transposes the rows into columns. The monitor writes
    it every tick; rebuilding it from every queue's figures cost ~30 ms a tick at 10,000 queues,
    against a few for the transposition and orjson's serialisation."""

    def __init__(self) -> None:
        self.paths: tuple[str, ...] = ()  # only grows: a path no queue has any more is a column of None
        self._known: set[str] = set()
        # queue -> (its figures by path, the paths its row was built for, the row)
        self._rows: dict[QueueRef, tuple[dict[str, Any], tuple[str, ...], tuple]] = {}
        self._queues: tuple[tuple[QueueRef, ...], str] = ((), "[]")

    def set(self, queue: QueueRef, values: dict[str, Any]) -> None:
        if not self._known.issuperset(values):
            self._known.update(values)
            self.paths = tuple(sorted(self._known))
        self._rows[queue] = (values, self.paths, tuple(map(values.get, self.paths)))

    def drop(self, queue: QueueRef) -> None:
        self._rows.pop(queue, None)

    def _row(self, queue: QueueRef) -> tuple:
        values, paths, row = self._rows[queue]
        if paths is not self.paths:  # a path was added since: rebuilt once
            row = tuple(map(values.get, self.paths))
            self._rows[queue] = (values, self.paths, row)
        return row

    def _queues_text(self, queues: tuple[QueueRef, ...]) -> str:
        if self._queues[0] != queues:
            self._queues = (queues, fast_json.dumps([[q.connection, q.prefix, q.name] for q in queues]))
        return self._queues[1]

    def text(self, head: dict, queues: Sequence[QueueRef]) -> str:
        """The document's JSON: ``head`` (when and by whom it was taken), ``queues`` (each set
        before) in that order, and one column per path, ``None`` where a queue has no value."""
        listed = tuple(queues)
        rows = [self._row(q) for q in listed]
        columns = dict(zip(self.paths, zip(*rows, strict=True), strict=True)) if rows else dict.fromkeys(self.paths, ())
        return (
            json.dumps(head)[:-1]
            + (", " if head else "")
            + '"queues": '
            + self._queues_text(listed)
            + ', "columns": '
            + fast_json.dumps(columns)
            + "}"
        )


def order_text_of_entries(head: dict, entries: Sequence[dict]) -> str:
    """The order document of whole state entries (a document built at once, not by the monitor)."""
    table, queues = OrderTable(), []
    for entry in entries:
        try:
            q = QueueRef(str(entry["connection"]), str(entry["prefix"]), str(entry["name"]))
        except (KeyError, TypeError):
            continue
        table.set(q, order_values(entry))
        queues.append(q)
    return table.text(head, queues)


# A queue as the order document names it: (connection, prefix, name), a tuple hashed and compared
# in C, where a ``QueueRef`` (a frozen dataclass) is hashed and compared by generated Python code.
_identity = operator.attrgetter("connection", "prefix", "name")


class PublishedOrder:
    """A parsed order document: which queues it has and, per figure path, their values. A
    document of another shape (or a column of the wrong length) reads as having nothing.

    A sorted overview request reads every queue's key, so nothing here is done a queue at a time
    in Python: at 10,000 queues, a ``QueueRef`` per queue and a dict keyed by them cost a sorted
    request more than parsing the document (``bench/overview_sort.py``)."""

    def __init__(self, document: dict | None) -> None:
        self._queues: list[tuple[str, str, str]] = []
        self.columns: dict[str, list] = {}
        if not isinstance(document, dict):
            return
        listed = document.get("queues")
        columns = document.get("columns")
        # Every queue a list of three strings: each check one pass in C over all of them.
        if (
            not isinstance(listed, list)
            or not isinstance(columns, dict)
            or not set(map(type, listed)) <= {list}
            or not set(map(len, listed)) <= {3}
            or not set(map(type, itertools.chain.from_iterable(listed))) <= {str}
        ):
            return
        self._queues = list(map(tuple, listed))
        self.columns = {
            path: values
            for path, values in columns.items()
            if isinstance(values, list) and len(values) == len(self._queues)
        }

    def __len__(self) -> int:
        return len(self._queues)

    def keys(self, paths: Sequence[str], key: Callable[..., Any]) -> QueueKeys:
        """``key`` of each queue's values at ``paths`` (``None`` where unknown)."""
        missing = [None] * len(self._queues)
        values = [self.columns.get(path, missing) for path in paths]
        return QueueKeys(dict(zip(self._queues, map(key, *values), strict=True)))


class QueueKeys:
    """Each published queue's sort key (``PublishedOrder.keys``), looked up by queue."""

    def __init__(self, by_queue: dict[tuple[str, str, str], Any]) -> None:
        self._by_queue = by_queue

    def of(self, queues: Iterable[QueueRef], unknown: Any) -> list:
        """The key of each of ``queues``, in their order; ``unknown`` for a queue not published."""
        return list(map(self._by_queue.get, map(_identity, queues), itertools.repeat(unknown)))
