"""Following BullMQ's per-queue ``events`` streams.

One follower per connection reads every queue's stream with a single blocking ``XREAD`` on a
dedicated connection (never the pooled one pages use, and with a socket timeout longer than the
block, so redis-py never mistakes an idle block for a dead server). It remembers the last id it
read per stream. Streams are trimmed (``MAXLEN ~ maxLenEvents``, about 10,000), so after each
batch it checks whether the oldest entry still in a stream is newer than the id it had read
before: if so, events were trimmed away unseen, and the caller must reconcile from state keys.
"""

from __future__ import annotations

import redis
from redis.typing import KeyT, StreamIdT

from ..events import Event, _id_tuple
from ..keys import QueueRef
from ..text import to_text
from . import replies

GAP_CHECK_BATCH = 50


class EventsFollower:
    def __init__(self, client: redis.Redis, *, block_ms: int = 1000, count: int = 1000):
        # The client must be dedicated to this follower (XREAD BLOCK holds its connection).
        self.client = client
        self.block_ms = block_ms
        self.count = count
        self.last_ids: dict[QueueRef, str] = {}
        self._check_next: set[QueueRef] = set()  # queues whose next batch gets a gap check

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
        added = [q for q in queues if q not in self.last_ids]
        if added:
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
        response = self.client.xread(self.streams(), count=self.count, block=block if block > 0 else None)
        return self.take(response)

    def streams(self) -> dict[KeyT, StreamIdT]:
        """Each followed stream with the id to read after (an ``XREAD``'s streams)."""
        return {q.key("events"): last for q, last in self.last_ids.items()}

    def take(self, response: object) -> tuple[list[Event], dict[QueueRef, tuple[int, int]]]:
        """What an ``XREAD`` of ``streams()`` returned: the events, cursors moved past them,
        and the gaps (as ``read``). Split from ``read`` so a caller can pipeline the reads of
        several followers sharing one connection (``queues.redis.cluster_events``)."""
        by_key = {q.key("events"): q for q in self.last_ids}
        events: list[Event] = []
        touched: list[tuple[QueueRef, str]] = []
        for key, entries in replies.stream_read(response):
            q = by_key[to_text(key)]
            previous = self.last_ids[q]
            for stream_id, fields in entries:
                sid = to_text(stream_id)
                decoded = {to_text(k): to_text(v) for k, v in fields.items()}
                events.append(Event(q, sid, decoded.get("event", ""), decoded))
            self.last_ids[q] = to_text(entries[-1][0])
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
