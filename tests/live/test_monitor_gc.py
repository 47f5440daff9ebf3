"""``manage.py monitor`` collects garbage less often than Python's defaults, and hands freed
memory back after its largest step (see ``dashboard.monitor.gc_tuning``: at 10,000 queues, full
collections were a quarter of a core, and a health run left its peak in the RSS)."""

from __future__ import annotations

import gc
import json
import signal
import subprocess
import sys
import types

import pytest
from django.core.management import call_command

from dashboard.monitor import loop, periodic
from dashboard.monitor.gc_tuning import MONITOR_GC_THRESHOLDS
from tests.support.servers import ROOT


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


def test_freed_memory_is_handed_back_to_the_system():
    """What malloc keeps after a large step frees its objects goes back to the system: 200 MB
    of 2 kB blocks freed (one block allocated after them, so the heap's top cannot shrink by
    itself) leave the RSS high until ``give_back_freed_memory``. In a process of its own: this
    one's heap is the suite's."""
    script = """
import json
from dashboard.monitor.gc_tuning import give_back_freed_memory

def rss_mib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024

blocks = [bytes(2000) for _ in range(100_000)]
pinned = bytes(2000)
del blocks
freed = rss_mib()
give_back_freed_memory()
print(json.dumps([freed, rss_mib()]))
"""
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    freed, trimmed = json.loads(out.stdout)
    assert freed - trimmed > 150, (freed, trimmed)


def test_a_health_run_hands_its_memory_back_also_when_it_fails(monkeypatch):
    handed_back = []
    monkeypatch.setattr(periodic, "give_back_freed_memory", lambda: handed_back.append(True))

    def failing_run(**_):
        raise RuntimeError("the dashboard Redis went away")

    monkeypatch.setattr(periodic.health_checks, "run_and_store", failing_run)
    steps = types.SimpleNamespace(name="gc-test", health_report=None)
    periodic.PeriodicSteps._check_health(steps, {})
    assert handed_back == [True] and steps.health_report is None
