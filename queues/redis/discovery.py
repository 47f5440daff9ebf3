"""Finding every queue under a prefix.

BullMQ keeps no registry of queues. The one key every queue ends up with is
``<prefix>:<queue>:meta`` (written by the Node Queue constructor and by every add script), so we
SCAN for it — never KEYS, which blocks Redis.

Names with ``:``. Node BullMQ refuses them but Python BullMQ accepts them, so ``bull:a:b:meta``
is either the meta of queue ``a:b`` or the hash of job ``b:meta`` of queue ``a`` (job ids may
contain ``:``; scheduler keys ``repeat:<id>`` too). The contents tell them apart: every queue's
meta carries ``opts.maxLenEvents`` (the Node Queue constructor and every add script write it,
through ``getOrSetMaxEvents``), and no BullMQ script writes that field into a job or scheduler
hash. So a name without ``:`` is accepted as before, and a name with ``:`` only if its hash has
that field: one pipelined ``HEXISTS`` per such candidate, which are rare.
"""

from __future__ import annotations

import re

import redis

GLOB_SPECIAL = re.compile(r"([\\*?\[\]^])")


def glob_escape(text: str) -> str:
    """Escape Redis glob metacharacters so a prefix like ``app[1]`` matches literally.
    Braces are not special in Redis globs, so ``{bull}`` passes through unchanged."""
    return GLOB_SPECIAL.sub(r"\\\1", text)


def discover_queue_names(client: redis.Redis, prefix: str, *, scan_count: int = 1000) -> list[str]:
    head = f"{prefix}:".encode()
    tail = b":meta"
    pattern = glob_escape(prefix) + ":*:meta"
    names = set()
    try:
        keys = client.scan_iter(match=pattern, count=scan_count, _type="hash")
        names.update(_names(keys, head, tail))
    except redis.ResponseError:
        # SCAN ... TYPE needs Redis >= 6.0; older servers get the unfiltered scan.
        names.update(_names(client.scan_iter(match=pattern, count=scan_count), head, tail))
    return sorted(_with_colons_checked(client, names, prefix))


QUEUE_META_FIELD = "opts.maxLenEvents"


def _with_colons_checked(client: redis.Redis, names: set[str], prefix: str) -> set[str]:
    candidates = sorted(n for n in names if ":" in n)
    if not candidates:
        return names
    pipe = client.pipeline(transaction=False)
    for name in candidates:
        pipe.hexists(f"{prefix}:{name}:meta", QUEUE_META_FIELD)
    not_queues = {n for n, is_meta in zip(candidates, pipe.execute()) if not is_meta}
    return names - not_queues


def _names(keys, head: bytes, tail: bytes):
    for key in keys:
        if not (key.startswith(head) and key.endswith(tail)):
            continue
        raw = key[len(head) : -len(tail)]
        if raw:
            yield raw.decode("utf-8", errors="replace")
