"""Turning Redis bytes into display-safe text.

The monitored Redis is written by other programs, so every value may be missing, binary, or
not valid UTF-8. We decode with replacement characters rather than raising: a page must
render whatever a producer stored.
"""

from __future__ import annotations


def to_text(value: bytes | str | None, default: str = "") -> str:
    if value is None:
        return default
    if isinstance(value, str):
        return value
    return value.decode("utf-8", errors="replace")


def to_int(value: bytes | str | None, default: int | None = None) -> int | None:
    """Parse an integer field; BullMQ stores numbers as strings, some producers as floats."""
    if value is None or value == b"" or value == "":
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return default


def first_line(value: str, limit: int = 200) -> str:
    line = value.split("\n", 1)[0]
    return line if len(line) <= limit else line[: limit - 1] + "…"
