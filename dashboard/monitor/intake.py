"""Event intake: following every queue's events stream, and handing what arrives to the tracker.

One ``FollowerThread`` per connection reads its streams with a blocking read on a dedicated
connection (its source's events follower) and puts what it reads on one hand-off queue, in
order, as the types of ``intake_items``:

* ``Followed`` before any event of newly followed queues, then ``RecentEvents``: the tail of
  their streams up to the start ids, for the job clock's state (``queues.job_clock``), never
  counted except in the timings of queues followed for the first time (no saved cursor);
* ``EventsRead``;
* ``ConnectionDown`` / ``ConnectionUp`` when its connection is lost or back.

One more thread (``ExactReadRequests``) subscribes on the dashboard Redis to the action service's
requests of an exact read (a change Queuewatch itself made) and hands on ``ExactReadAsked`` (and
``ViewerArrived`` for a new viewer), so the loop wakes and reads that queue at once.

``EventIntake`` owns the threads for one term of leadership and applies those items on the
leader's loop thread: events to the ``CountTracker``, connection changes to the banner.
"""

from __future__ import annotations

import logging
import queue as queue_mod
import threading
import time

from django.conf import settings

from dashboard.connections.registry import Registry
from dashboard.core import dash_redis
from dashboard.core.dash_redis import DashboardRedisError
from dashboard.monitor.intake_items import (
    ConnectionDown,
    ConnectionUp,
    EventsRead,
    ExactReadAsked,
    Followed,
    IntakeItem,
    RecentEvents,
    ViewerArrived,
)
from dashboard.monitor.publishing import ConnectionBanner
from dashboard.monitor.tracking import CountTracker
from queues.errors import SourceUnavailable
from queues.job_clock import WARM_EVENTS
from queues.keys import QueueRef
from queues.sources import EventsReader, UnsupportedBySource

log = logging.getLogger("queuewatch.monitor")

MIN_READ_INTERVAL = 0.05  # s between XREADs that returned events
# Viewed queues not listed yet, kept for discovery to confirm (a few pipelined reads each): a
# bound, so nudges naming made-up queues cannot grow the set or the reads without end.
MAX_UNLISTED_VIEWED = 100


class FollowerThread(threading.Thread):
    """Reads one connection's event streams and hands batches to the intake's queue."""

    def __init__(
        self, name: str, registry: Registry, out: queue_mod.Queue, stop: threading.Event, block_ms: int = 1000
    ):
        super().__init__(name=f"follow-{name}", daemon=True)
        self.conn_name = name
        self.source = registry.source(name)
        self.out = out
        self.stop_event = stop
        self.block_ms = block_ms
        self.timings = settings.QUEUEWATCH_TIMINGS  # off: no read-back for the job clock
        self._wanted: tuple[list[QueueRef], dict[QueueRef, str]] | None = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self.follower: EventsReader | None = None
        self.without_events = False  # the source's kind has no events to follow: this thread ends

    def follow(self, queues: list[QueueRef], start_ids: dict[QueueRef, str]) -> None:
        with self._lock:
            self._wanted = (list(queues), dict(start_ids))
        self._wake.set()

    def as_unavailable(self, exc: Exception) -> SourceUnavailable | None:
        """``exc`` as the source's ``SourceUnavailable`` when its kind knows it as an outage (the
        connection lost or refused), else ``None``: an unexpected error, worth a traceback."""
        try:
            with self.source.errors():
                raise exc
        except SourceUnavailable as translated:
            return translated
        except Exception:  # noqa: BLE001 - not an outage the source knows
            return None

    def run(self) -> None:
        backoff = 0.5
        while not self.stop_event.is_set():
            try:
                if self.follower is None:
                    # The source opens a dedicated connection for blocking reads and checks it.
                    try:
                        self.follower = self.source.events_follower(block_ms=self.block_ms)
                    except UnsupportedBySource:
                        # Not an outage: the monitor reads this connection's queues exactly on
                        # every tick instead (``EventIntake.follows_events``).
                        log.info("follower %s: its kind has no events to follow", self.conn_name)
                        self.without_events = True
                        return
                    if backoff > 0.5:
                        self.out.put(ConnectionUp(self.conn_name))
                with self._lock:
                    wanted, self._wanted = self._wanted, None
                if wanted is not None:
                    queues, starts = wanted
                    added = self.follower.follow(queues, starts)
                    if added:
                        # Tell the monitor where counting starts for these queues, before any
                        # of their events (same hand-off queue, so the order is kept).
                        self.out.put(Followed(self.conn_name, {q: self.follower.last_ids[q] for q in added}))
                        # What happened just before (names, start times of jobs in flight), so
                        # their timings survive a takeover; counted by nobody twice: state only.
                        if self.timings:
                            recent = self.follower.recent(added, count=WARM_EVENTS)
                            fresh = frozenset(q for q in added if q not in starts)  # no saved cursor
                            self.out.put(RecentEvents(self.conn_name, recent, fresh))
                if not self.follower.last_ids:
                    self._wake.wait(self.block_ms / 1000)  # nothing to follow yet: until follow()
                    self._wake.clear()
                    continue
                started = time.monotonic()
                events, gaps = self.follower.read()
                backoff = 0.5
                if events or gaps:
                    self.out.put(EventsRead(self.conn_name, events, gaps))
                    # Under load every XREAD returns at once with a few events; pacing the
                    # reads batches them, so the command rate stays bounded at a small cost
                    # in latency (well inside the refresh coalescing of the leader's loop).
                    self.stop_event.wait(max(0.0, MIN_READ_INTERVAL - (time.monotonic() - started)))
            except Exception as exc:  # noqa: BLE001 - a follower must never die silently
                unavailable = self.as_unavailable(exc)
                if unavailable is None:
                    log.exception("follower %s: unexpected error; reconnecting", self.conn_name)
                # Keep the cursors across reconnects: resume where we were and let the gap
                # check tell us if the stream was trimmed meanwhile.
                cursors = dict(self.follower.last_ids) if self.follower else {}
                self.follower = None
                if cursors:
                    with self._lock:
                        if self._wanted is None:
                            self._wanted = (list(cursors), cursors)
                        else:
                            self._wanted[1].update({q: c for q, c in cursors.items() if q not in self._wanted[1]})
                reason = unavailable.reason if unavailable else str(exc) or exc.__class__.__name__
                self.out.put(ConnectionDown(self.conn_name, reason))
                self.stop_event.wait(backoff)
                backoff = min(backoff * 2, 15.0)


class ExactReadRequests(threading.Thread):
    """Hands the action service's requests for an exact read, and new viewers' nudges
    (``channels.announce_watching``), to the intake's queue."""

    def __init__(self, out: queue_mod.Queue, stop: threading.Event, wait_s: float = 1.0):
        super().__init__(name="exact-read-requests", daemon=True)
        self.out = out
        self.stop_event = stop
        self.wait_s = wait_s

    def run(self) -> None:
        while not self.stop_event.is_set():
            try:
                with dash_redis.dashboard_redis().pubsub(ignore_subscribe_messages=True) as requests:
                    requests.subscribe(dash_redis.EXACT_READS_CHANNEL, dash_redis.WATCHED_CHANNEL)
                    while not self.stop_event.is_set():
                        message = requests.get_message(timeout=self.wait_s)
                        asked = dash_redis.exact_read_asked(message)
                        if asked is not None:
                            watched = message["channel"] in (
                                dash_redis.WATCHED_CHANNEL,
                                dash_redis.WATCHED_CHANNEL.encode(),
                            )
                            self.out.put(
                                ViewerArrived(asked)
                                if watched
                                else ExactReadAsked(asked, dash_redis.exact_read_parents(message))
                            )
            except DashboardRedisError:
                self.stop_event.wait(1.0)  # the leader loop reports dashboard Redis trouble


class EventIntake:
    def __init__(self, *, registry: Registry, tracker: CountTracker, banner: ConnectionBanner, monitor_name: str):
        self.registry = registry
        self.tracker = tracker
        self.banner = banner
        self.monitor_name = monitor_name
        self.inbox: queue_mod.Queue = queue_mod.Queue()
        self.followers: dict[str, FollowerThread] = {}
        self._stop = threading.Event()
        self.events_seen = 0  # since this monitor started
        self.gaps_seen = 0
        self.unlisted_viewed: set[QueueRef] = set()  # viewed queues discovery has not listed yet

    # --- the threads, for one term of leadership ----------------------------------------------

    def start(self) -> None:
        self.inbox = queue_mod.Queue()
        self._stop = threading.Event()
        self.followers = {n: FollowerThread(n, self.registry, self.inbox, self._stop) for n in self.registry.names}
        for follower in self.followers.values():
            follower.start()
        ExactReadRequests(self.inbox, self._stop).start()

    def stop(self) -> None:
        self._stop.set()

    def follow(self, connection: str, queues: list[QueueRef], start_ids: dict[QueueRef, str]) -> None:
        """Follow exactly these queues of the connection, from these ids where given."""
        self.followers[connection].follow(queues, start_ids)

    def follows_events(self, connection: str) -> bool:
        """Whether the connection's events keep its counts current between exact reads."""
        follower = self.followers.get(connection)
        return follower is not None and not follower.without_events

    def take_unlisted_viewed(self) -> dict[str, set[QueueRef]]:
        """The viewed queues not followed yet, by connection, and forget them."""
        taken: dict[str, set[QueueRef]] = {}
        for q in self.unlisted_viewed:
            taken.setdefault(q.connection, set()).add(q)
        self.unlisted_viewed = set()
        return taken

    # --- applying what arrives ----------------------------------------------------------------

    def take(self, timeout: float, dirty: set[QueueRef]) -> None:
        """Wait up to ``timeout`` for something to arrive, then apply all that is waiting;
        queues whose figures may have changed are added to ``dirty``."""
        try:
            self.handle(self.inbox.get(timeout=timeout), dirty)
            while True:
                self.handle(self.inbox.get_nowait(), dirty)
        except queue_mod.Empty:
            pass

    def handle(self, item: IntakeItem, dirty: set[QueueRef]) -> None:
        match item:
            case EventsRead(events=events, gaps=gaps):
                dirty |= self.tracker.apply_events(events)
                self.events_seen += len(events)
                for q, (lost_from, lost_to) in gaps.items():
                    log.warning(
                        "%s: events stream of %s/%s was trimmed past our cursor; reconciling",
                        self.monitor_name,
                        q.prefix,
                        q.name,
                    )
                    self.gaps_seen += 1
                    self.tracker.stream_gap(q, lost_from=lost_from, lost_to=lost_to)
                    dirty.add(q)
            case ConnectionDown(connection=conn, reason=reason):
                if not self.banner.is_down(conn):
                    log.warning("%s: connection %s lost: %s", self.monitor_name, conn, reason)
                self.banner.set_down(conn, reason)
            case ConnectionUp(connection=conn):
                self.banner.set_up(conn)
            case Followed(start_ids=start_ids):
                self.tracker.following_from(start_ids)
            case RecentEvents(events=events, fresh=fresh):
                self.tracker.warm(events, fresh=fresh)
            case ExactReadAsked(queue=q, parents_elsewhere=parents):
                self.tracker.read_at_once(q, parents_elsewhere=parents)
            case ViewerArrived(queue=q) if q in self.tracker.states:
                dirty.add(q)  # refreshed at once: a new viewer's fragments are rendered for it
            case ViewerArrived(queue=q) if len(self.unlisted_viewed) < MAX_UNLISTED_VIEWED:
                self.unlisted_viewed.add(q)  # not followed yet: for discovery to confirm (``take_unlisted_viewed``)
