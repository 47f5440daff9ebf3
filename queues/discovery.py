"""Finding every queue under a prefix.

BullMQ keeps no registry of queues. The one key every queue ends up with is
``<prefix>:<queue>:meta`` (written by the Node Queue constructor and by every add script), so we
SCAN for it — never KEYS, which blocks Redis — and accept names without ``:`` (queue names
cannot contain one; a longer match is a job id or a scheduler key).
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
    return sorted(names)


def _names(keys, head: bytes, tail: bytes):
    for key in keys:
        if not (key.startswith(head) and key.endswith(tail)):
            continue
        raw = key[len(head) : -len(tail)]
        if raw and b":" not in raw:
            yield raw.decode("utf-8", errors="replace")
