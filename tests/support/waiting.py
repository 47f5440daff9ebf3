"""Waiting on conditions instead of sleeping: a test says what it waits for and how long it is
willing to wait, and fails with what it saw when the condition never holds."""

from __future__ import annotations

import time


def wait_for(predicate, timeout=15.0, interval=0.1):
    """Poll ``predicate`` until it returns something truthy; return that value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not met in time")


async def async_wait_for(predicate, timeout=15.0, interval=0.1):
    """``wait_for`` inside an event loop: polls without blocking the loop."""
    import asyncio

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        await asyncio.sleep(interval)
    raise AssertionError("condition not met in time")


async def receive_until(comm, predicate, timeout=15.0):
    """Receive websocket fragments until one satisfies ``predicate``; return it (fails on timeout)."""
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        try:
            html = await comm.receive_from(timeout=max(0.1, deadline - time.monotonic()))
        except Exception as exc:  # a timeout, or the socket closed (say which: its close code)
            ended = repr(exc)
            break
        seen.append(html)
        if predicate(html):
            return html
    else:
        ended = "the deadline"
    raise AssertionError(f"no matching fragment within {timeout}s (ended by {ended}); got {len(seen)}: {seen[-3:]}")
