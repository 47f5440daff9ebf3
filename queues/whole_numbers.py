"""Whole numbers an operator sends (a form field, an API body, a job's or a scheduler's
options): the one reader every such check goes through, with its bounds.

BullMQ's numbers are JavaScript numbers: an integer beyond 2⁵³−1 is not held exactly, and one
beyond a float is written by Lua as float text (``every`` of 2⁶² was stored as ``4.6116860184274e+18``,
which Node BullMQ reads as a few milliseconds). So every whole number is at most
``MAX_SAFE_INTEGER``, a duration at most ``MAX_DURATION_MS`` and a time at most
``MAX_TIMESTAMP_MS``, and anything else is refused with a message saying the bounds.

Framework-free: ``NotAWholeNumber`` carries a message meant for the user."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .messages import _
from .text import MAX_SAFE_INTEGER

# Ten years: longer than any delay, interval or time-to-live a queue sensibly waits, far below
# the safe-integer bound (a job's delayed score is its due time × 4096, which must stay exact).
MAX_DURATION_MS = 10 * 366 * 24 * 3600 * 1000
MAX_DURATION_S = MAX_DURATION_MS // 1000
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")


class NotAWholeNumber(ValueError):
    """Not a whole number within its bounds; the message says which and why."""


def _shown(value: Any) -> str:
    try:
        text = value if isinstance(value, str) else json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def whole_number(value: Any, name: str, *, low: int = 0, high: int = MAX_SAFE_INTEGER) -> int:
    """``value`` (an int or an integral float, as JSON gives them) as an int between ``low``
    and ``high``; ``NotAWholeNumber`` otherwise."""
    integral = isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())
    if isinstance(value, bool) or not integral:
        raise NotAWholeNumber(_("'{name}' must be a whole number, not {value}.", name=name, value=_shown(value)))
    number = int(value)
    if not low <= number <= high:
        raise NotAWholeNumber(_("'{name}' must be between {low} and {high}.", name=name, low=low, high=high))
    return number


def whole_number_text(text: str, name: str) -> int | None:
    """A form field's integer (``None`` when empty), for ``whole_number`` to bound. One with more
    digits than any bound has reads as just beyond ``MAX_SAFE_INTEGER`` (with its sign): out of
    every bound, and never handed to ``int()``, which refuses 4,300 digits and is slow before."""
    text = text.strip()
    if not text:
        return None
    if not _INTEGER_TEXT.fullmatch(text):
        raise NotAWholeNumber(_("'{name}' must be a whole number, not {value}.", name=name, value=_shown(text)))
    if len(text.lstrip("+-0")) > len(str(MAX_SAFE_INTEGER)):
        return -(MAX_SAFE_INTEGER + 1) if text.startswith("-") else MAX_SAFE_INTEGER + 1
    return int(text)
