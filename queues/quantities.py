"""How numbers and durations read: the rules and the unit words, in one home.

Framework-free so that what ``queues/`` writes (a health finding's "the oldest finished 3 h
12 min ago") reads exactly like the dashboard's pages, live swaps, charts and emails: the
dashboard's formatters (``dashboard/web/formatting.py``) and the browser's
(``static/queuewatch.js``, fed these words by ``{% format_rules %}``) follow the same steps.
Digits are Latin in every language, with "," between thousands and "." before decimals, as in
ids and JSON. The words are the glossary's abbreviations, which take no plural; each is a marked
message with a ``{n}`` placeholder, translated at the edge.
"""

from __future__ import annotations

import math
import re

from .messages import Joined, Message, _

UNIT_WORDS: dict[str, Message] = {
    "ms": _("{n} ms"),
    "s": _("{n} s"),
    "min": _("{n} min"),
    "h": _("{n} h"),
    "d": _("{n} d"),
    "/min": _("{n}/min"),
}


def rounded(value: float, decimals: int) -> tuple[int, str]:
    """``|value|`` rounded half up: the whole part and the decimals (no trailing zeros). The same
    float operations as the JS, so both round alike."""
    scale = 10**decimals
    whole, fraction = divmod(math.floor(abs(value) * scale + 0.5), scale)
    return whole, str(fraction).rjust(decimals, "0").rstrip("0") if decimals else ""


def plain_number(value: float, *, decimals: int = 1) -> str:
    """A finite number with thousands separators and at most ``decimals`` decimals."""
    sign = "-" if value < 0 else ""
    whole, fraction = rounded(value, decimals)
    if not whole and not fraction:
        sign = ""
    return f"{sign}{whole:,}" + (f".{fraction}" if fraction else "")


def duration_parts(seconds: float) -> list[tuple[str, str]] | None:
    """A duration in the largest sensible units, as (unit, number) pairs: 420 ms, 4.2 s, 59 s,
    1 min 1 s, 12 min, 1 h 5 min, 3 d 4 h. Negative durations (clocks apart) read as zero;
    ``None`` for a duration that is not a number."""
    s = max(0.0, float(seconds))
    if not math.isfinite(s):
        return None
    if s == 0:
        return [("s", "0")]
    if s < 1:
        return [("ms", plain_number(s * 1000, decimals=1 if s < 0.01 else 0))]
    if s < 60:
        return [("s", plain_number(s, decimals=1) if s < 10 else str(math.floor(s)))]
    minutes, sec = divmod(math.floor(s), 60)
    if minutes < 60:
        return [("min", str(minutes))] + ([("s", str(sec))] if minutes < 10 and sec else [])
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return [("h", str(hours))] + ([("min", str(minutes))] if minutes else [])
    days, hours = divmod(hours, 24)
    return [("d", plain_number(days))] + ([("h", str(hours))] if hours else [])


def unit_message(unit: str, number: str) -> Message:
    return Message(UNIT_WORDS[unit].msgid, n=number)


def duration_message(seconds: float) -> Joined | str:
    """A duration as marked messages (translated where it is shown); "—" for not a number."""
    parts = duration_parts(seconds)
    if parts is None:
        return "—"
    return Joined([unit_message(unit, number) for unit, number in parts], " ")


_DURATION_TEXT = re.compile(r"(\d[\d,]*(?:\.\d+)?) (ms|s|min|h|d)(?: (\d+) (s|min|h))?")


def duration_from_text(text: str):
    """A duration as the English rules wrote it ("3 min 4 s", "184 s"), made its marked messages
    again so that it reads in any language; any other text unchanged."""
    match = _DURATION_TEXT.fullmatch(text) if isinstance(text, str) else None
    if not match:
        return text
    number, unit, number2, unit2 = match.groups()
    parts = [unit_message(unit, number)] + ([unit_message(unit2, number2)] if number2 else [])
    return Joined(parts, " ")
