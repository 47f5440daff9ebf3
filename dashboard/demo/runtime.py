"""Bookkeeping shared by the workers: counters, failure classification, an interruptible
sleep, and closing a worker safely despite bullmq 3.4.4's shutdown quirks."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading

from bullmq import UnrecoverableError, Worker


class Stats:
    """Counters shared with the stalling worker's thread."""

    def __init__(self):
        self._lock = threading.Lock()
        self._counts: collections.Counter[str] = collections.Counter()

    def incr(self, key: str, n: int = 1) -> None:
        with self._lock:
            self._counts[key] += n

    def line(self) -> str:
        with self._lock:
            c = dict(self._counts)
        keys = ("added", "completed", "retried", "failed", "dead-lettered", "stall-blocks", "stalled")
        return " ".join(f"{k}={c.get(k, 0)}" for k in keys)


def is_final_failure(job, err: BaseException) -> bool:
    """True when a failed attempt moved the job to ``failed`` (no retry left)."""
    if isinstance(err, UnrecoverableError):
        return True
    attempts = max(int(job.opts.get("attempts") or 1), 1)
    return job.attemptsMade >= attempts


async def wait_or_stop(stop: asyncio.Event, seconds: float) -> bool:
    """Sleep for ``seconds`` unless ``stop`` is set first; True if stopping."""
    if stop.is_set():
        return True
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=max(seconds, 0))
    return stop.is_set()


async def _until_idle(worker: Worker) -> None:
    """Until no job of a paused ``worker`` runs, counting one its run loop is about to start
    from a fetch that finished a moment ago (it does so on its next turn)."""
    while True:
        running = [task for task in list(worker.processing) if not task.done()]
        if running:
            await asyncio.gather(*running, return_exceptions=True)
            continue
        for _ in range(3):  # the run loop's turns
            await asyncio.sleep(0)
        if all(task.done() for task in list(worker.processing)):
            return


async def close_worker(worker: Worker, runner: asyncio.Future) -> None:
    """Close a worker started with ``autorun: False`` whose ``run()`` task is ``runner``.

    bullmq 3.4.4's ``Worker.close()`` waits for a snapshot of the worker's tasks: a job fetched
    by a ``getNextJob`` still in flight when close() starts is processed after close() (and even
    ``run()``) has returned, and its Redis calls silently reopen the closed connection, which
    then stays open; one whose call is in flight as close() closes the connection fails, and
    the job is left active. So: pause first (no new fetches) and wait until nothing runs, then
    close; and still wait for any leftover job, then close the connections again."""
    try:
        await worker.pause()
        await _until_idle(worker)
        await worker.close()
    finally:
        await asyncio.gather(runner, return_exceptions=True)
        leftovers = [task for task in list(worker.processing) if not task.done()]
        if leftovers:
            await asyncio.gather(*leftovers, return_exceptions=True)
        with contextlib.suppress(Exception):
            await worker.backend.close()
