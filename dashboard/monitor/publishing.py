"""Publishing: what the leader sends to browsers and to readers of its state.

* ``QueuePublisher`` diffs and renders a queue's fragments when what they show changed: its
  overview row always, its queue-page header only while someone views that page, and what
  someone watches of the queue (page 1 of a job list, a job page); it remembers what each
  showed, so unchanged fragments cost no rendering.
* ``ConnectionBanner`` holds which monitored connections are down and the banner every page
  carries about them.
* ``publish_state`` writes every queue's latest figures as one document, for /metrics and the
  health checks, which must not read the monitored Redis themselves.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from dashboard.browse import columns
from dashboard.core import dash_redis
from dashboard.core.dash_redis import DashboardRedis, DashboardRedisError
from dashboard.live import channels as live
from dashboard.live import fragments
from dashboard.live.rates import QueueSignals
from dashboard.monitor.tracking import Move, QueueChanges, QueueState, now_ms
from queues.errors import SourceUnavailable
from queues.jobs import JobSummary
from queues.keys import QueueRef
from queues.listing import JobPage
from queues.live_counts import FINISHED
from queues.sources.facets import JobsFacet
from queues.states import BROWSABLE_STATES
from queues.timings import QueueTimings

log = logging.getLogger("queuewatch.monitor")

# A queue's own fragments (overview row, queue header) are re-rendered at most this often:
# people cannot read counts that change faster, the overview is batched at 0.5 s anyway, and
# on a busy system rendering them is most of the monitor's CPU. Watched job lists and job
# pages are not held back.
FRAGMENT_MIN_INTERVAL = 0.5


def apply_moves(ids: tuple[str, ...], moves: list[Move], state: str) -> tuple[str, ...]:
    """Page-1 ids of a finished set (newest first) after these moves, in event order."""
    out = list(ids)
    for job_id, old, new in moves:
        if old == state or new == state:
            if job_id in out:
                out.remove(job_id)
            if new == state:
                out.insert(0, job_id)
    return tuple(out)


@dataclass
class Shown:
    """What a queue's published fragments show, so unchanged ones are not rendered again."""

    row_key: tuple | None = None  # the overview row (``columns.row_key``)
    live_key: tuple | None = None  # the queue page's header (``fragments.queue_live_key``); None: not rendered
    header_cached: bool = True  # the reconnect cache may hold a header (unknown at first: one left by an earlier term)
    rendered_at: float = 0.0  # monotonic time of the last render of the queue's own fragments
    fresh_lists: set[str] = field(default_factory=set)  # watched list states already published
    list_keys: dict[str, tuple] = field(default_factory=dict)  # state -> what its page 1 showed
    list_rows: dict[str, dict[str, JobSummary]] = field(default_factory=dict)  # state -> page-1 rows by id
    job_states: dict[str, str] = field(default_factory=dict)  # last seen state of watched jobs


class QueuePublisher:
    def __init__(self, *, publisher: live.Publisher, redactor):
        self.publisher = publisher
        self.redactor = redactor
        self.shown: dict[QueueRef, Shown] = {}
        self.held_back: dict[QueueRef, float] = {}  # queues whose fragments are due again at (monotonic)
        self.failed_items: set[dash_redis.Watch] = set()  # watched items already logged as failing

    def reset(self) -> None:
        """Forget what was published (e.g. after a takeover), so everything is sent afresh."""
        self.shown = {}
        self.held_back = {}
        self.publisher.forget()

    def forget(self, queues: list[QueueRef]) -> None:
        for q in queues:
            self.shown.pop(q, None)
            self.held_back.pop(q, None)

    def due_again(self, now: float) -> list[QueueRef]:
        """Queues held back whose fragments are due now (they are no longer held)."""
        due = [q for q, at in self.held_back.items() if at <= now]
        for q in due:
            del self.held_back[q]
        return due

    def next_due(self) -> float | None:
        return min(self.held_back.values()) if self.held_back else None

    def publish_queue(
        self,
        sig: QueueSignals,
        watches: list[dash_redis.Watch],
        jobs: JobsFacet | None,
        *,
        changes: QueueChanges,
        full: bool,
    ) -> bool:
        """Publish a queue's fragments if what they show changed, then what is watched of it:
        job lists whose state jobs entered or left, job pages when their job had events (or,
        on full ticks, while it is active: log lines arrive without events), where the
        connection's kind offers ``jobs``. Returns whether the queue's own fragments changed."""
        q = sig.snapshot.queue
        shown = self.shown.setdefault(q, Shown())
        mine = [w for w in watches if w.queue == q]
        # Forget what nobody watches any more: a returning watcher must get a fresh render.
        shown.fresh_lists &= {w.target for w in mine if w.kind == dash_redis.Watch.LIST}
        watched_jobs = {w.target for w in mine if w.kind == dash_redis.Watch.JOB}
        shown.job_states = {k: v for k, v in shown.job_states.items() if k in watched_jobs}
        # The header only while someone views the queue page (a busy queue's header changes
        # every refresh, and rendering nobody's header was a large share of the monitor's CPU).
        # The state document, /metrics and alert inputs do not depend on it.
        header_viewed = any(w.kind == dash_redis.Watch.QUEUE for w in mine)
        if not header_viewed:
            self.stop_header(q, shown)
        row_key = columns.row_key(sig)
        live_key = fragments.queue_live_key(sig) if header_viewed else None
        first_view = header_viewed and shown.live_key is None
        changed = (row_key, live_key) != (shown.row_key, shown.live_key)
        since = time.monotonic() - shown.rendered_at
        if changed and not full and not first_view and since < FRAGMENT_MIN_INTERVAL:
            self.held_back.setdefault(q, shown.rendered_at + FRAGMENT_MIN_INTERVAL)
            changed = False
        if changed:
            shown.rendered_at = time.monotonic()
            sig.spark = {}  # sparklines come from stored history on page load; live rows keep theirs
            if row_key != shown.row_key:
                self.publisher.publish(live.OVERVIEW, *fragments.overview_row(sig))
            if live_key is not None and live_key != shown.live_key:
                self.publisher.publish(live.queue_group(q), *fragments.queue_live(sig))
                shown.header_cached = True
            shown.row_key, shown.live_key = row_key, live_key
        for item in mine if jobs is not None else ():
            try:
                if item.kind == dash_redis.Watch.LIST and item.target in BROWSABLE_STATES:
                    self.publish_list(q, item.target, sig, jobs, changes=changes)
                elif item.kind == dash_redis.Watch.JOB:
                    self.publish_job(q, item.target, jobs, changes=changes, full=full)
            except SourceUnavailable:
                log.debug("watched item of %s skipped this tick", q, exc_info=True)
            except Exception:  # noqa: BLE001 - a hostile job costs its own watched item, never the loop
                self.item_failed(item)
        return changed

    def stop_header(self, q: QueueRef, shown: Shown) -> None:
        """Nobody views the queue page: forget its header and drop it from the reconnect cache,
        so a tab opened later is not sent a stale one; the first refresh that sees the new
        viewer renders it at once (``first_view``: never held back)."""
        shown.live_key = None
        if shown.header_cached:
            self.publisher.uncache(live.queue_group(q), live.queue_live_id(q))
            shown.header_cached = False

    def item_failed(self, item: dash_redis.Watch) -> None:
        """Log a watched item that cannot be read or rendered, once (it fails every tick)."""
        if item not in self.failed_items:
            self.failed_items.add(item)
            log.exception("cannot read or render %s; skipping it while it fails", str(item)[:300])

    def publish_job(self, q: QueueRef, job_id: str, jobs: JobsFacet, *, changes: QueueChanges, full: bool) -> None:
        """A watched job page, read when its job had events, is new to us, or (on full ticks)
        is active."""
        shown = self.shown[q]
        last_state = shown.job_states.get(job_id)
        if job_id in changes.jobs or last_state is None or (full and last_state == "active"):
            job = jobs.live_detail(q, job_id, redactor=self.redactor)
            shown.job_states[job_id] = job.state if job else "gone"
            if job is not None:
                self.publisher.publish(live.job_group(q, job_id), *fragments.job_live(job))
                self.publisher.publish(live.job_operators_group(q, job_id), *fragments.job_actions(job))

    def publish_list(
        self, q: QueueRef, state: str, sig: QueueSignals, jobs: JobsFacet, *, changes: QueueChanges
    ) -> None:
        """Page 1 of a watched job list, re-rendered when its ids, stalled markers or count
        change. The ids of a finished list follow from the moves the events describe (a new
        failure goes on top, a retried job leaves); other lists are re-read when jobs entered
        or left them. Rows are read only for jobs not already on the page, so a new failure
        costs one read however long the list."""
        shown = self.shown[q]
        size = fragments.LIVE_PAGE_SIZE
        count = sig.snapshot.counts.get(state, 0)
        moves = changes.moves
        fresh = state in shown.fresh_lists
        ids = scores = None
        if fresh and state not in changes.states and moves is not None:
            ids = shown.list_keys[state][0]
        elif fresh and state in FINISHED and moves is not None:
            ids = apply_moves(shown.list_keys[state][0], moves, state)[:size]
        if ids is not None and len(ids) != min(size, count):
            # Jobs left page 1 and we do not know which move up, or retention trimmed a short
            # list without events: the ids no longer agree with the count, so read them.
            ids = None
        if ids is None:
            ids, scores = jobs.first_page(q, state, size=size)
            ids = tuple(ids)
        list_key = (ids, tuple(sig.stalled_now), count)
        if fresh and shown.list_keys.get(state) == list_key:
            return
        rows = shown.list_rows.setdefault(state, {})
        for job_id in changes.jobs:
            rows.pop(job_id, None)  # its fields may have changed (e.g. a new delay)
        missing = [i for i in ids if i not in rows]
        if missing:
            by_id = dict(zip(ids, scores)) if scores else {}
            got = jobs.summaries(
                q, missing, [by_id.get(i) for i in missing] if scores else None, redactor=self.redactor
            )
            rows.update((job.id, job) for job in got)
        shown.list_rows[state] = {i: rows[i] for i in ids}
        page = JobPage(state, [rows[i] for i in ids], count, 1, size, has_next=count > size)
        self.publisher.publish(live.list_group(q, state), *fragments.job_table(q, page, sig.stalled_now))
        shown.fresh_lists.add(state)
        shown.list_keys[state] = list_key


class ConnectionBanner:
    """Which monitored connections are down (name -> error), and the banner every page shows
    about them, re-published on every change."""

    def __init__(self, publisher: live.Publisher):
        self.publisher = publisher
        self.down: dict[str, str] = {}

    def reset(self) -> None:
        self.down = {}

    def is_down(self, name: str) -> bool:
        return name in self.down

    def set_down(self, name: str, error: str) -> None:
        self.down[name] = error
        self.publish()

    def set_up(self, name: str) -> None:
        self.down.pop(name, None)
        self.publish()

    def publish(self) -> None:
        self.publisher.publish(live.ALL, *fragments.banner(dict(self.down)))


def timings_totals(timings: QueueTimings) -> dict:
    """Per job name, cumulative wait and processing histograms since this monitor started
    leading, at the Prometheus bounds (``queues.timings.PROMETHEUS_LE_SECONDS``), for /metrics."""

    def histogram(h):
        return {"le": h.cumulative(), "count": h.count, "sum_ms": h.sum_ms}

    return {
        name: {"wait": histogram(t.wait), "processing": histogram(t.processing)}
        for name, t in sorted(timings.totals.items())
    }


def publish_state(
    dash: DashboardRedis,
    *,
    states: dict[QueueRef, QueueState],
    connection_names,
    down: dict[str, str],
    monitor_name: str,
) -> None:
    """The latest figures of every queue as one JSON document in the dashboard Redis, for
    readers that must not touch the monitored Redis themselves (Prometheus /metrics,
    health checks). Written once per tick, whatever the number of readers."""
    queues = []
    for st in states.values():
        sig = st.signals
        if sig is None:
            continue
        queues.append(
            {
                **sig.snapshot.as_dict(),
                "is_dlq": sig.is_dlq,
                "rates_per_min": {
                    "completed": sig.completed_per_min,
                    "failed": sig.failed_per_min,
                    "dead_letter": sig.dlq_growth_per_min,
                    "stalled": sig.stalled_per_min,
                    "attempt_failed": sig.attempt_failed_per_min,
                },
                "stalled_now": len(sig.stalled_now),
                "stall_failed_15m": sig.stall_failed_15m,
                "events_total": dict(st.totals),
                "stream_gaps": st.gaps,
                "timings": timings_totals(st.timings),
                # As the monitor last read CLIENT LIST; null when unknown (refused, or connection down).
                "workers": None if sig.workers is None or sig.snapshot.queue.connection in down else sig.workers,
            }
        )
    connections = {name: {"ok": name not in down, "error": down.get(name)} for name in connection_names}
    try:
        dash_redis.publish_state(
            dash, {"taken_at": now_ms(), "monitor": monitor_name, "connections": connections, "queues": queues}
        )
    except DashboardRedisError:
        log.warning("%s: could not publish the state document", monitor_name)
