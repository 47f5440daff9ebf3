"""A realistic, never-ending BullMQ workload built with the Python ``bullmq`` package.

It exists so the dashboard has real data to show: several queues with steady adds, retries
with exponential backoff, real Python stack traces, ``UnrecoverableError`` failures, delayed
and prioritized jobs, a queue that stays paused while jobs keep arriving, job schedulers
(cron with a time zone, and ``every``), deduplicated adds, progress updates and job logs,
small parent/child flows, an occasional stalled job, and payment gateway outages that fill a
``payments-dlq`` dead-letter queue whose jobs complete when redriven.

Plain asyncio, no Django: the management command ``demo_workload`` is a thin wrapper.
This module starts and stops everything; the parts live beside it: ``scenario.py`` (queues,
options, rates, stall timing), ``fake_data.py``, ``processors.py`` (the job processors),
``producers.py`` (adds, bursts, flows, schedulers), ``runtime.py`` (counters, closing a worker)
and ``stalling.py`` (the worker that stalls on purpose).

Python ``bullmq`` 3.4.4 details that shaped this module:

* ``Worker(..., {"autorun": False})`` and running ``worker.run()`` in our own task, so the
  task can be awaited after ``worker.close()`` (with autorun the worker's run loop is a task
  nobody holds a reference to).
* Worker events are delivered synchronously by a tiny ``EventEmitter``; a listener that needs
  Redis (the dead-letter copy) has to start a task, which we track and await on shutdown.
* A processor that blocks its event loop blocks every worker on that loop, so the worker that
  stalls on purpose runs on its own event loop in its own thread.
* The stalled check is throttled per queue by the ``stalled-check`` key, whose TTL is the
  ``stalledInterval`` of whichever worker ran the check. Every worker on the stalling queue
  therefore uses the same short ``stalledInterval``; otherwise one worker with the 30 s
  default would hide the short interval of the other.
* ``Worker.close()`` can return while a job fetched during shutdown is still running, and
  that job reopens the closed connection (see ``runtime.close_worker``). And if its internal
  teardown task is cancelled (e.g. by ``asyncio.run()`` cleaning up after a KeyboardInterrupt),
  close() spins at 100 % CPU forever, so nothing here cancels a closing worker.
"""

from __future__ import annotations

import asyncio
import logging
import random

import redis.asyncio as aioredis
from bullmq import FlowProducer, Queue, Worker

from .processors import GATEWAY, PROCESSORS
from .producers import Producer
from .runtime import Stats, close_worker, is_final_failure, wait_or_stop
from .scenario import (
    DEFAULT_RATE,
    DLQ_CAP,
    DLQ_NAME,
    DLQ_SOURCE,
    JOB_DEFAULTS,
    KEEP_OPTS,
    OUTAGE_EVERY_S,
    OUTAGE_FIRST_AFTER_S,
    OUTAGE_S,
    PAUSED_QUEUE,
    QUEUE_NAMES,
    STALL_CHECK_MS,
    STALL_QUEUE,
    STATUS_EVERY_S,
    concurrency,
    dead_letter_of,
    dead_letters,
)
from .stalling import StallingWorkerThread

log = logging.getLogger("queuewatch.demo")

__all__ = ["DEFAULT_RATE", "DemoWorkloadError", "run_workload"]


class DemoWorkloadError(Exception):
    """Raised for problems the command should report without a traceback."""


class _Workload:
    """Starts the queues and workers, runs the producer until ``stop``, then shuts down."""

    def __init__(self, redis_url: str, prefix: str, stop: asyncio.Event, rate: float):
        self.redis_url = redis_url
        self.prefix = prefix
        self.stop = stop
        self.rate = rate
        self.stats = Stats()
        self.queues: dict[str, Queue] = {}
        self.dlq: Queue | None = None
        self.flow: FlowProducer | None = None
        self.workers: list[Worker] = []
        self.worker_tasks: list[asyncio.Future] = []
        self.background: set[asyncio.Future] = set()
        self.staller: StallingWorkerThread | None = None
        self.producer: Producer | None = None

    def _opts(self) -> dict:
        return {"connection": self.redis_url, "prefix": self.prefix}

    async def run(self) -> None:
        await self._check_redis()
        try:
            await self._start()
            log.info(
                "demo workload running: prefix %r, %.1f adds/s, queues %s (+%s); %s is paused",
                self.prefix,
                self.rate,
                ", ".join(QUEUE_NAMES),
                DLQ_NAME,
                PAUSED_QUEUE,
            )
            loops = [asyncio.ensure_future(self._status_loop()), asyncio.ensure_future(self._outage_loop())]
            try:
                await self.producer.run()
            finally:
                for loop in loops:
                    loop.cancel()
                await asyncio.gather(*loops, return_exceptions=True)
        finally:
            await self._shutdown()

    async def _check_redis(self) -> None:
        client = aioredis.from_url(self.redis_url, socket_connect_timeout=3, socket_timeout=5)
        try:
            await client.ping()
        except Exception as exc:
            raise DemoWorkloadError(f"cannot reach Redis: {exc}") from None
        finally:
            await client.aclose()

    async def _start(self) -> None:
        for name in QUEUE_NAMES:
            self.queues[name] = Queue(name, {**self._opts(), "defaultJobOptions": JOB_DEFAULTS})
        self.dlq = Queue(DLQ_NAME, {**self._opts(), "defaultJobOptions": KEEP_OPTS})
        self.flow = FlowProducer(opts=self._opts())
        self.producer = Producer(queues=self.queues, flow=self.flow, stats=self.stats, stop=self.stop, rate=self.rate)

        # Paused from the start; jobs keep arriving. (A worker is attached anyway, so resuming
        # it from the dashboard drains the backlog.)
        await self.queues[PAUSED_QUEUE].pause()
        await self.producer.upsert_schedulers()

        for name in QUEUE_NAMES:
            opts = {
                **self._opts(),
                "name": f"{name}-main",
                "concurrency": concurrency(name, self.rate),
                "autorun": False,
                **KEEP_OPTS,
            }
            if name == STALL_QUEUE:
                opts["stalledInterval"] = STALL_CHECK_MS  # see the module docstring
            worker = Worker(name, PROCESSORS[name], opts)
            worker.on("completed", lambda job, result: self.stats.incr("completed"))
            worker.on("failed", self._on_failed_for(name))
            worker.on("error", self._on_error_for(name))
            worker.on("stalled", self._on_stalled_for(name))
            self.workers.append(worker)
            self.worker_tasks.append(asyncio.ensure_future(worker.run()))

        self.staller = StallingWorkerThread(self.redis_url, self.prefix, self.stats)
        self.staller.start()

    # -- events --

    def _on_failed_for(self, queue: str):
        def on_failed(job, err):
            final = is_final_failure(job, err)
            self.stats.incr("failed" if final else "retried")
            if final and queue == DLQ_SOURCE and dead_letters(err):
                self._spawn(self._dead_letter(job, err))

        return on_failed

    def _on_error_for(self, queue: str):
        def on_error(err, job=None):
            log.warning("%s worker error%s: %s", queue, f" (job {job.id})" if job is not None else "", err)

        return on_error

    def _on_stalled_for(self, queue: str):
        def on_stalled(job_id, *args):
            self.stats.incr("stalled")
            log.info("%s job %s stalled (its lock expired) and was moved back to wait", queue, job_id)

        return on_stalled

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    async def _dead_letter(self, job, err) -> None:
        try:
            data, opts = dead_letter_of(job.id, job.data, str(err))
            await self.dlq.add(job.name, data, opts)
            self.stats.incr("dead-lettered")
            excess = await self.dlq.getJobCountByTypes("waiting") - DLQ_CAP
            if excess > 0:  # keep the newest DLQ_CAP dead letters; the list tail is the oldest
                for old_id in await self.dlq.client.lrange(self.dlq.keys["wait"], -excess, -1):
                    await self.dlq.remove(old_id)
        except Exception as exc:
            log.warning("could not dead-letter %s job %s: %s", DLQ_SOURCE, job.id, exc)

    async def _outage_loop(self) -> None:
        """Take the payment gateway down now and then (soon after the start, so the dead-letter
        queue has something to redrive from the first minute)."""
        wait = OUTAGE_FIRST_AFTER_S
        while not await wait_or_stop(self.stop, wait):
            GATEWAY.take_down(OUTAGE_S)
            log.info("payment gateway outage for %.0f s: payments failing now are dead-lettered", OUTAGE_S)
            wait = OUTAGE_S + random.uniform(*OUTAGE_EVERY_S)

    async def _status_loop(self) -> None:
        while True:
            await asyncio.sleep(STATUS_EVERY_S)
            log.info("demo workload: %s", self.stats.line())

    # -- shutdown --

    async def _shutdown(self) -> None:
        if self.staller is not None:
            self.staller.request_stop()
        # Close the workers (each waits for its active jobs), then the rest.
        results = await asyncio.gather(
            *(close_worker(w, t) for w, t in zip(self.workers, self.worker_tasks)), return_exceptions=True
        )
        for result in results:
            if isinstance(result, Exception):
                log.warning("closing a worker failed: %s", result)
        if self.staller is not None:
            await self.staller.join()
        if self.background:  # dead-letter copies started by the last failures
            await asyncio.gather(*list(self.background), return_exceptions=True)
        closers = [q.close() for q in self.queues.values()]
        if self.dlq is not None:
            closers.append(self.dlq.close())
        if self.flow is not None:
            closers.append(self.flow.close())
        await asyncio.gather(*closers, return_exceptions=True)
        log.info("demo workload stopped: %s", self.stats.line())


async def run_workload(
    redis_url: str,
    *,
    prefix: str = "bull",
    stop: asyncio.Event | None = None,
    rate: float = DEFAULT_RATE,
) -> None:
    """Run the demo workload until ``stop`` is set (or the task is cancelled), then close all
    workers and queues. ``rate`` is the number of jobs added per second across all queues."""
    if rate <= 0:
        raise ValueError("rate must be positive")
    if not prefix:
        raise ValueError("prefix must not be empty")
    await _Workload(redis_url, prefix, stop or asyncio.Event(), rate).run()
