"""What an audit row keeps of the details it is given: enough to say what was done, never
megabytes. A row is written for every attempt and the log page shows fifty at a time, so a
value as big as the patch that was applied (or the data before and after an edit) would make
the table, the page and the CSV export grow with it.

A value larger than ``MAX_OBJECT`` characters (of JSON, for an object or array) is kept as its
size, its SHA-256 and an excerpt (``summary``); a shorter string is cut at ``MAX_TEXT``
characters (saying how many were left out); a list of strings (a diff, ids) keeps its first
lines, each cut so, up to ``MAX_LINES`` characters. The row's own containers (the details,
their ``change``) keep their shape, so the log page reads them as before."""

from __future__ import annotations

import hashlib
import json
from typing import Any

MAX_TEXT = 500  # characters of one string
MAX_OBJECT = 4096  # characters of JSON of one object or array kept as it is
MAX_LINES = 32_000  # characters of a list of strings (a diff, ids) kept, all lines together
CONTAINERS = frozenset({"change"})  # detail keys whose value is a container of details, not a value


def bounded(details: dict) -> dict:
    return {key: _container(value) if key in CONTAINERS else _value(value) for key, value in details.items()}


def _container(value: Any) -> Any:
    return {key: _value(item) for key, item in value.items()} if isinstance(value, dict) else _value(value)


def _value(value: Any) -> Any:
    if isinstance(value, str):
        return _text(value) if len(value) <= MAX_OBJECT else summary(value)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return _lines(value)
    if isinstance(value, (dict, list)):
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
        return value if len(text) <= MAX_OBJECT else summary(text)
    return value


def summary(text: str) -> dict:
    """A big value as JSON text: how big, which (a digest to compare with), and how it starts."""
    data = text.encode("utf-8", "surrogatepass")
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(), "excerpt": _text(text)}


def _text(text: str) -> str:
    return text if len(text) <= MAX_TEXT else f"{text[:MAX_TEXT]}… [+{len(text) - MAX_TEXT}]"


def _lines(lines: list[str]) -> list[str]:
    kept, used = [], 0
    for n, line in enumerate(lines):
        line = _text(line)
        used += len(line)
        if used > MAX_LINES:
            kept.append(f"… [+{len(lines) - n}]")  # the lines left out
            break
        kept.append(line)
    return kept
