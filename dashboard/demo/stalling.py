"""The stalling worker, on its own thread and event loop.

A processor that blocks its event loop blocks every worker on that loop, so the worker that
stalls on purpose cannot share the main one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
import time

from bullmq import Worker

from .processors import process_thumbnail
from .runtime import Stats, close_worker, is_final_failure
from .scenario import (
    FIRST_STALL_AFTER_S,
    KEEP_OPTS,
    STALL_BLOCK_S,
    STALL_CHECK_MS,
    STALL_EVERY_S,
    STALL_LOCK_MS,
    STALL_QUEUE,
)

log = logging.getLogger("queuewatch.demo")


class StallingWorkerThread:
    """A worker on STALL_QUEUE with a short lock that, now and then, blocks its event loop
    (a synchronous wait inside an async processor, like a CPU-bound decode would) for longer
    than its lock lasts. The other workers' stalled checks then requeue the job with ``stc``
    incremented, and when the block ends this worker finds its lock gone."""

    def __init__(self, redis_url: str, prefix: str, stats: Stats):
        self.redis_url = redis_url
        self.prefix = prefix
        self.stats = stats
        self._thread = threading.Thread(target=self._thread_main, name="demo-stalling-worker", daemon=True)
        self._interrupt = threading.Event()  # ends a block early on shutdown
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._next_stall = time.monotonic() + FIRST_STALL_AFTER_S
        self._stalled_jobs: set[str] = set()

    def start(self) -> None:
        self._thread.start()

    def request_stop(self) -> None:
        self._interrupt.set()
        if self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):  # loop already closed
                self._loop.call_soon_threadsafe(self._stop.set)

    async def join(self) -> None:
        while self._thread.is_alive():
            await asyncio.sleep(0.05)

    def _thread_main(self) -> None:
        try:
            asyncio.run(self._main())
        except Exception:
            log.exception("stalling worker thread crashed")

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        if self._interrupt.is_set():  # stop requested before we got here
            self._stop.set()
        worker = Worker(
            STALL_QUEUE,
            self._process,
            {
                "connection": self.redis_url,
                "prefix": self.prefix,
                "name": f"{STALL_QUEUE}-flaky",
                "concurrency": 1,
                "lockDuration": STALL_LOCK_MS,
                "stalledInterval": STALL_CHECK_MS,
                "autorun": False,
                **KEEP_OPTS,
            },
        )
        worker.on("completed", lambda job, result: self.stats.incr("completed"))
        worker.on("failed", self._on_failed)
        worker.on("error", self._on_error)
        runner = asyncio.ensure_future(worker.run())
        try:
            await self._stop.wait()
        finally:
            await close_worker(worker, runner)

    def _on_failed(self, job, err) -> None:
        self.stats.incr("failed" if is_final_failure(job, err) else "retried")

    def _on_error(self, err, job=None) -> None:
        job_id = getattr(job, "id", None)
        if job_id in self._stalled_jobs or "lock" in str(err).lower():
            # Expected after a stall: the job was requeued while we were blocked, so our
            # lock is gone and completing or failing the job is refused.
            log.info("%s-flaky worker, after its stall: %s", STALL_QUEUE, err)
        else:
            log.warning("%s-flaky worker error: %s", STALL_QUEUE, err)

    async def _process(self, job, token):
        now = time.monotonic()
        if now >= self._next_stall and not self._interrupt.is_set() and job.name == "resize":
            self._next_stall = now + random.uniform(*STALL_EVERY_S)
            self._stalled_jobs.add(job.id)
            self.stats.incr("stall-blocks")
            log.info(
                "%s job %s: blocking the flaky worker's event loop for %.0f s (lock is %d ms) so the job stalls",
                STALL_QUEUE,
                job.id,
                STALL_BLOCK_S,
                STALL_LOCK_MS,
            )
            await job.log("flaky worker: decoding a huge TIFF synchronously; the event loop is blocked")
            self._interrupt.wait(STALL_BLOCK_S)  # deliberately blocks this thread's event loop
            return {"note": "finished after the lock expired; the job was already requeued"}
        return await process_thumbnail(job, token)
