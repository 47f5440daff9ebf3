"""What the pages and the API read, in one place so both show the same thing.

Each function resolves names through the registry, calls the framework-free reader in
``queues/`` through the connection's source (whose failures arrive as ``SourceUnavailable``).
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field

from django.conf import settings

from dashboard.connections.registry import get_redactor, get_registry
from dashboard.core import dash_redis
from dashboard.core.dash_redis import DashboardRedisError
from dashboard.live import channels as live
from dashboard.live.rates import QueueSignals, build_signals, spark_series, stored_series
from dashboard.live.workers_document import queue_workers, workers_document
from queues import jobs, listing, schedulers, snapshot
from queues import retry_advice as retry_advice_rules
from queues.errors import SourceUnavailable
from queues.health import CheckResult
from queues.keys import QueueRef, parse_job_key


@dataclass
class ConnectionView:
    name: str
    display_url: str
    snapshots: list[snapshot.QueueSnapshot]
    error: str = ""
    signals: list = field(default_factory=list)  # QueueSignals, filled by with_signals()


def overview(*, refresh: bool = False, narrow=None) -> list[ConnectionView]:
    """Every connection with its queue snapshots; a failing connection carries its error and
    does not stop the others from being shown. ``refresh`` reads the monitor's list of queues
    again instead of this process's cached copy (a new queue has just been announced).
    ``narrow``, given every connection's list of queues, returns the lists to read (one page
    of the overview)."""
    registry = get_registry()
    listed = []
    for name in registry.names:
        try:
            listed.append((name, registry.queues(name, refresh=refresh), ""))
        except SourceUnavailable as exc:
            listed.append((name, [], exc.reason))
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
            result.append(ConnectionView(name, conn.spec.display_url, snaps))
        except SourceUnavailable as exc:
            result.append(ConnectionView(name, conn.spec.display_url, [], error=exc.reason))
    return result


def resolve(connection: str, prefix: str, name: str) -> QueueRef:
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


def job_raw_field(queue: QueueRef, job_id: str, field: str) -> str:
    return get_registry().jobs(queue.connection).raw_field(queue, job_id, field, redactor=get_redactor())


def job_exists(queue: QueueRef, job_id: str) -> bool:
    return get_registry().jobs(queue.connection).exists(queue, job_id)


def queue_schedulers(queue: QueueRef) -> list[schedulers.Scheduler]:
    return get_registry().schedulers(queue.connection).list(queue)


def all_schedulers() -> list[tuple[ConnectionView, list[tuple[QueueRef, list[schedulers.Scheduler]]]]]:
    """Schedulers of every queue that has any, per connection."""
    out = []
    registry = get_registry()
    for conn in overview():
        per_queue = []
        if not conn.error and registry.offers(conn.name, "schedulers"):
            for snap in conn.snapshots:
                if snap.schedulers:
                    try:
                        per_queue.append((snap.queue, queue_schedulers(snap.queue)))
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
