"""When finished-job counts read earlier are still exact: nothing was committed since.

PostgreSQL has no O(1) count: an exact count reads every index entry it counts, about 0.1 µs
each on an idle core, so the completed and failed jobs a schema keeps (most of its rows: a
million of them is ~100-150 ms of one core, several times that on a busy machine) dominate a
snapshot. BullMQ keeps no counters, and its events cannot say which queues changed: several of
its functions change job rows and publish no event (``remove``, ``retry_jobs``,
``promote_jobs``, ``change_priority``, ``change_delay``, ``move_to_waiting_children``,
``add_job_scheduler``, ``obliterate``; 6.7's migrations), so counts kept from events alone
would miss a removed failed job until the next full count.

What PostgreSQL can prove cheaply is that *nothing at all* was committed. A snapshot
(``pg_current_snapshot()``) carries ``xmax``, one past the newest transaction that had ended, and
the transactions still running below it. Take counts at a snapshot ``P`` that shows no running
transaction: every transaction that wrote before ``P`` had ended and is in the counts. A write
after ``P`` needs a transaction id, which is at least ``P.xmax``; once it ends, every later
snapshot's ``xmax`` is above ``P.xmax``. So a later snapshot ``N`` with ``N.xmax == P.xmax`` sees
exactly what ``P`` saw, and the counts taken at ``P`` are exact at ``N``. Any commit anywhere in
the cluster (transaction ids are cluster-wide) breaks the proof, and every finished count is
read again: exact, at the cost of a full count.

Pure bookkeeping, no I/O: ``queues.postgres.snapshots`` reads, and its counting statement makes
the ``xmax`` comparison itself, in the very snapshot it counts in.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .event_window import Snapshot


@dataclass(frozen=True)
class KeptCounts:
    """Finished-job counts per queue (``{"completed": n, "failed": n}``, absent states 0), all
    exact at snapshot ``at``; ``at`` is ``None`` when there are none."""

    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    at: Snapshot | None = None

    def extended(self, fresh: dict[str, dict[str, int]], snap: Snapshot) -> KeptCounts:
        """These counts and ``fresh`` ones, all read at ``snap``, kept for the next read when
        ``snap`` can vouch for them (no transaction running); otherwise none are kept."""
        if snap.running:
            return KeptCounts()
        return KeptCounts({**self.counts, **fresh}, snap)


NOTHING_KEPT = KeptCounts()


def base_for_next_read(kept: KeptCounts | None) -> KeptCounts:
    """What a read may start from: the kept counts and the ``xmax`` their statement must see
    again to use them (it compares, in the same snapshot it counts in), or nothing."""
    if kept is None or kept.at is None or kept.at.running:
        return NOTHING_KEPT
    return kept
