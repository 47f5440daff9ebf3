"""The monitor process's garbage collection. A monitor of 10,000 queues holds hundreds of
thousands of long-lived objects (each queue's minutes, figures, timings), and every refresh
makes short-lived ones that live about a second, long enough to reach the oldest generation.
With Python's default thresholds (700, 10, 10) its full collections then walked the whole heap
about every 4 s, up to 1 s each with every thread stopped: a quarter of a core, and ticks that
late (bench/many_queues.py, ``gc_gen2``). Collecting the youngest generation every 50,000
allocations instead of 700 lets those objects die young (by reference counting, which frees
almost everything here; the collector only finds cycles), and full collections become rare."""

from __future__ import annotations

import gc

MONITOR_GC_THRESHOLDS = (50_000, 20, 100)


def tune_for_the_monitor() -> None:
    """Set the monitor process's collection thresholds (``manage.py monitor`` calls it first)."""
    gc.set_threshold(*MONITOR_GC_THRESHOLDS)
