"""The cheap per-queue snapshot: state counts, paused flag, schedulers, oldest waiting age.

Reads use plain commands in a pipeline — never Lua (``getCounts`` may RPOP a legacy marker, and
scripts are a question on read-only replicas) and never anything that touches ``marker``, locks
or the active list's contents. Cost is O(queues): round trip one reads every count plus the ids
at both ends of ``wait`` and of ``prioritized``; round trip two reads those (at most four) jobs'
``timestamp``, ``processedOn`` and ``opts``, from which ``queues.ready_since`` tells when the
job ready the longest became ready, exactly or as a bound. Two round trips per connection
whatever the number of queues or jobs.

Round trip one is a MULTI/EXEC transaction (in chunks of queues, so a huge install never blocks
Redis for long) and also reads the id of the newest entry of each queue's events stream: the
counts are then exactly "the state after that event", which is what lets the monitor keep
counts current from later events without counting any of them twice.

On a Redis Cluster a transaction may only hold keys of one hash slot (else ``CROSSSLOT``), so
``per_slot=True`` plans one group of transactions per slot (``plan_transactions``): a Cluster
kind sends each group to the node that owns its slot. The default, for a single node, is the
fewest round trips: chunks of any queues.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import redis
from redis.crc import key_slot

from ..keys import QueueRef
from ..ready_since import READY_FIELDS, WAIT_TAIL_WINDOW, ReadyTime, WaitingEnds, oldest_ready, ready_time
from ..snapshot import QueueSnapshot
from ..text import finite

LEGACY_MARKER = b"0:"  # v5 put "0:<ts>" markers in wait; getCounts skips them, so do we


# The per-queue reads, in order. Every queue costs exactly these plain commands. The legacy
# ``paused`` list (BullMQ 4/5 data, see below) is almost always absent, so only its tail is read
# here; its length is read afterwards, and only for a queue that has one (``_legacy_lengths``):
# an LLEN per queue per snapshot was 1 in 13 of the monitor's snapshot commands for nothing.
_QUEUE_READS = (
    (b"LLEN", b"wait"),
    (b"LINDEX", b"wait", b"-1"),
    (b"LINDEX", b"paused", b"-1"),
    (b"LLEN", b"active"),
    (b"ZCARD", b"delayed"),
    (b"ZCARD", b"prioritized"),
    (b"ZCARD", b"waiting-children"),
    (b"ZCARD", b"completed"),
    (b"ZCARD", b"failed"),
    (b"HEXISTS", b"meta", b"paused"),
    (b"ZCARD", b"repeat"),
    (b"XREVRANGE", b"events", b"+", b"-", b"COUNT", b"1"),
    # The ends of what is waiting, for the oldest ready job (queues.ready_since): the tail of
    # wait is the next to run, its head the last LPUSHed; prioritized in score order.
    (b"LRANGE", b"wait", b"-%d" % WAIT_TAIL_WINDOW, b"-2"),  # the jobs before the tail
    (b"LINDEX", b"wait", b"0"),
    (b"ZRANGE", b"prioritized", b"0", b"0", b"WITHSCORES"),
    (b"ZRANGE", b"prioritized", b"-1", b"-1", b"WITHSCORES"),
)
TRANSACTION_CHUNK = 250  # queues per MULTI/EXEC
PER_QUEUE_COMMANDS = len(_QUEUE_READS)


def _resp(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


@functools.lru_cache(maxsize=16384)
def _packed_queue(queue: QueueRef) -> bytes:
    """One queue's reads as RESP bytes, cached per queue: building 12,000 commands through
    redis-py's Pipeline cost ~4x more CPU than Redis spent answering them. Cached per queue
    (not per list of queues) so memory stays bounded whatever subsets get refreshed."""
    return b"".join(_resp(cmd, queue.base.encode() + suffix, *rest) for cmd, suffix, *rest in _QUEUE_READS)


def _packed_reads(queues: list[QueueRef]) -> bytes:
    return b"".join(_packed_queue(q) for q in queues)


_MULTI, _EXEC = _resp(b"MULTI"), _resp(b"EXEC")


@dataclass(frozen=True)
class Transaction:
    """Queues whose reads go out together: in one ``MULTI``/``EXEC`` when ``atomic``; else as plain
    pipelined commands (queues whose keys span hash slots, planned ``per_slot``: no transaction
    can hold them on a Cluster)."""

    queues: tuple[QueueRef, ...]
    atomic: bool = True


def read_keys(queue: QueueRef) -> list[bytes]:
    """Every key the snapshot reads of ``queue``."""
    return [queue.base.encode() + suffix for _cmd, suffix, *_rest in _QUEUE_READS]


@functools.lru_cache(maxsize=16384)
def queue_slot(queue: QueueRef) -> int | None:
    """The hash slot of every key the snapshot reads of ``queue`` (``{hash tags}`` honoured), or
    None when they land in several slots (no hash tag in the prefix or the name)."""
    slots = {key_slot(key) for key in read_keys(queue)}
    return slots.pop() if len(slots) == 1 else None


def _planned_positions(queues: Sequence[QueueRef], per_slot: bool) -> list[tuple[list[int], bool]]:
    """Positions in ``queues`` of each transaction's queues, and whether it is atomic."""
    if not per_slot:
        return [
            (list(range(i, min(i + TRANSACTION_CHUNK, len(queues)))), True)
            for i in range(0, len(queues), TRANSACTION_CHUNK)
        ]
    groups: dict[int | None, list[int]] = {}
    for i, q in enumerate(queues):
        groups.setdefault(queue_slot(q), []).append(i)
    return [
        (positions[i : i + TRANSACTION_CHUNK], slot is not None)
        for slot, positions in groups.items()
        for i in range(0, len(positions), TRANSACTION_CHUNK)
    ]


def plan_transactions(queues: Sequence[QueueRef], *, per_slot: bool = False) -> list[Transaction]:
    """How ``read_snapshots`` groups ``queues``: chunks of up to ``TRANSACTION_CHUNK`` queues in
    their order (a single node: the fewest round trips), or with ``per_slot`` one group per hash
    slot, so no transaction mixes slots (a Redis Cluster refuses it)."""
    return [
        Transaction(tuple(queues[i] for i in positions), atomic)
        for positions, atomic in _planned_positions(queues, per_slot)
    ]


def _raw_transactions(client: redis.Redis, chunks: list[tuple[bytes, int, bool]]) -> list:
    """Send each chunk of pre-packed commands on one pooled connection (as one MULTI/EXEC when
    the chunk is atomic, else as plain commands) and return every command's reply, in order.
    An error reply (e.g. a foreign key of the wrong type under the prefix) comes back in place,
    not raised, so one odd key cannot hide every other queue of the connection."""
    pool = client.connection_pool
    conn = pool.get_connection()
    try:
        # One buffer, one ``sendall``: redis-py sends a list of parts one ``sendall`` each, and a
        # Cluster's snapshot is a transaction per queue (three parts).
        parts = (part for packed, _, atomic in chunks for part in ((_MULTI, packed, _EXEC) if atomic else (packed,)))
        conn.send_packed_command([b"".join(parts)])
        read = _reply_reader(conn)
        out: list = []
        try:
            for _, replies, atomic in chunks:
                if not atomic:
                    out.extend(read() for _ in range(replies))
                    continue
                _discard_replies(conn, read, replies + 1)  # +OK for MULTI, then +QUEUED per command
                executed = read()  # nested error replies are returned, not raised
                if isinstance(executed, redis.ResponseError):
                    raise executed
                if executed is None or len(executed) != replies:
                    raise redis.ResponseError("snapshot transaction was aborted")
                out.extend(executed)
        except OSError as exc:  # what Connection.read_response would have said
            raise redis.ConnectionError(f"Error while reading a snapshot: {exc}") from exc
        return out
    except BaseException:
        conn.disconnect()  # a half-read connection must never go back to the pool
        raise
    finally:
        pool.release(conn)


def _reply_reader(conn) -> Callable[[], Any]:
    """A function that reads the connection's next reply, an error reply returned in place (not
    raised). Through the connection's parser when it has one (redis-py's hiredis and RESP
    parsers do): ``Connection.read_response`` formats its host string and wraps errors on every
    call: a sixth of a snapshot's CPU at 10,000 queues when each reply was read through it."""
    read = getattr(getattr(conn, "_parser", None), "read_response", None)
    if read is not None:
        return read

    def read_in_place():
        try:
            return conn.read_response()
        except redis.ResponseError as exc:
            return exc

    return read_in_place


def _discard_replies(conn, read: Callable[[], Any], count: int) -> None:
    """Read and drop ``count`` replies: a transaction's ``+OK`` and ``+QUEUED`` ones, one per
    command (the results come back together in the ``EXEC`` reply). An error reply in their
    place (a command the user's ACL refuses) is raised at once, as ``Connection.read_response``
    raises it, so the reason is the command's own, not the transaction's ``EXECABORT``.

    With redis-py's hiredis parser they are taken from its reader in one loop: on a Cluster
    every queue is a transaction of its own, so these are nine in ten of the replies a snapshot
    reads, and the parser's ``read_response`` around each was a fifth of its CPU."""
    parser = getattr(conn, "_parser", None)
    gets = getattr(getattr(parser, "_reader", None), "gets", None)
    fill = getattr(parser, "read_from_socket", None)
    if gets is None or fill is None:  # the pure-Python parser: one reply at a time
        for _ in range(count):
            reply = read()
            if isinstance(reply, Exception):
                raise reply
        return
    while count:
        reply = gets()
        if isinstance(reply, bytes):  # OK, QUEUED
            count -= 1
        elif isinstance(reply, Exception):  # an error reply, parsed into redis-py's error class
            raise reply
        else:  # the reader's "not enough data" marker: more of the socket first
            fill()


def _count(value) -> int:
    return value if isinstance(value, int) else 0


def _tail(value) -> bytes | None:
    return value if isinstance(value, bytes) else None


def _newest_id(value) -> str | None:
    if isinstance(value, list) and value and isinstance(value[0], (list, tuple)):
        return value[0][0].decode("ascii", "replace")
    return None


def read_snapshots(client: redis.Redis, queues: list[QueueRef], *, per_slot: bool = False) -> list[QueueSnapshot]:
    """Snapshot every queue of one connection, in the order given. ``per_slot``: no transaction
    mixes hash slots (``plan_transactions``; for a Redis Cluster node). Raises redis errors to
    the caller, which decides how to show an unreachable connection."""
    if not queues:
        return []
    planned = _planned_positions(queues, per_slot)
    order = [i for positions, _ in planned for i in positions]
    raw_in_plan = _raw_transactions(
        client,
        [
            (_packed_reads([queues[i] for i in positions]), len(positions) * PER_QUEUE_COMMANDS, atomic)
            for positions, atomic in planned
        ],
    )
    raw = raw_in_plan  # chunks keep the order given
    if per_slot:
        raw = [None] * len(raw_in_plan)
        for n, i in enumerate(order):  # back in the order given
            raw[i * PER_QUEUE_COMMANDS : (i + 1) * PER_QUEUE_COMMANDS] = raw_in_plan[
                n * PER_QUEUE_COMMANDS : (n + 1) * PER_QUEUE_COMMANDS
            ]
    now = int(time.time() * 1000)
    legacy_lengths = _legacy_lengths(
        client, [q for i, q in enumerate(queues) if _tail(raw[i * PER_QUEUE_COMMANDS + 2]) is not None]
    )

    snapshots: list[QueueSnapshot] = []
    all_ends: list[_Ends] = []
    for i, q in enumerate(queues):
        replies = raw[i * PER_QUEUE_COMMANDS : (i + 1) * PER_QUEUE_COMMANDS]
        (wait, active, delayed, prioritized, waiting_children, completed, failed, paused_flag, repeat) = (
            _count(replies[j]) for j in (0, 3, 4, 5, 6, 7, 8, 9, 10)
        )
        wait_tail, legacy_tail = _tail(replies[1]), _tail(replies[2])
        legacy = legacy_lengths.get(q, 0) if legacy_tail is not None else 0
        wait, wait_tail = _skip_legacy_marker(wait, wait_tail)
        legacy, legacy_tail = _skip_legacy_marker(legacy, legacy_tail)
        wait_head = _tail(replies[13])
        if wait_head is not None and wait_head.startswith(LEGACY_MARKER):
            wait_head = None
        window = replies[12] if wait_tail and isinstance(replies[12], list) else []
        before_tail = [_text(j) for j in reversed(window) if isinstance(j, bytes) and not j.startswith(LEGACY_MARKER)]
        # A legacy list (v5 moved wait there on pause and pushed new jobs to it) holds the
        # jobs that waited longest: its tail stands for the tail of wait.
        ends = _Ends(
            wait + legacy,
            prioritized,
            [_text(legacy_tail)] if legacy_tail else [_text(wait_tail), *before_tail],
            _text(wait_head),
            _scored(replies[14]),
            _scored(replies[15]),
        )
        snapshots.append(
            QueueSnapshot(
                queue=q,
                counts={
                    # getJobCounts() leaves a legacy v5 ``paused`` list out of waiting; it is
                    # shown apart (legacy_paused_jobs), with the migration warning.
                    "waiting": wait,
                    "active": active,
                    "delayed": delayed,
                    "prioritized": prioritized,
                    "waiting-children": waiting_children,
                    "completed": completed,
                    "failed": failed,
                },
                paused=bool(paused_flag) or legacy > 0,
                schedulers=repeat,
                legacy_paused_jobs=legacy,
                last_event_id=_newest_id(replies[11]),
                taken_at=now,
            )
        )
        all_ends.append(ends)
    _read_ready_times(client, snapshots, all_ends)
    return snapshots


@dataclass
class _Ends:
    """The ids at the ends of one queue's waiting jobs (prioritized ones with their scores)."""

    wait_count: int
    prioritized_count: int
    wait_from_tail: list[str | None]
    wait_head: str | None
    prioritized_first: tuple[str, float] | None
    prioritized_last: tuple[str, float] | None

    def ids(self) -> list[str]:
        found = [*self.wait_from_tail, self.wait_head] + [
            p[0] for p in (self.prioritized_first, self.prioritized_last) if p
        ]
        return list(dict.fromkeys(i for i in found if i))

    def ready(self, known: dict[str, ReadyTime]) -> WaitingEnds:
        """These ends with the ready times read of their jobs (None: not read)."""

        def scored(entry: tuple[str, float] | None) -> tuple[ReadyTime, float] | None:
            t = known.get(entry[0]) if entry else None
            return (t, entry[1]) if t is not None and entry is not None else None

        return WaitingEnds(
            self.wait_count,
            self.prioritized_count,
            tuple(known.get(job) if job else None for job in self.wait_from_tail),
            known.get(self.wait_head) if self.wait_head else None,
            scored(self.prioritized_first),
            scored(self.prioritized_last),
        )


# ``HMGET <job key> <READY_FIELDS>`` but for the key, packed once.
_HMGET_HEAD = b"*%d\r\n$5\r\nHMGET\r\n" % (2 + len(READY_FIELDS))
_HMGET_FIELDS = b"".join(b"$%d\r\n%s\r\n" % (len(f), f) for f in READY_FIELDS)


def _packed_hmget(key: bytes) -> bytes:
    return b"%s$%d\r\n%s\r\n%s" % (_HMGET_HEAD, len(key), key, _HMGET_FIELDS)


def _read_ready_times(client: redis.Redis, snapshots: list[QueueSnapshot], all_ends: list[_Ends]) -> None:
    """Round trip two: the ready-time fields of the jobs at the ends (at most six per queue),
    and from them each queue's oldest ready job (``queues.ready_since.oldest_ready``)."""
    wanted = [(n, job) for n, e in enumerate(all_ends) for job in e.ids()]
    if not wanted:
        return
    # Packed by hand, like round trip one: redis-py's Pipeline cost more CPU than Redis spent.
    packed = b"".join(_packed_hmget(snapshots[n].queue.job_key(job).encode()) for n, job in wanted)
    replies = _raw_transactions(client, [(packed, len(wanted), False)])
    times: list[dict[str, ReadyTime]] = [{} for _ in snapshots]
    for (n, job), fields in zip(wanted, replies):
        if isinstance(fields, list) and len(fields) == len(READY_FIELDS):  # else an error reply
            times[n][job] = ready_time(*fields)
    for s, e, known in zip(snapshots, all_ends, times):
        s.oldest_waiting_ts, s.oldest_waiting_bound = oldest_ready(e.ready(known), s.taken_at)
        # The job that time is of: the live estimate stops trusting it once that job leaves.
        s.oldest_waiting_id = next((job for job, t in known.items() if t.ms == s.oldest_waiting_ts), None)


def _text(value: bytes | None) -> str | None:
    return value.decode("utf-8", errors="replace") if value else None


def _scored(value) -> tuple[str, float] | None:
    """``ZRANGE … WITHSCORES`` of one member: (id, score), or None (empty, or an error reply).
    RESP3 replies pair each member with its score, RESP2 replies are flat."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], (list, tuple)):
        value = list(value[0])
    if isinstance(value, list) and len(value) == 2 and isinstance(value[0], bytes):
        score = finite(_float(value[1]))
        return (value[0].decode("utf-8", errors="replace"), score) if score is not None else None
    return None


def _float(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _legacy_lengths(client: redis.Redis, queues: list[QueueRef]) -> dict[QueueRef, int]:
    """The length of each given queue's legacy ``paused`` list, read just after the snapshot (not
    inside its transaction): such a list holds jobs no BullMQ 6 worker takes until the queue is
    resumed, so it does not move between the two reads unless an operator resumes the queue."""
    if not queues:
        return {}
    pipe = client.pipeline(transaction=False)
    for q in queues:
        pipe.llen(q.key("paused"))
    # An error reply (the key changed type in between) counts as no list, as in the snapshot.
    return {q: _count(n) for q, n in zip(queues, pipe.execute(raise_on_error=False))}


def _skip_legacy_marker(length: int, tail: bytes | None) -> tuple[int, bytes | None]:
    if tail is not None and tail.startswith(LEGACY_MARKER):
        return max(0, length - 1), None
    return length, tail
