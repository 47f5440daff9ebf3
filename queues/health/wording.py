"""Numbers in the plain words of a check's summary (sizes, job counts, ages)."""

from __future__ import annotations


def format_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def count_jobs(n: int) -> str:
    return f"{n} job" if n == 1 else f"{n} jobs"


def format_age(ms: int | None) -> str:
    if ms is None:
        return "unknown"
    s = ms / 1000
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if s >= size:
            return f"{s / size:.1f} {unit}"
    return f"{s:.0f} s"
