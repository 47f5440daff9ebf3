"""The fast road for retrying a whole finished set (see "Retrying a whole finished set" in the
package docstring): the batch script picks its own batches and writes a receipt, so ids never
travel to Python and back.

Unpaced, the next batches (up to ``AHEAD`` in all) are sent before the current one's reply is
read, so Redis never waits for this process between batches. Such a *follower* runs only if the
batch before it moved a full batch (its receipt says so, checked inside the follower's own
atomic step): then no job stayed behind and the head of the set is exactly where the follower
starts, as it would be if it had been sent after the reply. Otherwise it does nothing (nor do
the followers after it) and the batch is sent again once the replies are read. The journal
(``head_batch``: the last batch number sent; ``head_pending``: how many of the last ones are
not counted yet) tells ``reconcile_head`` which receipt settles them after a crash."""

from __future__ import annotations

from collections import deque

import redis
from redis.connection import Connection

from ...bulk.plan import BulkPlan
from ...bulk.progress import Progress, ProgressStore, nothing_left_behind
from ...selection import Cursor
from ...states import STATE_KEYS
from ...text import to_text
from ..actions import retry_outcome
from ..bullmq_scripts import SCRIPTS
from ..selection import zset_bounds, zset_offset

RECEIPT_NAMESPACE = "queuewatch:bulk-receipt"
NOT_RUN = -1  # a follower whose batch before it did not move a full batch
AHEAD = 4  # batches in flight, unpaced: Redis keeps working while this process waits for a core


def head_mode(plan: BulkPlan) -> bool:
    """Whether the batch script picks its own batches (``HeadRun``): the plan retries a whole
    finished set."""
    return plan.retries_whole_set


def reconcile_head(client: redis.Redis, plan: BulkPlan, progress: Progress) -> None:
    """After a crash during whole-set batches: the receipt says which of the pending batches ran
    last and what it moved. A pending batch before that one ran too and moved a full batch (a
    follower runs only then); the jobs none of them moved are still ahead of the saved cursor."""
    pending = int(progress.head_pending)
    if pending:
        raw = to_text(client.get(progress.receipt_key))
        batch, _, moved = raw.partition(":")
        first = progress.head_batch - pending + 1
        if batch.isdigit() and first <= int(batch) <= progress.head_batch:
            progress.moved += (int(batch) - first) * plan.batch_size + int(moved)
        progress.head_pending = 0


class HeadRun:
    """The batches of one run of a whole-set retry, over one connection of ``client``'s pool
    (``close`` gives it back)."""

    def __init__(self, client: redis.Redis, plan: BulkPlan, progress: Progress, store: ProgressStore):
        self.client, self.plan, self.progress, self.store = client, plan, progress, store
        q, state = plan.queue, plan.scan_filter.state
        self.key = q.state_key(state)
        self.lo, hi = zset_bounds(plan.scan_filter, plan.before_ms)
        self.keys = [
            q.key(s)
            for s in ("events", STATE_KEYS[state], "wait", "meta", "active", "marker", "prioritized", "pc", "paused")
        ] + [progress.receipt_key]
        self.fixed = [
            q.base,
            state,
            "failedReason" if state == "failed" else "returnvalue",
            "1" if plan.reset_counters else "0",
            hi,
        ]
        self.ahead = plan.rate is None  # paced batches wait between them anyway
        self.script = SCRIPTS["retry_head"]
        self.conn: Connection | None = None  # taken from the pool by the first batch sent
        self.flight: deque[int] = deque()  # the batch numbers sent and not read, oldest first
        self.last_full = False  # the last batch read moved a full batch

    def step(self, cursor: Cursor) -> tuple[int, bool, Cursor]:
        """One batch; returns (jobs taken, exhausted, new cursor). At most one new batch is sent
        per step once the pipe is full, so the caller's cancellation check before each step
        comes before each send."""
        p = self.progress
        while True:
            if not self.flight:
                offset = (
                    0 if nothing_left_behind(p) else zset_offset(self.client, key=self.key, lo=self.lo, cursor=cursor)
                )
                batch = p.head_batch + 1
                sent = AHEAD if self.ahead and offset == 0 else 1
                self._journal(batch + sent - 1, pending=sent)
                self._send(batch, offset)
                for k in range(1, sent):
                    self._send(batch + k, 0, follows=batch + k - 1)
            elif self.ahead and self.last_full:
                batch = self.flight[-1] + 1
                self._journal(batch, pending=len(self.flight) + 1)
                self._send(batch, 0, follows=batch - 1)
            reply = self._read()
            if reply is None:  # it did not run: nor will the followers; the batch is sent again
                self.last_full = False
                cursor = self.drain(cursor)
                continue
            taken, cursor = self._count(reply, cursor)
            if not self.last_full:  # the followers in flight will not run: read their replies
                cursor = self.drain(cursor)
            return taken, taken < self.plan.batch_size, cursor

    def drain(self, cursor: Cursor) -> Cursor:
        """Read every batch still in flight (each ran or not; what ran is counted)."""
        while self.flight:
            reply = self._read()
            if reply is not None:
                cursor = self._count(reply, cursor)[1]
        return cursor

    def close(self) -> None:
        if self.conn is not None:
            if self.flight:
                self.conn.disconnect()  # replies are left unread on it
            self.client.connection_pool.release(self.conn)
            self.conn = None

    def _journal(self, last_batch: int, *, pending: int) -> None:
        # Saved before the batches are sent: their receipt decides after a crash.
        self.progress.head_batch = last_batch
        self.progress.head_pending = pending
        self.store.save(self.progress)

    def _send(self, batch: int, offset: int, *, follows: int | None = None) -> None:
        conn = self.conn
        if conn is None:
            self.client.script_load(self.script.script)  # the EVALSHA below cannot load it itself
            conn = self.conn = self.client.connection_pool.get_connection()
        conn.send_command(
            "EVALSHA",
            self.script.sha,
            len(self.keys),
            *self.keys,
            *self.fixed,
            offset,
            self.plan.batch_size,
            batch,
            "" if follows is None else follows,
        )
        self.flight.append(batch)

    def _read(self) -> list | None:
        """The reply of the oldest batch in flight; ``None`` when it did not run."""
        self.flight.popleft()
        conn = self.conn
        if conn is None:  # a batch in flight was sent on it
            raise RuntimeError("A whole-set retry read a reply before sending a batch.")
        self.progress.head_pending = int(self.progress.head_pending) - 1
        try:
            reply = conn.read_response()
        except redis.exceptions.NoScriptError:  # a SCRIPT FLUSH during the run: load it again
            self.client.script_load(self.script.script)
            return None
        except BaseException:
            conn.disconnect()
            raise
        return None if int(reply[0]) == NOT_RUN else reply

    def _count(self, reply: list, cursor: Cursor) -> tuple[int, Cursor]:
        p, state = self.progress, self.plan.scan_filter.state
        taken, moved = int(reply[0]), int(reply[1])
        p.moved += moved
        self.last_full = moved == self.plan.batch_size
        refused = reply[4:]
        for job_id, code in zip(refused[0::2], refused[1::2]):
            r = retry_outcome(to_text(job_id), int(code), state=state)
            p.skipped += 1
            p.skipped_by[r.outcome] = p.skipped_by.get(r.outcome, 0) + 1
        if taken:
            cursor = Cursor(score=float(reply[3]), member=to_text(reply[2]))
        return taken, cursor
