"""Following BullMQ's per-queue ``events`` streams.

One follower per connection reads every queue's stream with a single blocking ``XREAD`` on a
dedicated connection (never the pooled one pages use, and with a socket timeout longer than the
block, so redis-py never mistakes an idle block for a dead server). It remembers the last id it
read per stream. Streams are trimmed (``MAXLEN ~ maxLenEvents``, about 10,000), so after each
batch it checks whether the oldest entry still in a stream is newer than the id it had read
before: if so, events were trimmed away unseen, and the caller must reconcile from state keys.

With thousands of streams the read itself was the cost that grew with the queues: redis-py
encoded every key and id of the ``XREAD`` again on every read (20 reads a second, 20,000
arguments each at 10,000 queues). The command is therefore kept packed: the keys' part is
built when the followed set changes, and a stream's id part only when its cursor moves.
"""

from __future__ import annotations

import redis
from redis.typing import KeyT, StreamIdT

from ..events import Event, _id_tuple
from ..keys import QueueRef
from ..text import to_text
from . import replies

GAP_CHECK_BATCH = 50


def _bulk(value: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(value), value)


def _fields(raw) -> dict:
    """An entry's fields as a dict: RESP2 sends them as a flat list, RESP3 as a map."""
    if isinstance(raw, dict):
        return raw
    return dict(zip(raw[::2], raw[1::2])) if raw else {}


class EventsFollower:
    def __init__(self, client: redis.Redis, *, block_ms: int = 1000, count: int = 1000):
        # The client must be dedicated to this follower (XREAD BLOCK holds its connection).
        self.client = client
        self.block_ms = block_ms
        self.count = count
        self.last_ids: dict[QueueRef, str] = {}
        self._check_next: set[QueueRef] = set()  # queues whose next batch gets a gap check
        # The packed XREAD (see the module's docstring): rebuilt when the followed set changes
        # (``_membership`` counts the changes), each stream's id part kept at its position.
        self._membership = 0
        self._packed_membership = -1
        self._followed: tuple[QueueRef, ...] | None = None
        self._position: dict[QueueRef, int] = {}
        self._by_key: dict[str, QueueRef] = {}
        self._packed_keys = b""
        self._packed_ids: list[bytes] = []

    def follow(self, queues: list[QueueRef], start_ids: dict[QueueRef, str] | None = None) -> list[QueueRef]:
        """Set the queues to follow. A queue not followed before starts at ``start_ids`` (a
        saved cursor) or at the current end of its stream. Returns newly added queues."""
        start_ids = start_ids or {}
        wanted = set(queues)
        # Resuming from a saved cursor: the stream may have been trimmed past it meanwhile.
        self._check_next.update(q for q in queues if q in start_ids and q not in self.last_ids)
        for q in list(self.last_ids):
            if q not in wanted:
                del self.last_ids[q]
                self._membership += 1
        added = [q for q in queues if q not in self.last_ids]
        if added:
            self._membership += 1
            pipe = self.client.pipeline(transaction=False)
            for q in added:
                pipe.xrevrange(q.key("events"), count=1)
            for q, last in zip(added, pipe.execute()):
                if q in start_ids:
                    self.last_ids[q] = start_ids[q]
                else:
                    self.last_ids[q] = to_text(last[0][0]) if last else "0-0"
        return added

    def recent(self, queues: list[QueueRef], *, count: int) -> list[Event]:
        """Up to ``count`` entries of each queue's stream up to and including its cursor, oldest
        first: what happened just before following starts (read once per queue per term)."""
        if not queues:
            return []
        pipe = self.client.pipeline(transaction=False)
        for q in queues:
            pipe.xrevrange(q.key("events"), max=self.last_ids.get(q, "+"), min="-", count=count)
        events: list[Event] = []
        for q, entries in zip(queues, pipe.execute()):
            for stream_id, fields in reversed(entries):
                decoded = {to_text(k): to_text(v) for k, v in fields.items()}
                events.append(Event(q, to_text(stream_id), decoded.get("event", ""), decoded))
        return events

    def read(self, block_ms: int | None = None) -> tuple[list[Event], dict[QueueRef, tuple[int, int]]]:
        """Block up to ``block_ms`` for new events. Returns (events in stream order per queue,
        gaps): for each queue whose stream was trimmed past our cursor, the (from, to) ms
        timestamps between which events were lost."""
        if not self.last_ids:
            return [], {}
        block = self.block_ms if block_ms is None else block_ms
        pool = self.client.connection_pool
        conn = pool.get_connection()
        try:
            conn.send_packed_command([self._packed_read(block)])
            response = conn.read_response()
        except BaseException:
            conn.disconnect()  # a half-read connection must never go back to the pool
            raise
        finally:
            pool.release(conn)
        return self.take(response)

    def _refresh_packing(self) -> None:
        """Rebuild the packed keys (and every id) when the followed streams changed. Nothing
        per stream otherwise: at 10,000 queues, comparing the followed set and looking each
        id up on every read (tens a second) was a fifth of the monitor's CPU."""
        if self._packed_membership == self._membership:
            return
        self._followed = tuple(self.last_ids)
        self._position = {q: i for i, q in enumerate(self._followed)}
        self._by_key = {q.key("events"): q for q in self._followed}
        self._packed_keys = b"".join(_bulk(q.key("events").encode()) for q in self._followed)
        self._packed_ids = [_bulk(self.last_ids[q].encode()) for q in self._followed]
        self._packed_membership = self._membership

    def _packed_read(self, block: int) -> bytes:
        """``XREAD COUNT n [BLOCK ms] STREAMS key... id...`` as RESP bytes."""
        self._refresh_packing()
        assert self._followed is not None
        head = [b"XREAD", b"COUNT", str(self.count).encode()]
        if block > 0:
            head += [b"BLOCK", str(block).encode()]
        head.append(b"STREAMS")
        parts = len(head) + 2 * len(self._followed)
        return b"".join((b"*%d\r\n" % parts, *map(_bulk, head), self._packed_keys, *self._packed_ids))

    def streams(self) -> dict[KeyT, StreamIdT]:
        """Each followed stream with the id to read after (an ``XREAD``'s streams)."""
        return {q.key("events"): last for q, last in self.last_ids.items()}

    def take(self, response: object) -> tuple[list[Event], dict[QueueRef, tuple[int, int]]]:
        """What an ``XREAD`` of ``streams()`` returned: the events, cursors moved past them,
        and the gaps (as ``read``). Split from ``read`` so a caller can pipeline the reads of
        several followers sharing one connection (``queues.redis.cluster_events``)."""
        self._refresh_packing()
        by_key = self._by_key
        events: list[Event] = []
        touched: list[tuple[QueueRef, str]] = []
        streams = response.items() if isinstance(response, dict) else replies.stream_read(response)
        for key, entries in streams:
            q = by_key.get(to_text(key))
            if q is None or not entries:
                continue
            previous = self.last_ids[q]
            for stream_id, fields in entries:
                sid = to_text(stream_id)
                decoded = {to_text(k): to_text(v) for k, v in _fields(fields).items()}
                events.append(Event(q, sid, decoded.get("event", ""), decoded))
            last = self.last_ids[q] = to_text(entries[-1][0])
            self._packed_ids[self._position[q]] = _bulk(last.encode())
            # A gap needs the stream to outgrow its MAXLEN between two reads, so only a resumed
            # cursor or a burst (a large batch) can have one: check those, not every batch,
            # which would cost an XRANGE per active stream per read.
            if q in self._check_next or len(entries) >= min(self.count, GAP_CHECK_BATCH):
                touched.append((q, previous))
                self._check_next.discard(q)
        return events, self._trimmed(touched)

    def _trimmed(self, touched: list[tuple[QueueRef, str]]) -> dict[QueueRef, tuple[int, int]]:
        """Streams whose oldest remaining entry is newer than the cursor we read from."""
        candidates = [(q, prev) for q, prev in touched if prev != "0-0"]
        if not candidates:
            return {}
        pipe = self.client.pipeline(transaction=False)
        for q, _ in candidates:
            pipe.xrange(q.key("events"), count=1)
        gaps = {}
        for (q, prev), first in zip(candidates, pipe.execute()):
            if first:
                first_id = _id_tuple(to_text(first[0][0]))
                if first_id > _id_tuple(prev):
                    gaps[q] = (_id_tuple(prev)[0], first_id[0])
        return gaps
