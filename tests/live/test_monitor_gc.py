"""``manage.py monitor`` collects garbage less often than Python's defaults (see
``dashboard.monitor.gc_tuning``: at 10,000 queues, full collections were a quarter of a core)."""

from __future__ import annotations

import gc
import signal

import pytest
from django.core.management import call_command

from dashboard.monitor import loop
from dashboard.monitor.gc_tuning import MONITOR_GC_THRESHOLDS


@pytest.mark.django_db
def test_the_monitor_command_sets_its_collection_thresholds_before_it_runs(private_redis, monkeypatch):
    seen = []
    monkeypatch.setattr(loop.Monitor, "run", lambda self, stop: seen.append(gc.get_threshold()))
    before = gc.get_threshold()
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        assert before != MONITOR_GC_THRESHOLDS
        call_command("monitor", "--name", "gc-test")
        assert seen == [MONITOR_GC_THRESHOLDS]
    finally:
        gc.set_threshold(*before)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
