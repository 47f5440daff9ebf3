"""The monitor's refresh: read the current figures of some queues (exactly where needed) and
render what changed of them, watched queues first. The loop (``loop``) decides which queues and
when; this module only does the reading and rendering, connection by connection."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

from dashboard.connections.registry import Registry
from dashboard.core import dash_redis
from dashboard.live.rates import QueueSignals
from dashboard.monitor.intake import EventIntake
from dashboard.monitor.publishing import ConnectionBanner, QueuePublisher
from dashboard.monitor.tracking import CountTracker, now_ms
from queues.errors import SourceUnavailable
from queues.keys import QueueRef

# How long a chunk of a long refresh aims to last (``refresh_in_chunks``): the events of a watched
# queue wait about that long for the loop, whatever the machine. A fixed 250 queues was ~50 ms on a
# quiet machine and 250 ms on a loaded one (bench/many_queues.py), most of a viewer's latency.
CHUNK_SECONDS = 0.05
FIRST_CHUNK, LEAST_CHUNK, MOST_CHUNK = 250, 20, 1000  # queues


class ChunkSizer:
    """How many queues the next chunk takes: ``target`` seconds at the cost per queue the last
    refreshes measured (halfway between the newest measure and the ones before, so one chunk of
    exact reads does not swing it), within ``least`` and ``most``."""

    def __init__(
        self,
        *,
        first: int = FIRST_CHUNK,
        target: float = CHUNK_SECONDS,
        least: int = LEAST_CHUNK,
        most: int = MOST_CHUNK,
    ):
        self.target, self.least, self.most = target, least, most
        self.per_queue = target / first  # seconds

    def size(self) -> int:
        return max(self.least, min(self.most, round(self.target / self.per_queue)))

    def took(self, queues: int, seconds: float) -> None:
        """A refresh of ``queues`` queues took ``seconds``. Refreshes of fewer than ``least``
        queues are not measured: their fixed costs (round trips) would read as a cost per queue."""
        if queues >= self.least:
            self.per_queue = (self.per_queue + max(seconds, 1e-6) / queues) / 2


class Refresher:
    def __init__(
        self,
        *,
        registry: Registry,
        tracker: CountTracker,
        intake: EventIntake,
        banner: ConnectionBanner,
        queue_publisher: QueuePublisher,
        dash,
    ):
        self.registry = registry
        self.tracker = tracker
        self.intake = intake
        self.banner = banner
        self.queue_publisher = queue_publisher
        self.dash = dash
        self.chunks = ChunkSizer()

    def refresh(
        self,
        queues: list[QueueRef],
        *,
        full: bool,
        exact: bool,
        exact_queues: set[QueueRef] | frozenset[QueueRef] = frozenset(),
        publish_state: Callable[[], None] | None = None,
        watched_index: set[QueueRef] | None = None,
    ) -> bool:
        """Publish whatever changed in these queues. With ``exact`` (every snapshot interval),
        and for queues whose estimate cannot be trusted (new, stream gap, ``cleaned``), read an
        exact snapshot first; otherwise use the counts kept current from events. Queues someone
        watches (a job list, a job page) go first: on a busy system a full refresh renders
        every queue, and a watched list must not wait for that.

        ``publish_state``, when given, publishes the state document right after
        the figures are known and before any rendering: rendering every queue took up to a
        second on a loaded machine, and a document written after it carried figures that much
        older than its ``taken_at`` (a set growing 3 jobs/s then read 3 under the truth).
        ``exact_queues``: these are read exactly too (the rolling pass's share).
        ``watched_index``: the index of watched queues, when the caller read it already. Returns
        whether an overview fragment changed."""
        tracked = [q for q in queues if q in self.tracker.states]
        watches = self.read_watched(tracked, watched_index)
        watched = set(watches)
        now = now_ms()
        unreachable: set[str] = set()  # tried once this refresh: do not wait for its timeout twice
        read: list[tuple[str, list[QueueSignals]]] = []
        for group in ([q for q in tracked if q in watched], [q for q in tracked if q not in watched]):
            by_conn: dict[str, list[QueueRef]] = {}
            for q in group:
                by_conn.setdefault(q.connection, []).append(q)
            for name, qs in by_conn.items():
                if name in unreachable:
                    continue
                signals = self._read_connection(name, qs, now, exact=exact, exact_queues=exact_queues)
                if signals is None:
                    unreachable.add(name)
                else:
                    read.append((name, signals))
        if publish_state is not None:
            publish_state()
        changed_overview = False
        for name, signals in read:  # watched queues first
            changed_overview |= self._render_connection(name, signals, watches, now, full=full)
        return changed_overview

    def refresh_in_chunks(
        self,
        queues: list[QueueRef],
        *,
        full: bool,
        exact: bool,
        exact_queues: set[QueueRef] | frozenset[QueueRef],
        publish_whole: Callable[[], None] | None,
        publish_some: Callable[[list[QueueRef]], None],
        between: Callable[[], None],
    ) -> bool:
        """``refresh`` a chunk of queues at a time (``ChunkSizer``: about ``CHUNK_SECONDS``
        each), watched queues first, running ``between`` between chunks: a tick or a burst of
        quiet reads at 10,000 queues refreshed thousands of queues in one step of up to two
        seconds, and the events of a queue someone watches waited for all of it. Each chunk
        publishes its queues' entries of the state document (``publish_some``) before rendering
        them; the last one the whole document instead when ``publish_whole``. Returns whether an
        overview fragment changed."""
        if len(queues) <= self.chunks.size():
            publish = publish_whole if publish_whole is not None else partial(publish_some, queues)
            return self._timed_refresh(queues, full=full, exact=exact, exact_queues=exact_queues, publish_state=publish)
        # The index of watched queues once for the whole refresh, not once per chunk.
        watched = self.watched_queues()
        queues = sorted(queues, key=lambda q: q not in watched)  # stable: watched first
        changed, start = False, 0
        while start < len(queues):
            if start:
                between()
            chunk = queues[start : start + self.chunks.size()]
            start += len(chunk)
            last = start >= len(queues)
            publish = publish_whole if last and publish_whole is not None else partial(publish_some, chunk)
            changed |= self._timed_refresh(
                chunk, full=full, exact=exact, exact_queues=exact_queues, publish_state=publish, watched_index=watched
            )
        return changed

    def _timed_refresh(self, queues: list[QueueRef], **options) -> bool:
        started = time.monotonic()
        changed = self.refresh(queues, **options)
        self.chunks.took(len(queues), time.monotonic() - started)
        return changed

    def serve_watched(self, arrived: set[QueueRef], publish_some: Callable[[list[QueueRef]], None]) -> None:
        """Between the chunks of a long refresh: apply what the intake brought (the queues it
        changed go to ``arrived``) and refresh at once the watched ones (taken out of it), so a
        viewer's latency is not the length of the refresh."""
        self.intake.take(0, arrived)
        watched, states = self.watched_queues(), self.tracker.states
        urgent = [q for q in arrived if q in watched and q in states and states[q].live is not None]
        if urgent:
            arrived.difference_update(urgent)
            self.refresh(urgent, full=False, exact=False, publish_state=partial(publish_some, urgent))

    def _read_connection(
        self,
        name: str,
        qs: list[QueueRef],
        now: int,
        *,
        exact: bool,
        exact_queues: set[QueueRef] | frozenset = frozenset(),
    ) -> list[QueueSignals] | None:
        """The current figures of some queues of one connection, read exactly first where
        needed (None: the connection could not be read)."""
        source = self.registry.source(name)
        exact = exact or not self.intake.follows_events(name)  # a kind without events: read every time
        try:
            with source.errors():
                read = [q for q in qs if exact or q in exact_queues or self.tracker.needs_snapshot(q)]
                self.tracker.take_snapshots(source, read, now)
        except SourceUnavailable as exc:
            if not self.banner.is_down(name):
                self.banner.set_down(name, exc.reason)
            return None
        if (exact or any(q in exact_queues for q in qs)) and self.banner.is_down(name):
            self.banner.set_up(name)
        return [sig for sig in (self.tracker.current_signals(q, now) for q in qs) if sig is not None]

    def _render_connection(
        self,
        name: str,
        signals: list[QueueSignals],
        watches: dict[QueueRef, list[dash_redis.Watch]],
        now: int,
        *,
        full: bool,
    ) -> bool:
        """Render what changed of these queues (and what is watched of them); whether an
        overview fragment changed."""
        jobs = self.registry.source(name).jobs  # None: the kind shows no job lists or pages live
        changed_overview = False
        for sig in signals:
            q = sig.snapshot.queue
            changed = self.queue_publisher.publish_queue(
                sig, watches.get(q, []), jobs, changes=self.tracker.take_changes(q), full=full
            )
            self.tracker.mark_gauges(q, now, changed=changed)
            changed_overview |= changed
        return changed_overview

    def watched_queues(self) -> set[QueueRef]:
        """The queues something is watched of (the index alone, whatever the tabs)."""
        try:
            return dash_redis.watched_queues(self.dash)
        except dash_redis.DashboardRedisError:
            return set()

    def read_watched(
        self, queues: list[QueueRef], index: set[QueueRef] | None = None
    ) -> dict[QueueRef, list[dash_redis.Watch]]:
        """What is watched of ``queues``: the index of watched queues (``index``, when the caller
        read it already), then the watches of those of ``queues`` in it. Tabs watching other
        queues cost nothing here, however many."""
        try:
            watched = dash_redis.watched_queues(self.dash) if index is None else index
            return dash_redis.watches_of(self.dash, [q for q in queues if q in watched])
        except dash_redis.DashboardRedisError:  # nothing watched is known: only the overview is published
            return {}
