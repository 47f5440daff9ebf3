"""How many pytest-xdist workers run the suite, and running without pytest-xdist.

pyproject's addopts ask for ``--numprocesses=auto --dist=loadgroup``. Most of the suite's time is waiting
(Node, Chromium, monitor ticks), not CPU, so more workers than cores pay: ``auto`` means
``WORKERS`` below (``QW_TEST_WORKERS`` overrides it), except when every argument names a single
test (``path::test``), where starting workers would cost more than it saves: those run in the
pytest process itself. ``-n 0`` or ``-p no:xdist`` run everything serially. See
docs/testing.md."""

from __future__ import annotations

import os

import pytest

WORKERS = 3  # measured on 2 cores; more workers mostly added contention (docs/testing.md)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config) -> int:
    if os.environ.get("QW_TEST_WORKERS"):
        return int(os.environ["QW_TEST_WORKERS"])
    if config.args and all("::" in arg for arg in config.args):
        return 0
    return WORKERS


def pytest_addoption(parser, pluginmanager) -> None:
    """Without pytest-xdist (``-p no:xdist``, or not installed) the addopts' ``--numprocesses``
    and ``--dist`` are accepted and ignored: the run is serial, as asked."""
    if pluginmanager.has_plugin("xdist"):
        return
    group = parser.getgroup("xdist", "pytest-xdist is not loaded: these are ignored")
    group.addoption("--numprocesses", dest="numprocesses", default=None, help="ignored")
    group.addoption("--dist", dest="dist", default="no", help="ignored")


# Kill-and-restart and failover trials: each starts several processes and some assert how fast
# a standby takes over. Run on one worker, one after another, never two at once.
heavy_trial = pytest.mark.xdist_group("heavy")
