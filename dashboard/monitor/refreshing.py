"""The monitor's refresh: read the current figures of some queues (exactly where needed) and
render what changed of them, watched queues first. The loop (``loop``) decides which queues and
when; this module only does the reading and rendering, connection by connection."""

from __future__ import annotations

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

# Queues a refresh reads and renders before the loop serves what viewers wait for
# (``refresh_in_chunks``): ~50 ms of work at 10,000 queues.
REFRESH_CHUNK = 250


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
        """``refresh`` ``REFRESH_CHUNK`` queues at a time, watched queues first, running
        ``between`` between chunks: a tick or a burst of quiet reads at 10,000 queues refreshed
        thousands of queues in one step of up to two seconds, and the events of a queue someone
        watches waited for all of it. Each chunk publishes its queues' entries of the state
        document (``publish_some``) before rendering them; the last one the whole document
        instead when ``publish_whole``. Returns whether an overview fragment changed."""
        if len(queues) <= REFRESH_CHUNK:
            publish = publish_whole if publish_whole is not None else partial(publish_some, queues)
            return self.refresh(queues, full=full, exact=exact, exact_queues=exact_queues, publish_state=publish)
        # The index of watched queues once for the whole refresh, not once per chunk.
        watched = self.watched_queues()
        queues = sorted(queues, key=lambda q: q not in watched)  # stable: watched first
        chunks = [queues[i : i + REFRESH_CHUNK] for i in range(0, len(queues), REFRESH_CHUNK)]
        changed = False
        for n, chunk in enumerate(chunks):
            if n:
                between()
            last = n == len(chunks) - 1
            publish = publish_whole if last and publish_whole is not None else partial(publish_some, chunk)
            changed |= self.refresh(
                chunk, full=full, exact=exact, exact_queues=exact_queues, publish_state=publish, watched_index=watched
            )
        return changed

    def take_arrivals(
        self,
        timeout: float,
        dirty: set[QueueRef],
        arrived: set[QueueRef],
        publish_some: Callable[[list[QueueRef]], None],
    ) -> None:
        """Wait up to ``timeout`` for the intake and apply what it brought: the watched queues it
        changed are refreshed at once (``serve_watched``), the others go to ``dirty`` (the next
        publish of changes). Waiting for that publish, behind a large fleet's quiet reads and
        due steps, was most of a viewer's wait (``bench/many_queues.py --timeline``)."""
        self.intake.take(timeout, arrived)
        self.serve_watched(arrived, publish_some)
        dirty |= arrived
        arrived.clear()

    def serve_watched(self, arrived: set[QueueRef], publish_some: Callable[[list[QueueRef]], None]) -> None:
        """Between the chunks of a long refresh: apply what the intake brought (the queues it
        changed go to ``arrived``) and refresh at once the watched ones (taken out of it), so a
        viewer's latency is not the length of the refresh."""
        self.intake.take(0, arrived)
        if not arrived:
            return  # nothing changed: the index of watched queues is not read
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
