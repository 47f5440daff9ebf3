"""What the toolbox interop tests share: a redis-server of their own (each test compares whole
key sets with what Node BullMQ leaves, so nothing else may write there), queue references and
the Node side (tests/node/toolbox.mjs)."""

from __future__ import annotations

import pytest

from queues.keys import QueueRef
from tests.support.servers import RedisServer, run_node


@pytest.fixture(scope="module")
def server():
    server = RedisServer()
    yield server
    server.stop()


@pytest.fixture
def r(server):
    client = server.client(0)
    client.flushdb()
    yield client
    client.close()


def q(name: str) -> QueueRef:
    return QueueRef("default", "bull", name)


def node(server, mode: str, *args) -> dict:
    """Run ``toolbox.mjs <mode> <url> <args…>`` against ``server``: Node BullMQ's own answer."""
    return run_node("toolbox.mjs", mode, server.url(0), *args)
