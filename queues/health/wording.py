"""Numbers in the plain words of a check's summary (sizes, job counts, ages)."""

from __future__ import annotations

from ..messages import Message, _
from ..quantities import duration_message

# Byte sizes in binary units, each a marked message so the reader's language names the unit.
BYTE_UNITS = (_("{n} B"), _("{n} KiB"), _("{n} MiB"), _("{n} GiB"))


def format_bytes(n: float) -> Message:
    """A size in the largest unit that keeps the number under 1024 (whole bytes, else one decimal)."""
    for i, unit in enumerate(BYTE_UNITS):
        if abs(n) < 1024 or i == len(BYTE_UNITS) - 1:
            return Message(unit.msgid, n=f"{n:.0f}" if i == 0 else f"{n:.1f}")
        n /= 1024
    raise AssertionError("unreachable: the last unit always answers")


def count_jobs(n: int) -> str:
    return _("1 job") if n == 1 else _("{n} jobs", n=n)


def format_age(ms: int | None) -> str:
    """An age in the words and rules of every duration Queuewatch shows (``queues.quantities``)."""
    if ms is None:
        return _("unknown")
    return duration_message(ms / 1000)
