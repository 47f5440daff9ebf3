"""Which events of a PostgreSQL schema have been delivered, and which may still appear below them.

BullMQ numbers events from one sequence per schema (``event_seq``), drawn when a row is
inserted, not when its transaction commits: a transaction that drew id 10 may commit after one
that drew id 11 was read, and a reader that only moved its cursor past 11 would never see 10.
So each queue keeps a *floor* (every event at or below it has been delivered, or never will
be) beside its cursor (``last``, the newest delivered), and the reads ask for every id above
the floor not yet delivered (``seen``): the *window* between floor and cursor is read again
until nothing can appear in it any more.

When is that? A read statement also returns its snapshot (``pg_current_snapshot()``: ``xmin``,
the oldest transaction still running; ``xmax``, the first not yet started). A row not visible to
a read came from a transaction running at that read, whose transaction id is below the read's
``xmax`` — or just above it, as an insert draws its id a moment before it gets a transaction
id: so each read's positions (a ``Checkpoint``) take as their bar the ``xmax`` of a read made
``ASSIGN_S`` later. Once a later read's ``xmin`` reaches the bar, every such transaction has
ended, its rows were visible to that read, which read the whole window: the floor moves up to
the checkpoint's positions. A transaction left open for ``settle_s`` (a session idle in a
transaction, a long batch) would hold the window open for ever: the checkpoint is then settled
anyway, and reported as a possible loss when one of the transactions still running has written
to the event table (the caller asks PostgreSQL, ``stuck_xids``).

Pure bookkeeping, no I/O: ``queues.postgres.events`` reads and hands the rows over.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ASSIGN_S = 0.1  # an insert gets its transaction id within microseconds of drawing its event id
SETTLE_S = 5.0  # longest a window is kept open waiting for a transaction
MAX_SEEN = 20_000  # delivered ids kept per schema above the floors: beyond, settle at once


@dataclass
class Cursor:
    """One queue's position: ``floor`` <= ``last``; ``seen`` the delivered ids above ``floor``."""

    last: int
    floor: int
    last_ms: int | None = None  # when the newest delivered event was made (a gap's start)
    seen: set[int] = field(default_factory=set)

    def deliver(self, event_id: int) -> bool:
        """Whether the event is new (and mark it delivered)."""
        if event_id <= self.floor or event_id in self.seen:
            return False
        self.seen.add(event_id)
        self.last = max(self.last, event_id)
        return True

    def raise_floor(self, to: int) -> None:
        if to > self.floor:
            self.floor = to
            self.seen = {i for i in self.seen if i > to}


@dataclass
class Snapshot:
    """What a read statement's ``pg_current_snapshot()`` says (64-bit transaction ids)."""

    xmin: int
    xmax: int
    running: tuple[int, ...]

    @classmethod
    def parse(cls, text: str) -> Snapshot:
        xmin, xmax, xip = text.split(":")
        return cls(int(xmin), int(xmax), tuple(int(x) for x in xip.split(",") if x))


@dataclass
class Checkpoint:
    at: float  # monotonic seconds of the read
    positions: dict[str, int]  # queue name -> its cursor after that read
    bar: int | None = None  # the xmax every transaction below must have left


class SchemaWindow:
    """The cursors of the followed queues of one schema and the reads not settled yet."""

    def __init__(self, *, settle_s: float = SETTLE_S):
        self.settle_s = settle_s
        self.cursors: dict[str, Cursor] = {}
        self.pending: list[Checkpoint] = []

    def start(self, queue: str, at_id: int) -> None:
        self.cursors[queue] = Cursor(last=at_id, floor=at_id)

    def forget(self, queue: str) -> None:
        self.cursors.pop(queue, None)
        for cp in self.pending:
            cp.positions.pop(queue, None)

    def seen_ids(self) -> list[int]:
        """Every delivered id above its queue's floor (ids are unique in a schema)."""
        return [i for c in self.cursors.values() for i in c.seen]

    @property
    def open(self) -> bool:
        """Whether events may still appear below some cursor (reads should come soon)."""
        return any(c.seen for c in self.cursors.values())

    def after_read(self, snap: Snapshot, at: float, *, complete: bool) -> None:
        """Note a read made with ``snap`` at ``at`` (monotonic); ``complete`` when it returned
        every row above the floors (no queue cut at the read's limit): only such a read may
        settle a checkpoint."""
        positions = {q: c.last for q, c in self.cursors.items()}
        if self.open and (not self.pending or self.pending[-1].positions != positions):
            self.pending.append(Checkpoint(at, positions))
        for cp in self.pending:
            if cp.bar is None and at - cp.at >= ASSIGN_S:
                cp.bar = snap.xmax
        while complete and self.pending and self.pending[0].bar is not None and snap.xmin >= self.pending[0].bar:
            self._settle(self.pending.pop(0))

    def stuck(self, at: float) -> Checkpoint | None:
        """The oldest checkpoint when it has waited ``settle_s`` (or too many ids are kept)."""
        if not self.pending:
            return None
        oldest = self.pending[0]
        if at - oldest.at >= self.settle_s or len(self.seen_ids()) > MAX_SEEN:
            return oldest
        return None

    def stuck_xids(self, snap: Snapshot) -> list[int]:
        """The transactions still running that may hold events below the oldest checkpoint."""
        bar = self.pending[0].bar if self.pending and self.pending[0].bar is not None else snap.xmax
        return [x for x in snap.running if x < bar]

    def settle_oldest(self) -> Checkpoint:
        """Give up waiting for the oldest checkpoint: its positions become floors."""
        cp = self.pending.pop(0)
        self._settle(cp)
        return cp

    def _settle(self, cp: Checkpoint) -> None:
        for queue, position in cp.positions.items():
            cursor = self.cursors.get(queue)
            if cursor is not None:
                cursor.raise_floor(position)
