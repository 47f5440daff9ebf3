"""JSON for the monitor's documents at 10,000 queues: orjson, several times as fast as ``json``
on the thousands of entries a tick writes and a reader of the whole state document parses, with
``json`` for what orjson refuses: a string with a lone surrogate (not UTF-8), an integer beyond
64 bits, ``NaN`` in a document a caller built. Dict keys may be numbers (a rate's windows), as
``json`` allows."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import orjson


def dumps(value: Any) -> str:
    """``value`` as JSON; dataclasses as their fields (as orjson writes them)."""
    return dumps_bytes(value).decode("utf-8", "surrogatepass")


def dumps_bytes(value: Any) -> bytes:
    """``dumps`` as UTF-8 bytes, without a copy in a ``str`` (a document of megabytes)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:  # json.dumps escapes what orjson refuses: ASCII
        return json.dumps(value, default=_fields_of_dataclass).encode()


def _fields_of_dataclass(value: Any) -> dict:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def loads(text: str | bytes) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)
