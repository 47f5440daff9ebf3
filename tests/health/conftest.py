"""Fixtures of the health-check and /metrics tests."""

import pytest

from tests.support.health import make_queue


@pytest.fixture
def followed_queues(live_setup):
    """Queues that exist before the monitor starts, so it follows their streams from the start."""
    for name in ("stalls", "calm", "dupq", "uniq", "dupkinds"):
        make_queue(live_setup, name)
    return live_setup
