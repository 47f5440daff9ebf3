"""What the pages and the API read, in one place so both show the same thing.

Each function resolves names through the registry, calls the framework-free reader in
``queues/`` through the connection's source (whose failures arrive as ``SourceUnavailable``).
"""

from __future__ import annotations

import datetime as dt
import operator
import time
from dataclasses import dataclass, field
from typing import NamedTuple

from django.conf import settings

from dashboard.accounts import scopes
from dashboard.accounts.auth import require_visible
from dashboard.browse import columns
from dashboard.browse.params import sort_snapshots
from dashboard.connections.registry import get_redactor, get_registry
from dashboard.core import dash_redis, order_document, state_store
from dashboard.core.dash_redis import DashboardRedisError
from dashboard.live import channels as live
from dashboard.live.rates import QueueSignals, build_signals, spark_series, stored_series
from dashboard.live.workers_document import queue_workers, workers_document
from queues import jobs, listing, schedulers, snapshot
from queues import retry_advice as retry_advice_rules
from queues.errors import SourceUnavailable
from queues.flows import FlowLimits, FlowTree
from queues.health import CheckResult
from queues.keys import QueueRef, parse_job_key


@dataclass
class ConnectionView:
    name: str
    display_url: str
    snapshots: list[snapshot.QueueSnapshot]
    error: str = ""
    signals: list = field(default_factory=list)  # QueueSignals, filled by with_signals()
    stale_since: int | None = None  # ms: the queue list is the last a now-stopped monitor published


def overview(user, *, refresh: bool = False, narrow=None) -> list[ConnectionView]:
    """Every connection with its queue snapshots — of the queues ``user`` may see, and only
    the connections where they see any (or that a grant names); a failing connection carries
    its error and does not stop the others from being shown. ``refresh`` reads the monitor's
    list of queues again instead of this process's cached copy (a new queue has just been
    announced). ``narrow``, given every connection's list of queues, returns the lists to read
    (one page of the overview)."""
    registry = get_registry()
    listed = []
    for name in registry.names:
        try:
            found = scopes.visible_queues(user, registry.queues(name, refresh=refresh))
            listed.append((name, found, ""))
        except SourceUnavailable as exc:
            found = []
            listed.append((name, [], exc.reason))
        if not found and not scopes.sees_connection(user, name):
            listed.pop()
    chosen = narrow([queues for _, queues, _ in listed]) if narrow else [queues for _, queues, _ in listed]
    result = []
    for (name, _, error), queues in zip(listed, chosen):
        conn = registry.connection(name)
        if error:
            result.append(ConnectionView(name, conn.spec.display_url, [], error=error))
            continue
        try:
            with conn.source.errors():
                snaps = conn.source.snapshots(queues)
            result.append(ConnectionView(name, conn.spec.display_url, snaps, stale_since=registry.stale_since(name)))
        except SourceUnavailable as exc:
            result.append(ConnectionView(name, conn.spec.display_url, [], error=exc.reason))
    return result


class Listed(NamedTuple):
    """A queue before its snapshot is read: enough for the overview's name sorts and filter."""

    queue: QueueRef


def ordered_overview(
    user, *, sort: str, descending: bool, query: str, pick, refresh: bool = False
) -> tuple[list[ConnectionView], list[int]]:
    """The overview's (and the API list's) rows in order, one page of them read: each
    connection's queues filtered by ``query`` (a name substring) and sorted by ``sort``;
    ``pick``, given every connection's ordered rows (its queues, or their snapshots where every
    queue is read), returns the slice of each to show. Returns
    the connections with those rows' snapshots (in order) and each connection's filtered total.

    The order costs the monitored Redis nothing: sorted by name, it comes from the queue list;
    sorted by a figure, from the order document the monitor last published (at most a tick old).
    Only the page's queues are then read, so a request's work is bounded by the page, not by the
    number of queues; queues the monitor has not published yet sort as having no figures. Without
    an order document (or for a column with no published key), a sort by a snapshot's figure
    reads every queue (the order needs them all) and the page's rows are those read; a sort by
    what only the monitor derives (rates, workers) is then by name."""
    needle = query.lower()
    published = columns.published_key(sort)
    by_snapshot = columns.sort_key(sort)
    order = published_order() if published is not None else None
    if by_snapshot is not None and sort not in columns.NAME_SORTS and (published is None or order is None):
        connections = overview(user, refresh=refresh)
        ordered = [sort_snapshots(_named(conn.snapshots, needle), sort, descending) for conn in connections]
        for conn, part in zip(connections, pick(ordered), strict=True):
            conn.snapshots = part
        return connections, [len(o) for o in ordered]

    keys = order.keys(published.paths, published.key) if order is not None and published is not None else None
    unknown = published.key(*[None] * len(published.paths)) if published is not None else None

    def ordered(queues: list[QueueRef]) -> list[QueueRef]:
        """A connection's queues whose name holds the query, in the sort's order."""
        kept = _named(queues, needle, name=_name_of)
        if published is None:
            return [x.queue for x in sort_snapshots(map(Listed, kept), sort, descending)]
        # Queues, not a wrapper each: at 10,000 queues a request, every object made per queue
        # costs its making and a share of the garbage collector's runs.
        figures = keys.of(kept, unknown) if keys is not None else [unknown] * len(kept)
        if by_snapshot is not None:  # ties by name in the sort's direction, as the snapshot key has it
            return _ordered(kept, figures, list(map(_name_of, kept)), descending=descending, ties_descending=descending)
        # Ties, and queues the monitor has not published yet, in name order.
        ties = list(map(columns.sort_key("name"), map(Listed, kept)))
        return _ordered(kept, figures, ties, descending=descending, ties_descending=False)

    totals: list[int] = []

    def narrow(lists):
        ordered_lists = [ordered(queues) for queues in lists]
        totals.extend(map(len, ordered_lists))
        return pick(ordered_lists)

    # The page's snapshots come in the order of its queues (``Source.snapshots``).
    return overview(user, refresh=refresh, narrow=narrow), totals


_name_of = operator.attrgetter("name")  # of a queue


def _ordered(items: list, keys: list, ties: list, *, descending: bool, ties_descending: bool) -> list:
    """``items`` in the order of ``keys`` (one per item), those with equal keys in the order of
    ``ties`` (one per item), those equal in both as they came: what ``sorted`` by a tuple of the
    two gives (when both go the same way), by two stable sorts of the items' positions instead,
    so that no tuple is built and no Python function called per item (10,000 a request)."""
    positions = sorted(range(len(items)), key=ties.__getitem__, reverse=ties_descending)
    positions.sort(key=keys.__getitem__, reverse=descending)
    return list(map(items.__getitem__, positions))


def _named(items, needle: str, *, name=operator.attrgetter("queue.name")) -> list:
    """The rows (snapshots, or queues with ``name=_name_of``) whose queue name holds ``needle``
    (any case); all when it is empty."""
    return [x for x, n in zip(items, map(name, items)) if needle in n.lower()] if needle else list(items)


def published_order() -> order_document.PublishedOrder | None:
    """The order document the leading monitor last published (``dashboard.core.order_document``),
    parsed; None when no monitor publishes one (or the dashboard Redis is unreachable)."""
    try:
        document = state_store.read_order(dash_redis.dashboard_redis())
    except DashboardRedisError:
        return None
    return None if document is None else order_document.PublishedOrder(document)


def published_entry(queue: QueueRef) -> tuple[bool, dict | None]:
    """Whether a leading monitor publishes its state document, and this queue's entry of it (its
    figures, rates, workers, totals, timings; None when it has none yet). Reads only that entry."""
    try:
        client = dash_redis.dashboard_redis()
        entry = state_store.read_state_entry(client, queue)
        return (True, entry) if entry is not None else (state_store.read_state_head(client) is not None, None)
    except DashboardRedisError:
        return False, None


def resolve(user, connection: str, prefix: str, name: str) -> QueueRef:
    """The queue of a URL, if it exists and ``user`` may see it (else ``QueueNotFound``: the
    same 404 either way)."""
    require_visible(user, QueueRef(connection, prefix, name))
    return get_registry().queue(connection, prefix, name)


def queue_snapshot(queue: QueueRef) -> snapshot.QueueSnapshot:
    source = get_registry().source(queue.connection)
    with source.errors():
        return source.snapshots([queue])[0]


def job_page(queue: QueueRef, state: str, *, page: int, page_size: int, name_filter: str) -> listing.JobPage:
    return (
        get_registry()
        .jobs(queue.connection)
        .page(
            queue,
            state,
            page=page,
            page_size=page_size,
            name_filter=name_filter,
            scan_limit=settings.QUEUEWATCH_SCAN_SAMPLE,
            redactor=get_redactor(),
        )
    )


def job_detail(queue: QueueRef, job_id: str) -> jobs.JobDetail:
    return (
        get_registry()
        .jobs(queue.connection)
        .detail(queue, job_id, cap=settings.QUEUEWATCH_PAYLOAD_CAP, redactor=get_redactor())
    )


def job_flow(queue: QueueRef, job_id: str, *, from_root: bool) -> FlowTree:
    """The flow the job belongs to, as a tree within the default bounds (``queues.flows``)."""
    return (
        get_registry()
        .jobs(queue.connection)
        .flow(queue, job_id, limits=FlowLimits(), from_root=from_root, redactor=get_redactor())
    )


def job_raw_field(queue: QueueRef, job_id: str, field: str) -> str:
    return get_registry().jobs(queue.connection).raw_field(queue, job_id, field, redactor=get_redactor())


def job_exists(queue: QueueRef, job_id: str) -> bool:
    return get_registry().jobs(queue.connection).exists(queue, job_id)


SCHEDULERS_PER_PAGE = 100


def queue_schedulers(queue: QueueRef, page: int = 1) -> tuple[list[schedulers.Scheduler], int]:
    """Page ``page`` of the queue's schedulers (``SCHEDULERS_PER_PAGE`` each), and how many it has."""
    start = (page - 1) * SCHEDULERS_PER_PAGE
    return get_registry().schedulers(queue.connection).page(queue, start=start, count=SCHEDULERS_PER_PAGE)


def read_only_schedulers(queues) -> set[str]:
    """The connections among ``queues``' whose kind reads job schedulers but offers no edits
    (their rows get no edit links)."""
    registry = get_registry()
    return {
        q.connection
        for q in queues
        if registry.offers(q.connection, "schedulers")
        and not getattr(registry.source(q.connection).schedulers, "edits", True)
    }


def all_schedulers(user) -> list[tuple[ConnectionView, list[tuple[QueueRef, list[schedulers.Scheduler], int]]]]:
    """The first page of schedulers of every queue ``user`` may see that has any, with their number,
    per connection."""
    out = []
    registry = get_registry()
    for conn in overview(user):
        per_queue = []
        if not conn.error and registry.offers(conn.name, "schedulers"):
            for snap in conn.snapshots:
                if snap.schedulers:
                    try:
                        per_queue.append((snap.queue, *queue_schedulers(snap.queue)))
                    except SourceUnavailable as exc:
                        conn.error = exc.reason
                        break
        out.append((conn, per_queue))
    return out


def link_for_job_key(connection: str, full_key: str) -> tuple[str, str, str] | None:
    """(prefix, queue, id) for a full job key under one of this connection's prefixes.

    The discovered queues resolve names that contain ``:`` (they are read from the list the
    monitor publishes, so this costs the monitored Redis nothing)."""
    registry = get_registry()
    known = [(ref.prefix, ref.name) for ref in registry.queues(connection)]
    return parse_job_key(full_key, registry.all_prefixes(connection), known)


ADVICE_CACHE_S = 60  # one sample per queue per minute, however many tabs or reloads


def retry_advice(queue: QueueRef) -> list[CheckResult]:
    """Retry-policy advice for one queue (queues.retry_advice): a bounded sample of its jobs,
    read at most once a minute (kept in the dashboard Redis), and the monitor's worker count."""
    cache_key = f"queuewatch:advice:{live.queue_id(queue)}"
    sample = None
    try:
        dash = dash_redis.dashboard_redis()
        stored = dash_redis.get_document(dash, cache_key)
    except DashboardRedisError:
        dash, stored = None, None  # no dashboard Redis: read afresh each time; the page works without it
    except ValueError:
        stored = None
    try:
        sample = retry_advice_rules.Sample.from_dict(queue, stored) if stored else None
    except (ValueError, KeyError, TypeError):
        sample = None  # an entry of another shape (an older version): read afresh and replace it
    if sample is None:
        sample = get_registry().jobs(queue.connection).option_sample(queue, now_ms=int(time.time() * 1000))
        try:
            if dash is not None:
                dash_redis.put_document(dash, cache_key, sample.as_dict(), ex=ADVICE_CACHE_S)
        except DashboardRedisError:
            pass
    found = queue_workers(queue)
    return retry_advice_rules.advise(sample, workers=len(found.workers) if found.known else None)


def with_signals(snapshots: list[snapshot.QueueSnapshot], *, spark: bool = False) -> list[QueueSignals]:
    """Rates for each snapshot from the minute counters the monitor has stored, and worker
    counts from the monitor's workers document."""
    now = dt.datetime.now(dt.UTC)
    queues = [s.queue for s in snapshots]
    series = stored_series(queues, now=now)
    sparks = spark_series(queues, now=now) if spark else {}
    doc = workers_document() if snapshots else {}
    now_ms = int(time.time() * 1000)
    result = []
    for snap in snapshots:
        found = queue_workers(snap.queue, doc)
        sig = build_signals(
            snap, series[snap.queue], now_ms=now_ms, workers=len(found.workers) if found.known else None
        )
        sig.spark = sparks.get(snap.queue, {})
        result.append(sig)
    return result
