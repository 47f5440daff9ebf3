"""Numbers in the plain words of a check's summary (sizes, job counts, ages)."""

from __future__ import annotations

from ..messages import Message, _


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def count_jobs(n: int) -> str:
    return _("1 job") if n == 1 else _("{n} jobs", n=n)


def format_age(ms: int | None) -> str:
    if ms is None:
        return _("unknown")
    s = ms / 1000
    for size, unit in ((86400, _("{n} d")), (3600, _("{n} h")), (60, _("{n} min"))):
        if s >= size:
            return Message(unit.msgid, n=f"{s / size:.1f}")
    return _("{n} s", n=f"{s:.0f}")
