"""Turning Redis bytes into display-safe text and numbers.

The monitored Redis is written by other programs, so every value may be missing, binary, or
not valid UTF-8, and a "number" may be ``1e400``, ``inf`` or ``Infinity``. We decode with
replacement characters and treat numbers we cannot represent as unreadable rather than
raising: a page must render whatever a producer stored.
"""

from __future__ import annotations

import math
from typing import overload

# The last instant a datetime can show (9999-12-31T23:59:59.999Z): a "timestamp" beyond it
# (or before the epoch) cannot be displayed, so it is as unreadable as a non-number.
MAX_TIMESTAMP_MS = 253_402_300_799_999

# The largest integer a JavaScript number holds exactly (``Number.MAX_SAFE_INTEGER``): BullMQ's
# numbers are JavaScript numbers, so one beyond it was not written by BullMQ and will not be read
# back by it as written. The one cap on integers, read or accepted.
MAX_SAFE_INTEGER = 2**53 - 1


def to_text(value: bytes | str | None, default: str = "") -> str:
    if value is None:
        return default
    if isinstance(value, str):
        return value
    return value.decode("utf-8", errors="replace")


@overload
def to_int(value: bytes | str | float | None, default: int) -> int: ...


@overload
def to_int(value: bytes | str | float | None, default: None = None) -> int | None: ...


def to_int(value: bytes | str | float | None, default: int | None = None) -> int | None:
    """Parse an integer field; BullMQ stores numbers as strings, some producers as floats.
    Non-finite values (``inf``, ``1e400``, ``NaN``) and non-numbers give ``default``."""
    if value is None or value == b"" or value == "":
        return default
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        try:
            number = float(value)
        except (TypeError, ValueError):
            return default
        return int(number) if math.isfinite(number) else default


def to_safe_int(value: bytes | str | float | None) -> int | None:
    """``to_int``, or ``None`` for an integer beyond ``MAX_SAFE_INTEGER`` either way (``1`` and
    400 zeros parses, but no float, duration or JavaScript reader holds it)."""
    number = to_int(value)
    return number if number is not None and abs(number) <= MAX_SAFE_INTEGER else None


def to_ms(value: bytes | str | float | None) -> int | None:
    """A millisecond timestamp, or ``None`` if missing or not a time we can show."""
    ms = to_int(value)
    return ms if ms is not None and 0 <= ms <= MAX_TIMESTAMP_MS else None


def finite(value: float | None) -> float | None:
    """A sorted-set score or parsed float, or ``None`` if it is infinite or NaN."""
    return value if value is not None and math.isfinite(value) else None


def first_line(value: str, limit: int = 200) -> str:
    line = value.split("\n", 1)[0]
    return line if len(line) <= limit else line[: limit - 1] + "…"
