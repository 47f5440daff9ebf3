"""Following BullMQ's events on PostgreSQL: ``LISTEN bullmq_events`` and read the ``event`` table.

BullMQ writes each event as a row of ``event`` (``queue``, ``id`` from one sequence per schema,
``event``, ``data`` jsonb, ``created_at_ms``) and announces it with ``pg_notify('bullmq_events',
<queue>)`` — coalesced under load, so a reader must also look on its own now and then. The
follower holds one connection of its own: it ``LISTEN``s, waits up to ``block_ms`` for a
notification, then reads every followed queue of a schema in one statement (a bounded index
range per queue, as ``read_events.sql`` reads one), so the cost of a read does not grow with
one round trip per queue.

Ids are drawn before commit, so an event can become visible below ids already read:
``queues.postgres.event_window`` keeps the window of ids that may still be filled, which each
read asks for again. Two ways events are lost, each reported as a gap so the monitor settles the
queue with an exact read: BullMQ trimmed them before they were read (it deletes a queue's events
more than ``maxLenEvents`` ids below its newest; the sign is that the newest event read is gone),
or a transaction holding them stayed open longer than the window waits.

The cursors live in the source's ``EventWindows``, not in the follower: a follower made after a
lost connection resumes with the same cursors and windows, and its first read (no wait) catches
up on what happened meanwhile.
"""

from __future__ import annotations

import json
import time
from typing import Any

import psycopg
from psycopg import sql

from ..events import Event
from ..keys import QueueRef
from .connection import CONNECT_TIMEOUT_S, split_url
from .event_window import SETTLE_S, SchemaWindow, Snapshot
from .snapshots import table

CHANNEL = "bullmq_events"  # PostgresQueueBackend.EVENTS_CHANNEL
OPEN_WINDOW_POLL_S = 0.2  # how soon to look again while ids may still appear below a cursor

EventWindows = dict[str, SchemaWindow]  # schema -> its window, kept by the source across followers

# Every followed queue's events above its floor that were not delivered yet, oldest first, at
# most ``count`` per queue, and the statement's snapshot (one row with NULLs when none).
_READ = """
SELECT s.snap, r.queue, r.id, r.event, r.data, r.created_at_ms
  FROM (SELECT pg_current_snapshot()::text AS snap) s
  LEFT JOIN LATERAL (
    SELECT c.queue, e.id, e.event, e.data, e.created_at_ms
      FROM unnest(%(queues)s::text[], %(floors)s::bigint[]) AS c(queue, floor)
      CROSS JOIN LATERAL (
        SELECT id, event, data, created_at_ms FROM {event}
         WHERE queue = c.queue AND id > c.floor AND id <> ALL(%(seen)s::bigint[])
         ORDER BY id LIMIT %(count)s
      ) e
  ) r ON true
 ORDER BY r.queue, r.id
"""

# The queues whose newest delivered event is gone: BullMQ trimmed past it.
_TRIMMED = """
SELECT c.queue FROM unnest(%(queues)s::text[], %(ids)s::bigint[]) AS c(queue, id)
 WHERE NOT EXISTS (SELECT 1 FROM {event} e WHERE e.queue = c.queue AND e.id = c.id)
"""

# Whether one of these transactions (64-bit ids, compared on their low 32 bits as pg_locks
# shows them) holds a lock on the event table: it has written events, or is writing them.
_WROTE_EVENTS = """
SELECT EXISTS (
  SELECT 1 FROM pg_locks t JOIN pg_locks r ON r.pid = t.pid
   WHERE t.locktype = 'transactionid' AND t.transactionid::text::bigint = ANY(%(xids)s::bigint[])
     AND r.locktype = 'relation' AND r.relation = to_regclass(%(event)s))
"""

_NEWEST = """
SELECT c.queue, COALESCE((SELECT max(e.id) FROM {event} e WHERE e.queue = c.queue), 0)
  FROM unnest(%(queues)s::text[]) AS c(queue)
"""

_RECENT = """
SELECT c.queue, e.id, e.event, e.data, e.created_at_ms
  FROM unnest(%(queues)s::text[], %(lasts)s::bigint[]) AS c(queue, last)
  CROSS JOIN LATERAL (
    SELECT id, event, data, created_at_ms FROM {event}
     WHERE queue = c.queue AND id <= c.last ORDER BY id DESC LIMIT %(count)s
  ) e
 ORDER BY c.queue, e.id
"""


def event_fields(name: str, data: Any) -> dict[str, str]:
    """An event row's ``data`` as the fields of a Redis stream entry: text values (JSON for
    the rest, as BullMQ writes them there), plus ``event``."""
    fields = {"event": name}
    for key, value in (data or {}).items():
        fields[key] = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return fields


def listen_connection(url: str, *, application_name: str = "queuewatch-events") -> psycopg.Connection:
    """A connection of its own, listening on BullMQ's events channel (raises if unreachable)."""
    conn = psycopg.connect(
        split_url(url)[0],
        autocommit=True,
        connect_timeout=CONNECT_TIMEOUT_S,
        application_name=application_name,
        options="-c default_transaction_read_only=on -c statement_timeout=10000",
    )
    try:
        conn.execute(f"LISTEN {CHANNEL}")
    except BaseException:
        conn.close()
        raise
    return conn


class PostgresEventsFollower:
    """An ``EventsReader`` (``queues.sources.base``) for one PostgreSQL connection."""

    def __init__(
        self,
        conn: psycopg.Connection,
        *,
        connection: str,
        windows: EventWindows,
        block_ms: int = 1000,
        count: int = 1000,
        settle_s: float = SETTLE_S,
    ):
        self.conn = conn
        self.connection = connection
        self.windows = windows
        self.block_ms = block_ms
        self.count = count
        self.settle_s = settle_s
        self.last_ids: dict[QueueRef, str] = {}
        self._wake = True  # the first read looks at once: a catch-up after (re)connecting

    # --- which queues -----------------------------------------------------------------------

    def follow(self, queues: list[QueueRef], start_ids: dict[QueueRef, str] | None = None) -> list[QueueRef]:
        """Follow exactly these queues; one not followed by this follower starts at its
        ``start_ids`` entry, else where the source's cursor for it stands (a resumed follower),
        else at the newest event. Returns the queues newly followed by this follower."""
        start_ids = start_ids or {}
        wanted = set(queues)
        for q in list(self.last_ids):
            if q not in wanted:
                del self.last_ids[q]
                if q.prefix in self.windows:
                    self.windows[q.prefix].forget(q.name)
        added = [q for q in queues if q not in self.last_ids]
        from_newest: dict[str, list[str]] = {}
        for q in added:
            window = self.windows.setdefault(q.prefix, SchemaWindow(settle_s=self.settle_s))
            cursor = window.cursors.get(q.name)
            if q in start_ids:
                if cursor is None or str(cursor.last) != start_ids[q]:
                    window.start(q.name, int(start_ids[q]))
            elif cursor is None:
                from_newest.setdefault(q.prefix, []).append(q.name)
        for schema, names in from_newest.items():
            if not self._has_events_table(schema):
                for name in names:
                    self.windows[schema].start(name, 0)
                continue
            query = sql.SQL(_NEWEST).format(event=table(schema, "event"))
            for name, newest in self.conn.execute(query, {"queues": names}).fetchall():
                self.windows[schema].start(name, int(newest))
        for q in added:
            self.last_ids[q] = str(self.windows[q.prefix].cursors[q.name].last)
        self._wake = self._wake or bool(added)
        return added

    def _has_events_table(self, schema: str) -> bool:
        regclass = f"{sql.Identifier(schema).as_string(None)}.event"
        return bool(self.conn.execute("SELECT to_regclass(%s) IS NOT NULL", [regclass]).fetchall()[0][0])

    def _followed(self) -> dict[str, list[str]]:
        by_schema: dict[str, list[str]] = {}
        for q in self.last_ids:
            by_schema.setdefault(q.prefix, []).append(q.name)
        return by_schema

    # --- reading ----------------------------------------------------------------------------

    def recent(self, queues: list[QueueRef], *, count: int) -> list[Event]:
        """Up to ``count`` events of each queue up to and including its cursor, oldest first."""
        events: list[Event] = []
        by_schema: dict[str, list[QueueRef]] = {}
        for q in queues:
            if q in self.last_ids and int(self.last_ids[q]) > 0:
                by_schema.setdefault(q.prefix, []).append(q)
        for schema, qs in by_schema.items():
            query = sql.SQL(_RECENT).format(event=table(schema, "event"))
            params = {"queues": [q.name for q in qs], "lasts": [int(self.last_ids[q]) for q in qs], "count": count}
            for name, event_id, name_of_event, data, at_ms in self.conn.execute(query, params).fetchall():
                events.append(self._event(schema, name, event_id, name_of_event, data, at_ms))
        return events

    def read(self, block_ms: int | None = None) -> tuple[list[Event], dict[QueueRef, tuple[int, int]]]:
        """Wait up to ``block_ms`` for a notification (less while a window is open), then read
        every followed queue. Returns (events, in id order per queue save the late ones that
        filled a window; gaps: queue -> (from, to) ms between which events were lost)."""
        followed = self._followed()
        if not followed:
            return [], {}
        self._wait(self.block_ms if block_ms is None else block_ms)
        events: list[Event] = []
        gaps: dict[QueueRef, tuple[int, int]] = {}
        for schema, names in followed.items():
            if self._has_events_table(schema):
                self._read_schema(schema, names, events, gaps)
        for ev in events:
            self.last_ids[ev.queue] = str(self.windows[ev.queue.prefix].cursors[ev.queue.name].last)
        return events, gaps

    def _wait(self, block_ms: int) -> None:
        if self._wake:
            self._wake = False
            return
        wait_s = max(block_ms, 0) / 1000
        if any(w.pending for w in self.windows.values()):
            wait_s = min(wait_s, OPEN_WINDOW_POLL_S)
        for _ in self.conn.notifies(timeout=wait_s, stop_after=1):
            break
        for _ in self.conn.notifies(timeout=0):  # drain the rest: one read answers them all
            pass

    def _read_schema(
        self, schema: str, names: list[str], events: list[Event], gaps: dict[QueueRef, tuple[int, int]]
    ) -> None:
        window = self.windows[schema]
        event_table = table(schema, "event")
        # Every statement first, the bookkeeping after: a failure halfway changes no cursor.
        params = {
            "queues": names,
            "floors": [window.cursors[n].floor for n in names],
            "seen": window.seen_ids(),
            "count": self.count,
        }
        rows = self.conn.execute(sql.SQL(_READ).format(event=event_table), params).fetchall()
        at, now_ms = time.monotonic(), int(time.time() * 1000)
        snap = Snapshot.parse(rows[0][0])
        found = [row[1:] for row in rows if row[1] is not None]
        per_queue: dict[str, int] = {}
        for name, *_ in found:
            per_queue[name] = per_queue.get(name, 0) + 1
        complete = all(n < self.count for n in per_queue.values())
        self._wake = self._wake or not complete
        # A queue with events past its cursor: is the event at its cursor still there?
        lasts = {name: window.cursors[name].last for name, *_ in found}
        beyond = {name: lasts[name] for name, event_id, *_ in found if event_id > lasts[name] > 0}
        trimmed = self._trimmed(event_table, beyond)
        trimmed_from = {n: window.cursors[n].last_ms for n in trimmed}
        stuck = window.stuck(at)
        lost_in_flight = stuck is not None and self._wrote_events(schema, window.stuck_xids(snap))
        first_new_ms: dict[str, int] = {}
        for name, event_id, name_of_event, data, at_ms in found:
            cursor = window.cursors[name]
            if not cursor.deliver(int(event_id)):
                continue
            events.append(self._event(schema, name, event_id, name_of_event, data, at_ms))
            first_new_ms.setdefault(name, int(at_ms))
            if int(event_id) == cursor.last:
                cursor.last_ms = int(at_ms)
        for name, last_ms in trimmed_from.items():
            lost_to = first_new_ms.get(name, now_ms)
            gaps[QueueRef(self.connection, schema, name)] = (last_ms if last_ms is not None else lost_to, lost_to)
        window.after_read(snap, at, complete=complete)
        if stuck is not None and window.stuck(at) is stuck:
            window.settle_oldest()
            if lost_in_flight:
                lost_from = now_ms - int((at - stuck.at) * 1000)
                for name in stuck.positions:
                    gaps.setdefault(QueueRef(self.connection, schema, name), (lost_from, now_ms))

    def _trimmed(self, event_table: sql.Composed, lasts: dict[str, int]) -> list[str]:
        if not lasts:
            return []
        query = sql.SQL(_TRIMMED).format(event=event_table)
        return [row[0] for row in self.conn.execute(query, {"queues": list(lasts), "ids": list(lasts.values())})]

    def _wrote_events(self, schema: str, xids: list[int]) -> bool:
        if not xids:
            return False
        regclass = f"{sql.Identifier(schema).as_string(None)}.event"
        params = {"xids": [x % 2**32 for x in xids], "event": regclass}
        return bool(self.conn.execute(_WROTE_EVENTS, params).fetchall()[0][0])

    def _event(self, schema: str, name: str, event_id: int, event: str, data: Any, at_ms: int) -> Event:
        queue = QueueRef(self.connection, schema, name)
        return Event(queue, str(event_id), event, event_fields(event, data), int(at_ms))

    def close(self) -> None:
        try:
            self.conn.close()
        except psycopg.Error:
            pass
