"""Finding every queue under a prefix.

BullMQ keeps no registry of queues. Nearly every queue has ``<prefix>:<queue>:meta`` (written
by the Node Queue constructor and by every add script), but not all: a queue that Python bullmq
(whose constructor writes nothing) has only paused and resumed has no meta left (resume deletes
its ``paused`` field, the hash's only one) and only its ``events`` stream. So we SCAN — never
KEYS, which blocks Redis — for either, with one pattern (``QUEUE_KEYS_GLOB``: the suffixes
``:meta`` and ``:events``, told apart exactly afterwards) and without ``TYPE`` (a hash and a
stream). Both keys go when a queue is obliterated.

Names with ``:``. Node BullMQ refuses them but Python BullMQ accepts them, so ``bull:a:b:meta``
is either the meta of queue ``a:b`` or the hash of job ``b:meta`` of queue ``a`` (job ids may
contain ``:``; scheduler keys ``repeat:<id>`` too). The contents tell them apart: every queue's
meta carries ``opts.maxLenEvents`` (the Node Queue constructor and every add script write it,
through ``getOrSetMaxEvents``), and no BullMQ script writes that field into a job or scheduler
hash. So a name is accepted if its ``meta`` is a hash — with that field when the name has ``:`` — or its
``events`` key a stream with entries (only BullMQ's events stream is a stream). The scan has no
``TYPE`` filter (it looks for a hash and a stream), so each name met for the first time is checked
once: a pipelined ``EXISTS``, ``HEXISTS`` and ``XREVRANGE … COUNT 1`` (all in the read-only ACL of
docs/operations.md; new queues are rare).
"""

from __future__ import annotations

import re

import redis

GLOB_SPECIAL = re.compile(r"([\\*?\[\]^])")


def glob_escape(text: str) -> str:
    """Escape Redis glob metacharacters so a prefix like ``app[1]`` matches literally.
    Braces are not special in Redis globs, so ``{bull}`` passes through unchanged."""
    return GLOB_SPECIAL.sub(r"\\\1", text)


# ``meta`` and ``events`` share the shape m|e, e|v, t|e, a|n; what else matches is dropped by
# ``queue_name_of``.
QUEUE_KEYS_GLOB = ":*:[me][ev][te][an]*"
QUEUE_KEY_SUFFIXES = (b":meta", b":events")


def queue_name_of(key: bytes, head: bytes) -> str | None:
    """The queue a ``<prefix>:<queue>:meta`` or ``…:events`` key belongs to (``head`` is
    ``<prefix>:``), or ``None`` for any other key."""
    if not key.startswith(head):
        return None
    for tail in QUEUE_KEY_SUFFIXES:
        if key.endswith(tail) and len(key) > len(head) + len(tail):
            return key[len(head) : -len(tail)].decode("utf-8", errors="replace")
    return None


def discover_queue_names(client: redis.Redis, prefix: str, *, scan_count: int = 1000) -> list[str]:
    head = f"{prefix}:".encode()
    pattern = glob_escape(prefix) + QUEUE_KEYS_GLOB
    names = {n for key in client.scan_iter(match=pattern, count=scan_count) if (n := queue_name_of(key, head))}
    return sorted(names - not_queues(client, prefix, sorted(names)))


QUEUE_META_FIELD = "opts.maxLenEvents"


def not_queues(client: redis.Redis, prefix: str, candidates: list[str]) -> set[str]:
    """Of these names met by the scan, those that are not queues: a queue's ``meta`` is a hash
    (with ``QUEUE_META_FIELD`` when the name has ``:``) or its ``events`` a stream with entries.
    Three pipelined reads per name, asked once per name met (see the module's docstring)."""
    if not candidates:
        return set()
    pipe = client.pipeline(transaction=False)
    for name in candidates:
        pipe.exists(f"{prefix}:{name}:meta")
        pipe.hexists(f"{prefix}:{name}:meta", QUEUE_META_FIELD)  # WRONGTYPE: not a hash
        pipe.xrevrange(f"{prefix}:{name}:events", count=1)  # WRONGTYPE: not a stream
    replies = pipe.execute(raise_on_error=False)
    rejected = set()
    for i, name in enumerate(candidates):
        meta_exists, has_field, last_event = replies[3 * i : 3 * i + 3]
        meta_hash = meta_exists == 1 and not isinstance(has_field, Exception)
        events = isinstance(last_event, list) and bool(last_event)
        if ":" in name:
            meta_hash = meta_hash and has_field is True  # bull:a:b:meta may be job b:meta of queue a
        if not (meta_hash or events):
            rejected.add(name)
    return rejected
