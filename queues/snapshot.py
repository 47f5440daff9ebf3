"""The cheap per-queue snapshot: state counts, paused flag, schedulers, oldest waiting age.

Reads use plain commands in a pipeline — never Lua (``getCounts`` may RPOP a legacy marker, and
scripts are a question on read-only replicas) and never anything that touches ``marker``, locks
or the active list's contents. Cost is O(queues): round trip one reads every count plus the id
at the tail of ``wait`` (the oldest waiting job, since producers LPUSH and workers take from
the tail); round trip two reads those jobs' creation timestamps. Two round trips per connection
whatever the number of queues or jobs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import redis

from .keys import QueueRef
from .text import to_int

COUNT_STATES = ("waiting", "active", "delayed", "prioritized", "waiting-children", "completed", "failed")
LEGACY_MARKER = b"0:"  # v5 put "0:<ts>" markers in wait; getCounts skips them, so do we


@dataclass
class QueueSnapshot:
    queue: QueueRef
    counts: dict[str, int]
    paused: bool
    schedulers: int
    legacy_paused_jobs: int = 0
    oldest_waiting_id: str | None = None
    oldest_waiting_ts: int | None = None  # ms since epoch
    taken_at: int = field(default_factory=lambda: int(time.time() * 1000))

    @property
    def oldest_waiting_age_ms(self) -> int | None:
        if self.oldest_waiting_ts is None:
            return None
        return max(0, self.taken_at - self.oldest_waiting_ts)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def as_dict(self) -> dict:
        return {
            "connection": self.queue.connection,
            "prefix": self.queue.prefix,
            "name": self.queue.name,
            "paused": self.paused,
            "counts": dict(self.counts),
            "schedulers": self.schedulers,
            "legacy_paused_jobs": self.legacy_paused_jobs,
            "oldest_waiting_age_ms": self.oldest_waiting_age_ms,
            "taken_at": self.taken_at,
        }


PER_QUEUE_COMMANDS = 12


def read_snapshots(client: redis.Redis, queues: list[QueueRef]) -> list[QueueSnapshot]:
    """Snapshot every queue of one connection. Raises redis errors to the caller, which
    decides how to show an unreachable connection."""
    if not queues:
        return []
    pipe = client.pipeline(transaction=False)
    for q in queues:
        pipe.llen(q.key("wait"))
        pipe.lindex(q.key("wait"), -1)
        pipe.llen(q.key("paused"))
        pipe.lindex(q.key("paused"), -1)
        pipe.llen(q.key("active"))
        pipe.zcard(q.key("delayed"))
        pipe.zcard(q.key("prioritized"))
        pipe.zcard(q.key("waiting-children"))
        pipe.zcard(q.key("completed"))
        pipe.zcard(q.key("failed"))
        pipe.hexists(q.key("meta"), "paused")
        pipe.zcard(q.key("repeat"))
    raw = pipe.execute()
    now = int(time.time() * 1000)

    snapshots = []
    for i, q in enumerate(queues):
        (wait, wait_tail, legacy, legacy_tail, active, delayed, prioritized,
         waiting_children, completed, failed, paused_flag, repeat) = raw[i * PER_QUEUE_COMMANDS:(i + 1) * PER_QUEUE_COMMANDS]
        wait, wait_tail = _skip_legacy_marker(wait, wait_tail)
        legacy, legacy_tail = _skip_legacy_marker(legacy, legacy_tail)
        # The oldest waiting job is at the tail of the legacy list if one exists (v5 moved
        # wait there on pause and pushed new jobs to it), else at the tail of wait.
        oldest = legacy_tail or wait_tail
        snapshots.append(
            QueueSnapshot(
                queue=q,
                counts={
                    "waiting": wait + legacy,
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
                oldest_waiting_id=oldest.decode("utf-8", errors="replace") if oldest else None,
                taken_at=now,
            )
        )

    with_oldest = [s for s in snapshots if s.oldest_waiting_id]
    if with_oldest:
        pipe = client.pipeline(transaction=False)
        for s in with_oldest:
            pipe.hget(s.queue.job_key(s.oldest_waiting_id), "timestamp")
        for s, ts in zip(with_oldest, pipe.execute()):
            s.oldest_waiting_ts = to_int(ts)
    return snapshots


def _skip_legacy_marker(length: int, tail: bytes | None) -> tuple[int, bytes | None]:
    if tail is not None and tail.startswith(LEGACY_MARKER):
        return max(0, length - 1), None
    return length, tail
