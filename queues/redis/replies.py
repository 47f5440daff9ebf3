"""Redis replies with the types they have here.

redis-py types every reply as ``bytes | str`` (it cannot know ``decode_responses``) and a ranged
read ``withscores=True`` as a list that may hold either members or pairs. Every client
Queuewatch makes returns bytes (``decode_responses=False``, see ``queues.sources.redis_node``),
so these say so once, for the type checker, instead of each reader narrowing on its own. They
change nothing at run time.
"""

from __future__ import annotations

from typing import Any, cast


def members(reply: Any) -> list[bytes]:
    """A list of members or elements (``ZRANGE`` without scores, ``LRANGE``, ``SMEMBERS``)."""
    return cast(list[bytes], reply)


def scored(reply: Any) -> list[tuple[bytes, float]]:
    """A ranged read ``withscores=True``: (member, score) pairs."""
    return cast(list[tuple[bytes, float]], reply)


def value(reply: Any) -> bytes | None:
    """One string value (``GET``, ``HGET``): ``None`` when missing."""
    return cast("bytes | None", reply)


def fields(reply: Any) -> dict[bytes, bytes]:
    """A hash (``HGETALL``)."""
    return cast(dict[bytes, bytes], reply)


def stream_read(reply: Any) -> list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]]:
    """``XREAD``: per stream key, its (entry id, fields) entries; empty when nothing came."""
    return cast(list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]], reply or [])
