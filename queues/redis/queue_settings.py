"""A queue's settings and its destructive maintenance: global concurrency, global rate limit,
the rate-limit key, drain and obliterate.

Global concurrency and rate limit are plain fields of the queue's ``meta`` hash in BullMQ too
(``Queue.setGlobalConcurrency`` is ``HSET meta concurrency n``; ``setGlobalRateLimit`` is
``HSET meta max n duration ms``; the removals are ``HDEL``; ``removeRateLimitKey`` is
``DEL limiter``): we make exactly those writes. Drain and obliterate run BullMQ's own scripts
(``drain-5``, ``obliterate-2``) with the arguments Node's ``Queue.drain(delayed)`` and
``Queue.obliterate()`` give them. Obliterate is refused unless the queue is paused (Node pauses
it first; we ask the operator to, so nobody obliterates a working queue by accident) and, as
Node does without ``force``, while jobs are active.

Framework-free.
"""

from __future__ import annotations

import redis

from ..keys import QueueRef
from ..messages import _
from ..queue_settings import QueueSettings, SettingRefused, limited_for_ms
from ..script_versions import newer_than_supported
from ..states import BY_NAME, LIST, ZSET
from ..text import MAX_SAFE_INTEGER, to_text
from .bullmq_scripts import SCRIPTS_VERSION, bullmq_source, lua_script

DRAIN = lua_script(bullmq_source("drain-5.lua"))
OBLITERATE = lua_script(bullmq_source("obliterate-2.lua"))
OBLITERATE_BATCH = 1000  # Node's default ``count`` per call

# What the settings page counts, in the order it shows them: (name, key suffix, LIST or ZSET).
COUNTED = (
    *(
        (name, BY_NAME[name].key, BY_NAME[name].structure)
        for name in ("waiting", "active", "paused", "prioritized", "delayed", "waiting-children", "completed", "failed")
    ),
    ("schedulers", "repeat", ZSET),
)


def _int(value) -> int | None:
    try:
        return int(to_text(value))
    except (TypeError, ValueError):
        return None


def read_settings(client: redis.Redis, *, queue: QueueRef) -> QueueSettings:
    """Plain reads: the meta fields, the limiter key (as BullMQ's getRateLimitTtl reads it) and
    the size of each state."""
    pipe = client.pipeline(transaction=False)
    pipe.hmget(queue.key("meta"), ["concurrency", "max", "duration", "paused", "version"])
    pipe.get(queue.key("limiter"))
    pipe.pttl(queue.key("limiter"))
    for _label, suffix, kind in COUNTED:
        (pipe.llen if kind == LIST else pipe.zcard)(queue.key(suffix))
    (concurrency, rate_max, duration, paused, version), limiter, pttl, *sizes = pipe.execute()
    recorded = to_text(version) if version is not None else None
    rate_max = _int(rate_max)
    used = _int(limiter) or 0
    limited = limited_for_ms(pttl, used, rate_max)
    return QueueSettings(
        concurrency=_int(concurrency),
        rate_max=rate_max,
        rate_duration_ms=_int(duration),
        limited_for_ms=int(limited),
        paused=paused is not None,
        counts={name: int(n) for (name, _, _), n in zip(COUNTED, sizes)},
        recorded_release=recorded,
        release_unsupported=newer_than_supported(recorded, SCRIPTS_VERSION),
    )


def set_global_concurrency(client: redis.Redis, *, queue: QueueRef, concurrency: int | None) -> None:
    """``Queue.setGlobalConcurrency(n)``, or ``removeGlobalConcurrency()`` for ``None``."""
    if concurrency is None:
        client.hdel(queue.key("meta"), "concurrency")
    elif concurrency < 1:
        raise SettingRefused(_("Global concurrency must be 1 or more (remove it for no limit)."))
    else:
        client.hset(queue.key("meta"), "concurrency", concurrency)


def set_global_rate_limit(
    client: redis.Redis, *, queue: QueueRef, max_jobs: int | None, duration_ms: int | None = None
) -> None:
    """``Queue.setGlobalRateLimit(max, duration)``, or ``removeGlobalRateLimit()`` for ``None``."""
    if max_jobs is None:
        client.hdel(queue.key("meta"), "max", "duration")
        return
    if max_jobs < 1 or not duration_ms or duration_ms < 1:
        raise SettingRefused(_("A rate limit needs at least 1 job per at least 1 ms."))
    client.hset(queue.key("meta"), mapping={"max": max_jobs, "duration": duration_ms})


def rate_limit_for(client: redis.Redis, *, queue: QueueRef, ms: int) -> None:
    """``Queue.rateLimit(ms)``: the limiter key set to MAX_SAFE_INTEGER for ``ms``, so no worker
    starts a job until it expires (or ``removeRateLimitKey`` lifts it)."""
    if ms < 1:
        raise SettingRefused(_("A rate-limit window lasts at least 1 ms."))
    client.set(queue.key("limiter"), MAX_SAFE_INTEGER, px=ms)


def remove_rate_limit_key(client: redis.Redis, *, queue: QueueRef) -> bool:
    """``Queue.removeRateLimitKey()``: workers stop waiting out the current limit. True if there was one."""
    return bool(client.delete(queue.key("limiter")))


def drain(client: redis.Redis, *, queue: QueueRef, delayed: bool) -> int:
    """``Queue.drain(delayed)``: removes waiting and prioritized jobs (and delayed ones when
    asked), never active, finished or a scheduler's next iteration. Returns how many went."""
    before = read_settings(client, queue=queue).counts
    keys = [queue.key(k) for k in ("wait", "paused", "delayed", "prioritized", "repeat")]
    DRAIN(keys=keys, args=[queue.base, "1" if delayed else "0"], client=client)
    after = read_settings(client, queue=queue).counts
    return sum(before[s] - after[s] for s in ("waiting", "paused", "prioritized", "delayed"))


def obliterate(client: redis.Redis, *, queue: QueueRef) -> None:
    """``Queue.obliterate()`` on a paused queue: every key of the queue is deleted, in batches
    of 1000 jobs, as Node loops. Refused if the queue is not paused or has active jobs."""
    keys = [queue.key("meta"), queue.base]
    while True:
        cursor = int(OBLITERATE(keys=keys, args=[OBLITERATE_BATCH, ""], client=client) or 0)
        if cursor == -1:
            raise SettingRefused(
                _("Queue {name} is not paused: pause it first, so no worker takes new jobs.", name=queue.name)
            )
        if cursor == -2:
            raise SettingRefused(
                _(
                    "Queue {name} has active jobs: wait for them to finish (the queue is paused, "
                    "so no new ones start), then obliterate.",
                    name=queue.name,
                )
            )
        if cursor == 0:
            return
