"""The monitor process's garbage collection. A monitor of 10,000 queues holds hundreds of
thousands of long-lived objects (each queue's minutes, figures, timings), and every refresh
makes short-lived ones that live about a second, long enough to reach the oldest generation.
With Python's default thresholds (700, 10, 10) its full collections then walked the whole heap
about every 4 s, up to 1 s each with every thread stopped: a quarter of a core, and ticks that
late (bench/many_queues.py, ``gc_gen2``). Collecting the youngest generation every 50,000
allocations instead of 700 lets those objects die young (by reference counting, which frees
almost everything here; the collector only finds cycles), and full collections become rare.

Freed memory is not always given back: glibc's malloc keeps what a large short-lived step
freed (a health run at 10,000 queues peaks at some 200 MiB of objects) for later allocations,
and the process's RSS stays that much higher. ``give_back_freed_memory`` hands it back once
such a step is done."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc

MONITOR_GC_THRESHOLDS = (50_000, 20, 100)


def tune_for_the_monitor() -> None:
    """Set the monitor process's collection thresholds (``manage.py monitor`` calls it first)."""
    gc.set_threshold(*MONITOR_GC_THRESHOLDS)


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None where the C library has none (musl, macOS)."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def give_back_freed_memory() -> None:
    """Return the memory malloc holds free to the system (``malloc_trim(0)``: ~5-15 ms at 10,000
    queues, thread-safe); nothing where the C library has no such call."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
