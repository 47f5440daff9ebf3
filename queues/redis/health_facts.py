"""Reading the facts the health checks judge (``queues.health.facts``) from a Redis node: a
handful of cheap, plain commands per connection.

Never Lua, never a write, never anything O(jobs). Managed Redis services often refuse
``CONFIG``: the facts then record the refusal, and the checks fall back instead of crashing.
(Workers come from the monitor's reading, or from one ``CLIENT LIST``: ``read_worker_facts``.)
"""

from __future__ import annotations

from collections.abc import Mapping

import redis

from ..health.facts import QueueFacts, ServerFacts, WorkerFacts
from ..keys import QueueRef
from ..snapshot import QueueSnapshot
from ..text import to_int, to_ms, to_text
from ..workers import Worker
from .schedulers import read_schedulers
from .snapshot import read_snapshots
from .workers import read_workers


def _text_dict(d: dict) -> dict:
    return {to_text(k): (to_text(v) if isinstance(v, bytes) else v) for k, v in d.items()}


CONFIG_PARAMS = ("maxmemory-policy", "maxmemory", "appendonly", "save")


def read_server_facts(client: redis.Redis) -> ServerFacts:
    """INFO always (a failure here means the connection is unusable and is raised);
    CONFIG GET when the server allows it."""
    info = _text_dict(client.info())
    config, config_error = {}, ""
    for param in CONFIG_PARAMS:
        try:
            config.update(_text_dict(client.config_get(param)))
        except redis.ResponseError as exc:
            config_error = str(exc) or "refused"
            config = {}
            break
    return ServerFacts(info=info, config=config, config_error=config_error)


def read_worker_facts(
    client: redis.Redis,
    queues: list[QueueRef],
    known: Mapping[QueueRef, list[Worker]] | None = None,
    known_at: int | None = None,
) -> WorkerFacts:
    """The workers of ``queues``: the monitor's reading ``known`` (taken at ``known_at``) when
    it has every one of them, at no cost to Redis; otherwise one ``CLIENT LIST`` here
    (``queues.redis.workers.read_workers``, by BullMQ's naming rule in ``queues.workers``), as
    on a web process with no monitor, or for a queue the monitor has not read yet."""
    if known is not None and all(q in known for q in queues):
        return WorkerFacts({q: known[q] for q in queues}, "monitor", taken_at=known_at)
    try:
        return WorkerFacts(read_workers(client, queues), "client-list")
    except redis.ResponseError as exc:  # refused (some managed services): judged from activity
        return WorkerFacts(None, "client-list", error=str(exc) or "refused")


def _oldest(reply) -> int | None:
    """The score of a ``ZRANGE … WITHSCORES`` reply's first entry, as a time; ``None`` when
    empty or not a time (a producer's ``inf`` score must not stop the health checks)."""
    if isinstance(reply, list) and reply:
        try:
            return to_ms(reply[0][1])
        except IndexError:
            return None
    return None


def read_queue_facts(
    client: redis.Redis,
    queues: list[QueueRef],
    known: Mapping[QueueRef, QueueSnapshot] | None = None,
    *,
    oldest_from: int = 0,
) -> list[QueueFacts]:
    """The facts of every queue. ``known``: snapshots the caller already holds (the leading
    monitor's figures, kept current from events and exact reads), used instead of reading the
    queue's snapshot again; only queues missing from it are snapshotted here. The monitor's
    figures are as exact as what it publishes (docs/live-truth.md), and reading them again
    once a minute cost the monitored Redis ~12 commands per queue. ``oldest_from``: the oldest
    finished job of a set is read only when the set holds at least this many jobs (the
    retention check cannot fail below its count threshold, so a small set's age is not read)."""
    known = known or {}
    missing = [q for q in queues if q not in known]
    read = {s.queue: s for s in read_snapshots(client, missing)}
    snaps = [s for s in (known.get(q) or read.get(q) for q in queues) if s is not None]
    if not snaps:
        return []
    pipe = client.pipeline(transaction=False)
    for snap in snaps:
        q = snap.queue
        for state in ("completed", "failed"):
            if snap.counts[state] >= oldest_from:
                pipe.zrange(q.key(state), 0, 0, withscores=True)
        pipe.get(q.key("limiter"))
        pipe.pttl(q.key("limiter"))
        pipe.hmget(q.key("meta"), "max", "duration")
    replies = iter(pipe.execute(raise_on_error=False))
    facts = []
    for snap in snaps:
        completed, failed = (
            next(replies) if snap.counts[state] >= oldest_from else None for state in ("completed", "failed")
        )
        limiter, pttl, meta = next(replies), next(replies), next(replies)
        meta = meta if isinstance(meta, list) else [None, None]
        f = QueueFacts(
            snapshot=snap,
            oldest_completed_ms=_oldest(completed),
            oldest_failed_ms=_oldest(failed),
            limiter_count=to_int(limiter) if isinstance(limiter, (bytes, str)) else None,
            limiter_pttl_ms=pttl if isinstance(pttl, int) else None,
            rate_max=to_int(meta[0]),
            rate_duration_ms=to_int(meta[1]),
        )
        if snap.schedulers:
            try:
                f.schedulers = read_schedulers(client, snap.queue)
            except redis.ResponseError:
                f.schedulers = []
        facts.append(f)
    return facts
