"""Reading the facts the checks judge: a handful of cheap, plain commands per connection.

Never Lua, never a write, never anything O(jobs). Managed Redis services often refuse
``CONFIG`` and ``CLIENT LIST``: the facts then record the refusal, and the checks fall back
instead of crashing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import redis

from ..keys import QueueRef
from ..schedulers import Scheduler, read_schedulers
from ..snapshot import QueueSnapshot, read_snapshots
from ..text import to_int, to_ms, to_text


@dataclass
class ServerFacts:
    info: dict  # INFO, keys as text
    config: dict  # CONFIG GET results that were allowed, keys as text
    config_error: str = ""  # why CONFIG GET was refused ("" when it worked)
    client_names: list[str] | None = None  # CLIENT LIST names; None when refused
    clients_error: str = ""


def _text_dict(d: dict) -> dict:
    return {to_text(k): (to_text(v) if isinstance(v, bytes) else v) for k, v in d.items()}


CONFIG_PARAMS = ("maxmemory-policy", "maxmemory", "appendonly", "save")


def read_server_facts(client: redis.Redis) -> ServerFacts:
    """INFO always (a failure here means the connection is unusable and is raised);
    CONFIG GET and CLIENT LIST when the server allows them."""
    info = _text_dict(client.info())
    config, config_error = {}, ""
    for param in CONFIG_PARAMS:
        try:
            config.update(_text_dict(client.config_get(param)))
        except redis.ResponseError as exc:
            config_error = str(exc) or "refused"
            config = {}
            break
    # CLIENT LIST shows the clients of every database; a worker counts for the database it
    # has selected, which is ours when it serves these queues.
    db = str(client.connection_pool.connection_kwargs.get("db", 0))
    try:
        names = [to_text(c.get("name", "")) for c in client.client_list() if str(c.get("db", db)) == db]
        clients_error = ""
    except redis.ResponseError as exc:
        names, clients_error = None, str(exc) or "refused"
    return ServerFacts(info=info, config=config, config_error=config_error, client_names=names, clients_error=clients_error)


@dataclass
class QueueFacts:
    snapshot: QueueSnapshot
    oldest_completed_ms: int | None = None  # finishedOn of the oldest job in the set
    oldest_failed_ms: int | None = None
    limiter_count: int | None = None
    limiter_pttl_ms: int | None = None
    rate_max: int | None = None  # meta max / duration (global rate limit)
    rate_duration_ms: int | None = None
    schedulers: list[Scheduler] = field(default_factory=list)


def _oldest(reply) -> int | None:
    """The score of a ``ZRANGE … WITHSCORES`` reply's first entry, as a time; ``None`` when
    empty or not a time (a producer's ``inf`` score must not stop the health checks)."""
    if isinstance(reply, list) and reply:
        try:
            return to_ms(reply[0][1])
        except IndexError:
            return None
    return None


def read_queue_facts(client: redis.Redis, queues: list[QueueRef],
                     known: Mapping[QueueRef, QueueSnapshot] | None = None, *,
                     oldest_from: int = 0) -> list[QueueFacts]:
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
        completed, failed = (next(replies) if snap.counts[state] >= oldest_from else None
                             for state in ("completed", "failed"))
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
