"""A queue's deduplication keys (BullMQ's ``deduplication`` option), as a page shows them.

BullMQ keeps one key per held deduplication id, ``<prefix>:<queue>:de:<id>``: a string holding
the id of the job that owns it (the job later adds are deduplicated against), with the TTL of
``deduplication.ttl`` or none (held until the owner completes or fails). With 6.7's
``keepLastIfActive`` an add that arrives while the owner is *active* stores itself as the next
job to add, in ``<prefix>:<queue>:dn:<id>`` (a hash: ``name``, ``data``, ``opts``, ``jid`` and
a flow parent's ``pk``/``pd``/``pdk``, a scheduler's ``rjk``); BullMQ adds it when the owner
finishes. Only the latest such add is kept.

A key whose owner job is gone, and which has no TTL, is *stuck*: every later add with that id
is deduplicated against a job that will never finish (BullMQ 6.7's add scripts recover such a
key themselves on the next add; older producers do not). Releasing a key is BullMQ's
``Job.removeDeduplicationKey``: it deletes the key only if it still names the owner the page
showed, so it never frees a key another job has taken since.
"""

from __future__ import annotations

from dataclasses import dataclass

from .actions import DONE, WRONG_STATE, ActionResult
from .messages import _

PAGE_SIZE = 50  # keys shown per page
SCAN_COUNT = 1000  # the COUNT hint of each SCAN
SCAN_CALLS = 20  # SCAN calls one page may make: at most about 20,000 keys examined per page
DATA_PREVIEW = 500  # characters of a pending next job's data shown


@dataclass(frozen=True)
class PendingNext:
    """The add a ``keepLastIfActive`` key holds back until its owner finishes."""

    name: str
    data_preview: str  # the stored data, cut at ``DATA_PREVIEW`` characters (redacted by the reader)
    data_bytes: int
    job_id: str  # the id it will be added under ("" for BullMQ's next counter value)


@dataclass(frozen=True)
class DedupKey:
    dedup_id: str
    owner: str  # the job id the key names
    ttl_ms: int | None  # None: held until the owner finishes
    owner_exists: bool  # the owner's job hash is there (its page shows its state)
    pending: PendingNext | None = None

    @property
    def stuck(self) -> bool:
        """Held with no expiry by a job that no longer exists."""
        return not self.owner_exists and self.ttl_ms is None


@dataclass(frozen=True)
class DedupPage:
    keys: list[DedupKey]
    cursor: str  # where the next page's scan starts; "0" when the scan is over
    examined_calls: int  # SCAN calls made for this page

    @property
    def more(self) -> bool:
        return self.cursor != "0"


@dataclass(frozen=True)
class DedupRates:
    """From the events the leading monitor counted since it started leading: every add (BullMQ's
    ``added``) and every ``deduplicated`` (an add turned away, or one that replaced a delayed owner)."""

    added: int
    deduplicated: int

    @property
    def hit_rate(self) -> float | None:
        """The share of adds that met a held deduplication id; None before any add."""
        total = self.added + self.deduplicated
        return self.deduplicated / total if total else None


def release_outcome(dedup_id: str, owner: str, removed: int) -> ActionResult:
    if removed:
        return ActionResult(
            owner,
            DONE,
            _(
                "Deduplication id {id} released: the next add with it is added as a new job.",
                id=dedup_id,
            ),
        )
    return ActionResult(
        owner,
        WRONG_STATE,
        _(
            "Deduplication id {id} is no longer held by job {owner} (it expired, was released, or another job "
            "holds it now); nothing was done.",
            id=dedup_id,
            owner=owner,
        ),
    )
