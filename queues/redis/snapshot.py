"""The cheap per-queue snapshot: state counts, paused flag, schedulers, oldest waiting age.

Reads use plain commands in a pipeline — never Lua (``getCounts`` may RPOP a legacy marker, and
scripts are a question on read-only replicas) and never anything that touches ``marker``, locks
or the active list's contents. Cost is O(queues): round trip one reads every count plus the ids
at both ends of ``wait`` and of ``prioritized``; round trip two reads the ``timestamp``,
``processedOn`` and ``opts`` of the jobs that usually decide (the tail of ``wait``, the ends of
``prioritized``), round trip three those of the other ends only where the tail did not (at most
six jobs a queue in all), from which ``queues.ready_since`` tells when the job ready the longest
became ready, exactly or as a bound. Three round trips per connection at most, whatever the
number of queues or jobs.

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
import operator
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass

import redis
from redis.crc import key_slot

from ..keys import QueueRef
from ..ready_since import READY_FIELDS, WAIT_TAIL_WINDOW, ReadyTime, WaitingEnds, oldest_ready, ready_time
from ..snapshot import QueueSnapshot
from ..text import finite
from .snapshot_wire import packed_hmget, pooled, receive, resp, send

LEGACY_MARKER = b"0:"  # v5 put "0:<ts>" markers in wait; getCounts skips them, so do we


# The per-queue reads, in order. Every queue costs exactly these plain commands. The legacy
# ``paused`` list (BullMQ 4/5 data, see below) is almost always absent, so only its tail is read
# here; its length is read afterwards, and only for a queue that has one (``_legacy_lengths``):
# an LLEN per queue per snapshot was 1 in 13 of the monitor's snapshot commands for nothing.
_QUEUE_READS = (
    (b"LLEN", b"wait"),
    # The tail of wait (the next to run) and the jobs before it, for the oldest ready job
    # (queues.ready_since): lifo jobs there are passed over.
    (b"LRANGE", b"wait", b"-%d" % WAIT_TAIL_WINDOW, b"-1"),
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
    # The other ends of what is waiting: the head of wait (the last LPUSHed); prioritized in
    # score order.
    (b"LINDEX", b"wait", b"0"),
    (b"ZRANGE", b"prioritized", b"0", b"0", b"WITHSCORES"),
    (b"ZRANGE", b"prioritized", b"-1", b"-1", b"WITHSCORES"),
)
TRANSACTION_CHUNK = 250  # queues per MULTI/EXEC
PER_QUEUE_COMMANDS = len(_QUEUE_READS)
# The replies that are counts (LLEN, ZCARD, HEXISTS), in the order ``_snapshot_steps`` unpacks them.
_COUNT_REPLIES = operator.itemgetter(0, 3, 4, 5, 6, 7, 8, 9, 10)


@functools.lru_cache(maxsize=16384)
def _packed_queue(queue: QueueRef) -> bytes:
    """One queue's reads as RESP bytes, cached per queue: building 12,000 commands through
    redis-py's Pipeline cost ~4x more CPU than Redis spent answering them. Cached per queue
    (not per list of queues) so memory stays bounded whatever subsets get refreshed."""
    return b"".join(resp(cmd, queue.base.encode() + suffix, *rest) for cmd, suffix, *rest in _QUEUE_READS)


def _packed_reads(queues: list[QueueRef]) -> bytes:
    return b"".join(_packed_queue(q) for q in queues)


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
    [snapshots] = read_snapshots_side_by_side([(client, queues)], per_slot=per_slot)
    return snapshots


def read_snapshots_side_by_side(
    reads: Sequence[tuple[redis.Redis, list[QueueRef]]], *, per_slot: bool = False
) -> list[list[QueueSnapshot]]:
    """``read_snapshots`` of several servers' queues (a Cluster's primaries) at once: each round
    trip is sent to every server before any reply is read, so the servers work side by side
    while this process reads the replies of the first (one after the other, each server's
    wait came on top of the others'). Raises the first error met; the other reads' connections
    are dropped, not reused half-read."""
    steps = [_snapshot_steps(client, queues, per_slot=per_slot) for client, queues in reads]
    results: list[list[QueueSnapshot]] = [[] for _ in steps]
    pending = list(range(len(steps)))
    try:
        while pending:
            going = []
            for i in pending:
                try:
                    next(steps[i])
                    going.append(i)
                except StopIteration as done:
                    results[i] = done.value
            pending = going
    finally:
        for step in steps:
            step.close()  # an unfinished one (another's error) gives its connection back, dropped
    return results


def _snapshot_steps(
    client: redis.Redis, queues: list[QueueRef], *, per_slot: bool
) -> Generator[None, None, list[QueueSnapshot]]:
    """``read_snapshots`` of one server as steps: it yields after sending each round trip, before
    reading its replies (``read_snapshots_side_by_side`` sends to every server first)."""
    if not queues:
        return []
    planned = _planned_positions(queues, per_slot)
    order = [i for positions, _ in planned for i in positions]
    chunks = [
        (_packed_reads([queues[i] for i in positions]), len(positions) * PER_QUEUE_COMMANDS, atomic)
        for positions, atomic in planned
    ]
    with pooled(client) as conn:
        send(conn, chunks)
        yield
        raw_in_plan = receive(conn, chunks)
    # Where each queue's replies start (the plan groups queues by slot: back in the order given).
    start = [0] * len(queues)
    for n, i in enumerate(order):
        start[i] = n * PER_QUEUE_COMMANDS
    now = int(time.time() * 1000)
    legacy_lengths = _legacy_lengths(
        client, [q for i, q in enumerate(queues) if _tail(raw_in_plan[start[i] + 2]) is not None]
    )

    snapshots: list[QueueSnapshot] = []
    all_ends: list[_Ends] = []
    for i, q in enumerate(queues):
        replies = raw_in_plan[start[i] : start[i] + PER_QUEUE_COMMANDS]
        (wait, active, delayed, prioritized, waiting_children, completed, failed, paused_flag, repeat) = [
            value if isinstance(value, int) else 0 for value in _COUNT_REPLIES(replies)
        ]
        tail_window = replies[1] if isinstance(replies[1], list) else []  # else an error reply
        wait_tail, legacy_tail = (_tail(tail_window[-1]) if tail_window else None), _tail(replies[2])
        legacy = legacy_lengths.get(q, 0) if legacy_tail is not None else 0
        wait, wait_tail = _skip_legacy_marker(wait, wait_tail)
        legacy, legacy_tail = _skip_legacy_marker(legacy, legacy_tail)
        wait_head = _tail(replies[12])
        if wait_head is not None and wait_head.startswith(LEGACY_MARKER):
            wait_head = None
        window = tail_window[:-1] if wait_tail else []
        before_tail = [_text(j) for j in reversed(window) if isinstance(j, bytes) and not j.startswith(LEGACY_MARKER)]
        # A legacy list (v5 moved wait there on pause and pushed new jobs to it) holds the
        # jobs that waited longest: its tail stands for the tail of wait.
        ends = _Ends(
            wait + legacy,
            prioritized,
            [_text(legacy_tail)] if legacy_tail else [_text(wait_tail), *before_tail],
            _text(wait_head),
            _scored(replies[13]) if prioritized else None,
            _scored(replies[14]) if prioritized else None,
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
    yield from _read_ready_times(client, snapshots, all_ends)
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
        found = [job for job in self.wait_from_tail if job]
        if self.wait_head:
            found.append(self.wait_head)
        for entry in (self.prioritized_first, self.prioritized_last):
            if entry:
                found.append(entry[0])
        return list(dict.fromkeys(found)) if len(found) > 1 else found

    def deciding(self) -> list[str]:
        """The jobs whose ready times usually decide: the tail of wait and prioritized's ends."""
        found = [self.wait_from_tail[0]] if self.wait_from_tail and self.wait_from_tail[0] else []
        for entry in (self.prioritized_first, self.prioritized_last):
            if entry and entry[0] not in found:
                found.append(entry[0])
        return found

    def undecided(self, known: dict[str, ReadyTime]) -> list[str]:
        """The other jobs to read when the tail of wait does not decide (``oldest_ready``: the
        first job from the tail that is exact and not lifo became ready before all behind it)."""
        tail = known.get(self.wait_from_tail[0]) if self.wait_from_tail and self.wait_from_tail[0] else None
        if self.wait_count == 0 or (tail is not None and tail.exact and not tail.lifo):
            return []
        return [job for job in self.ids() if job not in known]

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


def _read_ready_times(
    client: redis.Redis, snapshots: list[QueueSnapshot], all_ends: list[_Ends]
) -> Generator[None, None, None]:
    """Round trip two: the ready-time fields of the jobs that usually decide each queue's oldest
    ready job (the tail of ``wait``, the ends of ``prioritized``); round trip three, only for the
    queues whose tail does not decide (it ran, was delayed or is lifo), those of the other jobs
    at the ends; from them the oldest ready job (``queues.ready_since.oldest_ready``), the same
    as from every end read at once, with a third of the reads in the common case. Steps of
    ``_snapshot_steps``: each yields once sent."""
    times: list[dict[str, ReadyTime]] = [{} for _ in snapshots]
    yield from _read_jobs(client, snapshots, [(n, job) for n, e in enumerate(all_ends) for job in e.deciding()], times)
    rest = [(n, job) for n, e in enumerate(all_ends) for job in e.undecided(times[n])]
    yield from _read_jobs(client, snapshots, rest, times)
    for s, e, known in zip(snapshots, all_ends, times):
        s.oldest_waiting_ts, s.oldest_waiting_bound = oldest_ready(e.ready(known), s.taken_at)
        # The job that time is of: the live estimate stops trusting it once that job leaves.
        s.oldest_waiting_id = next((job for job, t in known.items() if t.ms == s.oldest_waiting_ts), None)


def _read_jobs(
    client: redis.Redis, snapshots: list[QueueSnapshot], wanted: list[tuple[int, str]], times: list[dict]
) -> Generator[None, None, None]:
    """One round trip of ready-time reads: ``HMGET`` of each wanted job, its ``ReadyTime`` into
    ``times`` (a job whose read failed is left out: unknown)."""
    if not wanted:
        return
    # Packed by hand, like round trip one: redis-py's Pipeline cost more CPU than Redis spent.
    packed = b"".join(packed_hmget(snapshots[n].queue.job_key(job).encode()) for n, job in wanted)
    chunks = [(packed, len(wanted), False)]
    with pooled(client) as conn:
        send(conn, chunks)
        yield
        replies = receive(conn, chunks)
    for (n, job), fields in zip(wanted, replies):
        if isinstance(fields, list) and len(fields) == len(READY_FIELDS):  # else an error reply
            times[n][job] = ready_time(*fields)


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
