"""Publishing: what the leader sends to browsers and to readers of its state.

* ``QueuePublisher`` diffs and renders a queue's fragments when what they show changed: its
  overview row always, its queue-page header only while someone views that page, and what
  someone watches of the queue (page 1 of a job list, a job page); it remembers what each
  showed, so unchanged fragments cost no rendering.
* ``ConnectionBanner`` holds which monitored connections are down and the banner every page
  carries about them.

The state document every queue's figures are written in is ``state_document``'s.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from dashboard.browse import columns
from dashboard.core import dash_redis
from dashboard.live import channels as live
from dashboard.live import fragments
from dashboard.live.rates import QueueSignals
from dashboard.monitor.queue_state import Move, QueueChanges
from queues.errors import SourceUnavailable
from queues.jobs import JobLive, JobSummary
from queues.keys import QueueRef
from queues.listing import JobPage
from queues.live_counts import FINISHED
from queues.sources.facets import JobsFacet
from queues.states import BROWSABLE_STATES

log = logging.getLogger("queuewatch.monitor")

# A queue's own fragments (overview row, queue header) are re-rendered at most this often:
# people cannot read counts that change faster, the overview is batched at 0.5 s anyway, and
# on a busy system rendering them is most of the monitor's CPU. Watched job lists and job
# pages are not held back. A tick renders what changed whatever the interval, and does not start
# one (``publish_queue``).
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

    row_key: tuple | None = None  # the overview row's figures (``columns.row_key``), rendered or not
    row_shown: tuple | None = None  # the row_key last rendered while the row was watched; None: not rendered
    row_cached: bool = True  # the reconnect cache may hold the row (unknown at first: one left by an earlier term)
    live_key: tuple | None = None  # the queue page's header (``fragments.queue_live_key``); None: not rendered
    header_cached: bool = True  # the reconnect cache may hold a header (unknown at first: one left by an earlier term)
    rendered_at: float = 0.0  # monotonic time of the last render of the queue's own fragments
    fresh_lists: set[str] = field(default_factory=set)  # watched list states already published
    list_keys: dict[str, tuple] = field(default_factory=dict)  # state -> what its page 1 showed
    list_rows: dict[str, dict[str, JobSummary]] = field(default_factory=dict)  # state -> page-1 rows by id
    job_states: dict[str, str] = field(default_factory=dict)  # last seen state of watched jobs
    # A watched job's last read and when it was made: a read showing nothing new keeps that
    # stamp, so its fragments render the same and are not sent again.
    job_reads: dict[str, tuple[JobLive, int]] = field(default_factory=dict)


class QueuePublisher:
    def __init__(self, *, publisher: live.Publisher, redactor):
        self.publisher = publisher
        self.redactor = redactor
        self.shown: dict[QueueRef, Shown] = {}
        self.held_back: dict[QueueRef, float] = {}  # queues whose fragments are due again at (monotonic)
        self.failed_items: set[dash_redis.Watch] = set()  # watched items already logged as failing
        self.queues_added = 0  # announcements sent (``announce_queues``)

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
        mine: list[dash_redis.Watch],
        jobs: JobsFacet | None,
        *,
        changes: QueueChanges,
        full: bool,
    ) -> bool:
        """Publish a queue's fragments if what they show changed, then what is watched of it:
        job lists whose state jobs entered or left, job pages when their job had events (or,
        on full ticks, while it is active: log lines arrive without events), where the
        connection's kind offers ``jobs``. ``mine``: what is watched of this queue. Returns
        whether the queue's own fragments changed."""
        q = sig.snapshot.queue
        shown = self.shown.setdefault(q, Shown())
        # Forget what nobody watches any more: a returning watcher must get a fresh render.
        shown.fresh_lists &= {w.target for w in mine if w.kind == dash_redis.Watch.LIST}
        watched_jobs = {w.target for w in mine if w.kind == dash_redis.Watch.JOB}
        shown.job_states = {k: v for k, v in shown.job_states.items() if k in watched_jobs}
        shown.job_reads = {k: v for k, v in shown.job_reads.items() if k in watched_jobs}
        # The header only while someone views the queue page (a busy queue's header changes
        # every refresh, and rendering nobody's header was a large share of the monitor's CPU).
        # The state document, /metrics and alert inputs do not depend on it.
        header_viewed = any(w.kind == dash_redis.Watch.QUEUE for w in mine)
        if not header_viewed:
            self.stop_header(q, shown)
        # The overview row likewise only while an overview page shows it (``live.overview_rows``):
        # at thousands of changing queues, rendering every changed row was more than a core.
        row_viewed = any(w.kind == dash_redis.Watch.ROW for w in mine)
        if not row_viewed:
            self.stop_row(q, shown)
        row_key = columns.row_key(sig)
        live_key = fragments.queue_live_key(sig) if header_viewed else None
        first_view = (header_viewed and shown.live_key is None) or (row_viewed and shown.row_shown is None)
        # ``changed``: what the queue shows changed (its gauges are stored for this minute again);
        # rendered only where viewed.
        changed = (row_key, live_key) != (shown.row_key, shown.live_key)
        render_row = row_viewed and row_key != shown.row_shown
        since = time.monotonic() - shown.rendered_at
        if (changed or render_row) and not full and not first_view and since < FRAGMENT_MIN_INTERVAL:
            self.held_back.setdefault(q, shown.rendered_at + FRAGMENT_MIN_INTERVAL)
            changed = render_row = False
        if changed or render_row:
            if not full:
                # Only renders events caused start the interval: a tick's (at most one a second)
                # holding back the event just after it cost a viewer up to half a second.
                shown.rendered_at = time.monotonic()
            sig.spark = {}  # sparklines come from stored history on page load; live rows keep theirs
            if render_row:
                self.publisher.publish(live.OVERVIEW, *fragments.overview_row(sig))
                shown.row_shown, shown.row_cached = row_key, True
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

    def stop_row(self, q: QueueRef, shown: Shown) -> None:
        """No overview page shows the queue's row: drop it from the reconnect cache (a page
        loaded later renders it current); a page that shows it again gets it rendered at once."""
        shown.row_shown = None
        if shown.row_cached:
            self.publisher.uncache(live.OVERVIEW, live.row_id(q))
            shown.row_cached = False

    def announce_queues(self) -> None:
        """Queues appeared: every overview page reloads its tables once (rows are rendered
        only where shown, so a new queue's row cannot announce it). Sent to every page's socket
        (the overview's carries them too), never kept for reconnects."""
        self.queues_added += 1
        self.publisher.publish(live.ALL, *fragments.queues_added(self.queues_added), force=True)
        self.publisher.uncache(live.ALL, fragments.QUEUES_ADDED_ID)

    def item_failed(self, item: dash_redis.Watch) -> None:
        """Log a watched item that cannot be read or rendered, once (it fails every tick)."""
        if item not in self.failed_items:
            self.failed_items.add(item)
            log.exception("cannot read or render %s; skipping it while it fails", str(item)[:300])

    def publish_job(self, q: QueueRef, job_id: str, jobs: JobsFacet, *, changes: QueueChanges, full: bool) -> None:
        """A watched job page, read when its job had events (or events were missed), is new to
        us, or (on full ticks) is active."""
        shown = self.shown[q]
        last_state = shown.job_states.get(job_id)
        if job_id in changes.jobs or changes.events_missed or last_state is None or (full and last_state == "active"):
            read_at = live.read_stamp()
            job = jobs.live_detail(q, job_id, redactor=self.redactor)
            shown.job_states[job_id] = job.state if job else "gone"
            if job is not None:
                last = shown.job_reads.get(job_id)
                if last is not None and last[0] == job:
                    read_at = last[1]
                shown.job_reads[job_id] = (job, read_at)
                self.publisher.publish(live.job_group(q, job_id), *fragments.job_live(job, read_at=read_at))
                self.publisher.publish(
                    live.job_operators_group(q, job_id), *fragments.job_live_for_operators(job, read_at=read_at)
                )

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
