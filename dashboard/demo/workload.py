"""A realistic, never-ending BullMQ workload built with the Python ``bullmq`` package.

It exists so the dashboard has real data to show: several queues with steady adds, retries
with exponential backoff, real Python stack traces, ``UnrecoverableError`` failures, delayed
and prioritized jobs, a queue that stays paused while jobs keep arriving, job schedulers
(cron with a time zone, and ``every``), deduplicated adds, progress updates and job logs,
small parent/child flows, an occasional stalled job and a ``payments-dlq`` dead-letter queue.

Plain asyncio, no Django: the management command ``demo_workload`` is a thin wrapper.

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
  that job reopens the closed connection (see ``_close_worker``). And if its internal teardown
  task is cancelled (e.g. by ``asyncio.run()`` cleaning up after a KeyboardInterrupt), close()
  spins at 100 % CPU forever, so nothing here cancels a closing worker.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import math
import random
import secrets
import threading
import time
from typing import Any, Awaitable, Callable

import redis.asyncio as aioredis
from bullmq import FlowProducer, Queue, UnrecoverableError, Worker

log = logging.getLogger("queuewatch.demo")

DEFAULT_RATE = 3.0  # jobs added per second across all queues (bursts and schedulers come on top)

QUEUE_NAMES = ("emails", "payments", "thumbnails", "reports", "webhooks")
DLQ_NAME = "payments-dlq"
DLQ_SOURCE = "payments"
PAUSED_QUEUE = "reports"
STALL_QUEUE = "thumbnails"

RETRY_OPTS = {"attempts": 3, "backoff": {"type": "exponential", "delay": 500}}
KEEP_OPTS = {"removeOnComplete": {"count": 1000}, "removeOnFail": {"count": 5000}}
JOB_DEFAULTS = {**RETRY_OPTS, **KEEP_OPTS}

# Share of the steady adds per queue, and rough mean processing time (seconds), used to size
# worker concurrency so a higher --rate does not just build an ever-growing backlog.
ADD_WEIGHTS = {"emails": 30, "payments": 25, "thumbnails": 20, "webhooks": 20, "reports": 5}
MEAN_DURATION = {"emails": 0.45, "payments": 0.8, "thumbnails": 1.5, "webhooks": 0.6, "reports": 3.5}
BASE_CONCURRENCY = {"emails": 3, "payments": 2, "thumbnails": 2, "webhooks": 3, "reports": 1}
MAX_CONCURRENCY = 16

PAUSED_BACKLOG_CAP = 500  # stop adding to the paused queue beyond this many waiting jobs
DLQ_CAP = 2000  # drop the oldest dead letters beyond this many

# The stalling worker: a second worker on STALL_QUEUE whose processor now and then blocks its
# thread for longer than its lock lasts, so the stalled checker requeues the job (stc += 1).
STALL_LOCK_MS = 2000
STALL_CHECK_MS = 2000
STALL_BLOCK_S = 8.0  # > lock (2 s) + two stalled checks (2 x 2 s), so recovery happens mid-block
FIRST_STALL_AFTER_S = 4.0
STALL_EVERY_S = (45.0, 90.0)

STATUS_EVERY_S = 30.0


class DemoWorkloadError(Exception):
    """Raised for problems the command should report without a traceback."""


# --- Failures raised by the processors (all real exceptions, from nested calls) --------------


class GatewayTimeout(Exception):
    pass


class SmtpTemporaryError(Exception):
    pass


class UnsupportedImageFormat(Exception):
    pass


class StorageUploadTimeout(Exception):
    pass


class WebhookDeliveryError(Exception):
    pass


# --- Fake data -------------------------------------------------------------------------------

FIRST_NAMES = ("ada", "grace", "alan", "linus", "margaret", "ken", "barbara", "dennis", "radia", "guido")
DOMAINS = ("example.com", "example.org", "example.net", "mail.example.io")
CURRENCIES = ("EUR", "USD", "GBP")
LOCALES = ("en-GB", "de-DE", "fr-FR", "nl-NL")
WEBHOOK_ENDPOINTS = (
    "https://hooks.shop.example.com/orders",
    "https://erp.example.org/api/bullmq-callback",
    "https://crm.example.net/webhooks/payments",
)
DOWN_ENDPOINT = "https://legacy-hooks.down.example/notify"  # always answers 503
WEBHOOK_EVENTS = ("order.created", "order.paid", "order.shipped", "refund.created")
DECLINED_CARD = "tok_chargeDeclinedInsufficientFunds"


def _email(rng: random.Random) -> str:
    return f"{rng.choice(FIRST_NAMES)}.{rng.randint(1, 999)}@{rng.choice(DOMAINS)}"


def _api_key() -> str:
    return "sk_live_" + secrets.token_hex(12)


async def _work(lo: float, hi: float) -> None:
    await asyncio.sleep(random.uniform(lo, hi))


# --- Processors ------------------------------------------------------------------------------


async def process_email(job, token):
    data = job.data
    if job.name == "send-digest":
        await job.log(f"building digest for audience {data.get('audience')!r}")
        await _work(0.2, 0.6)
        await job.updateProgress(100)
        return {"recipients": random.randint(50, 400)}
    message = _render_email(job.name, data)
    await job.log(f"rendered template {data['template']!r} ({len(message)} bytes) for {data['to']}")
    await job.updateProgress(30)
    await _work(0.1, 0.4)
    message_id = await _smtp_send(data["to"], message)
    await job.updateProgress(100)
    await job.log(f"accepted by smtp relay as {message_id}")
    return {"messageId": message_id}


def _render_email(name: str, data: dict) -> str:
    templates = {
        "welcome": "Welcome aboard, {to}!",
        "password-reset": "Reset your password: https://app.example.com/reset/{token}",
        "receipt": "Receipt for order {order_id}",
        "reminder": "You left something in your cart, {to}",
        "digest": "Your weekly digest, {to}",
    }
    template = templates[data["template"]]  # KeyError for retired templates: a real bug
    return template.format(**data)


async def _smtp_send(to: str, message: str) -> str:
    _validate_recipient(to)
    await _work(0.05, 0.3)
    if random.random() < 0.04:
        raise SmtpTemporaryError("421 4.7.0 smtp.example.com: too many connections, try again later")
    return f"<{secrets.token_hex(8)}@smtp.example.com>"


def _validate_recipient(address: str) -> None:
    local, _, domain = address.partition("@")
    if not local or "." not in domain or "@" in domain:
        raise UnrecoverableError(f"invalid recipient address {address!r}: will not retry")


async def process_payment(job, token):
    data = job.data
    customer = data["customer"]
    await job.log(f"{job.name} for order {data['order_id']} (customer {customer['id']})")
    await job.updateProgress(10)
    amount = _amount_in_cents(data)
    await _work(0.1, 0.4)
    await job.updateProgress(40)
    charge = await _call_gateway(job.name, data, amount)
    await job.updateProgress(90)
    await job.log(f"gateway answered {charge['status']} ({charge['id']})")
    await _work(0.05, 0.2)
    await job.updateProgress(100)
    return charge


def _amount_in_cents(data: dict) -> int:
    return _parse_cents(data["amount_cents"])


def _parse_cents(raw) -> int:
    value = int(raw)  # ValueError for the poison payload "12,50"
    if value <= 0:
        raise ValueError(f"amount must be positive, got {value}")
    return value


async def _call_gateway(operation: str, data: dict, amount: int) -> dict:
    await _work(0.1, 0.5)
    return _interpret_gateway_response(operation, data, amount)


def _interpret_gateway_response(operation: str, data: dict, amount: int) -> dict:
    if data.get("card") == DECLINED_CARD:
        raise UnrecoverableError("card_declined: insufficient_funds (the issuer refused; not retried)")
    if random.random() < 0.1:
        raise GatewayTimeout("payment gateway timed out after 10000 ms (POST /v1/charges)")
    prefix = {"refund": "re", "capture": "cp"}.get(operation, "ch")
    return {"id": f"{prefix}_{secrets.token_hex(6)}", "status": "succeeded", "amount_cents": amount,
            "currency": data["currency"]}


async def process_thumbnail(job, token):
    data = job.data
    if job.name == "publish-gallery":
        children = await job.getChildrenValues()
        await job.log(f"publishing album {data['album_id']} with {len(children)} resized images")
        await _work(0.1, 0.4)
        await job.updateProgress(100)
        return {"album_id": data["album_id"], "images": len(children)}
    await job.log(f"fetching {data['image_url']}")
    image = _load_image(data["image_url"])
    sizes = data.get("sizes", [128])
    outputs = []
    for i, size in enumerate(sizes, 1):
        await _work(0.15, 0.7)
        outputs.append(await _upload(data["bucket"], image, size))
        await job.updateProgress({"stage": "resize", "done": i, "total": len(sizes)})
    await job.log(f"uploaded {len(outputs)} renditions")
    return {"renditions": outputs}


def _load_image(url: str) -> dict:
    header = _read_header(url)
    return {"url": url, "format": header}


def _read_header(url: str) -> str:
    extension = url.rsplit(".", 1)[-1].lower()
    if extension not in ("jpg", "jpeg", "png", "webp"):
        raise UnsupportedImageFormat(f"cannot identify image file {url!r} (format {extension!r} not supported)")
    return extension


async def _upload(bucket: str, image: dict, size: int) -> str:
    if random.random() < 0.02:
        raise StorageUploadTimeout(f"upload to s3://{bucket} timed out after 30 s")
    return f"s3://{bucket}/{size}/{image['url'].rsplit('/', 1)[-1]}"


async def process_report(job, token):
    data = job.data
    await job.log(f"report {data.get('report', job.name)!r} for {data.get('range', 'yesterday')}")
    rows = 0
    for stage in ("query", "aggregate", "render"):
        await _work(0.6, 1.6)
        rows += random.randint(1000, 20000)
        await job.updateProgress({"stage": stage, "rows": rows})
    return {"url": f"https://reports.example.com/{secrets.token_hex(6)}.{data.get('format', 'pdf')}",
            "rows": rows}


async def process_webhook(job, token):
    data = job.data
    if job.name == "ping-endpoints":
        await _work(0.05, 0.2)
        return {"healthy": len(WEBHOOK_ENDPOINTS), "down": [DOWN_ENDPOINT]}
    await job.log(f"POST {data['endpoint']} ({data['event']} {data['event_id']})")
    await job.updateProgress(20)
    status = await _deliver(data["endpoint"], data["payload"])
    await job.updateProgress(100)
    return {"status": status}


async def _deliver(endpoint: str, payload: dict) -> int:
    await _work(0.05, 0.6)
    return _check_response(endpoint, 503 if endpoint == DOWN_ENDPOINT else _remote_status())


def _remote_status() -> int:
    return random.choices((200, 202, 500, 504), weights=(80, 12, 4, 4))[0]


def _check_response(endpoint: str, status: int) -> int:
    if status >= 500:
        raise WebhookDeliveryError(f"POST {endpoint} -> {status}")
    return status


PROCESSORS: dict[str, Callable[[Any, str], Awaitable[Any]]] = {
    "emails": process_email,
    "payments": process_payment,
    "thumbnails": process_thumbnail,
    "reports": process_report,
    "webhooks": process_webhook,
}


# --- Bookkeeping -----------------------------------------------------------------------------


class _Stats:
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


def _is_final_failure(job, err: BaseException) -> bool:
    """True when a failed attempt moved the job to ``failed`` (no retry left)."""
    if isinstance(err, UnrecoverableError):
        return True
    attempts = max(int(job.opts.get("attempts") or 1), 1)
    return job.attemptsMade >= attempts


def _concurrency(queue: str, rate: float) -> int:
    share = ADD_WEIGHTS[queue] / sum(ADD_WEIGHTS.values())
    needed = math.ceil(rate * share * MEAN_DURATION[queue] * 1.5)
    return max(BASE_CONCURRENCY[queue], min(needed, MAX_CONCURRENCY))


async def _wait_or_stop(stop: asyncio.Event, seconds: float) -> bool:
    """Sleep for ``seconds`` unless ``stop`` is set first; True if stopping."""
    if stop.is_set():
        return True
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=max(seconds, 0))
    return stop.is_set()


async def _close_worker(worker: Worker, runner: asyncio.Future) -> None:
    """Close a worker started with ``autorun: False`` whose ``run()`` task is ``runner``.

    bullmq 3.4.4's ``Worker.close()`` waits for a snapshot of the worker's tasks: a job fetched
    by a ``getNextJob`` still in flight when close() starts is processed after close() (and even
    ``run()``) has returned, and its Redis calls silently reopen the closed connection, which
    then stays open. So: wait for those leftover jobs too, then close the connections again."""
    try:
        await worker.close()
    finally:
        await asyncio.gather(runner, return_exceptions=True)
        leftovers = [task for task in list(worker.processing) if not task.done()]
        if leftovers:
            await asyncio.gather(*leftovers, return_exceptions=True)
        with contextlib.suppress(Exception):
            await worker.backend.close()


# --- The stalling worker, on its own thread and event loop -----------------------------------


class _StallingWorkerThread:
    """A worker on STALL_QUEUE with a short lock that, now and then, blocks its event loop
    (a synchronous wait inside an async processor, like a CPU-bound decode would) for longer
    than its lock lasts. The other workers' stalled checks then requeue the job with ``stc``
    incremented, and when the block ends this worker finds its lock gone."""

    def __init__(self, redis_url: str, prefix: str, stats: _Stats):
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
            await _close_worker(worker, runner)

    def _on_failed(self, job, err) -> None:
        self.stats.incr("failed" if _is_final_failure(job, err) else "retried")

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
            log.info("%s job %s: blocking the flaky worker's event loop for %.0f s (lock is %d ms) "
                     "so the job stalls", STALL_QUEUE, job.id, STALL_BLOCK_S, STALL_LOCK_MS)
            await job.log("flaky worker: decoding a huge TIFF synchronously; the event loop is blocked")
            self._interrupt.wait(STALL_BLOCK_S)  # deliberately blocks this thread's event loop
            return {"note": "finished after the lock expired; the job was already requeued"}
        return await process_thumbnail(job, token)


# --- The workload ----------------------------------------------------------------------------


class _Workload:
    def __init__(self, redis_url: str, prefix: str, stop: asyncio.Event, rate: float):
        self.redis_url = redis_url
        self.prefix = prefix
        self.stop = stop
        self.rate = rate
        self.rng = random.Random()
        self.stats = _Stats()
        self.queues: dict[str, Queue] = {}
        self.dlq: Queue | None = None
        self.flow: FlowProducer | None = None
        self.workers: list[Worker] = []
        self.worker_tasks: list[asyncio.Future] = []
        self.background: set[asyncio.Future] = set()
        self.staller: _StallingWorkerThread | None = None
        self.seq: collections.Counter[str] = collections.Counter()
        self.order_no = 100000 + self.rng.randint(0, 800000)
        self.recent_events: collections.deque[tuple[str, str, str]] = collections.deque(maxlen=40)
        self.paused_full_logged = False

    def _opts(self) -> dict:
        return {"connection": self.redis_url, "prefix": self.prefix}

    async def run(self) -> None:
        await self._check_redis()
        try:
            await self._start()
            log.info("demo workload running: prefix %r, %.1f adds/s, queues %s (+%s); %s is paused",
                     self.prefix, self.rate, ", ".join(QUEUE_NAMES), DLQ_NAME, PAUSED_QUEUE)
            status = asyncio.ensure_future(self._status_loop())
            try:
                await self._produce()
            finally:
                status.cancel()
                await asyncio.gather(status, return_exceptions=True)
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

        # Paused from the start; jobs keep arriving. (A worker is attached anyway, so resuming
        # it from the dashboard drains the backlog.)
        await self.queues[PAUSED_QUEUE].pause()
        await self._upsert_schedulers()

        for name in QUEUE_NAMES:
            opts = {
                **self._opts(),
                "name": f"{name}-main",
                "concurrency": _concurrency(name, self.rate),
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

        self.staller = _StallingWorkerThread(self.redis_url, self.prefix, self.stats)
        self.staller.start()

    async def _upsert_schedulers(self) -> None:
        await self.queues["emails"].upsertJobScheduler(
            "emails-digest-every-minute",
            {"pattern": "0 * * * * *", "tz": "Europe/Berlin"},
            "send-digest",
            {"audience": "daily-active", "template": "digest"},
            JOB_DEFAULTS,
        )
        await self.queues["reports"].upsertJobScheduler(
            "nightly-sales-report",
            {"pattern": "0 30 2 * * *", "tz": "America/New_York"},
            "sales-report",
            {"report": "sales", "range": "yesterday", "format": "pdf"},
            KEEP_OPTS,
        )
        await self.queues["webhooks"].upsertJobScheduler(
            "webhooks-health-check",
            {"every": 15000},
            "ping-endpoints",
            {"endpoints": list(WEBHOOK_ENDPOINTS) + [DOWN_ENDPOINT]},
            KEEP_OPTS,
        )

    # -- events --

    def _on_failed_for(self, queue: str):
        def on_failed(job, err):
            final = _is_final_failure(job, err)
            self.stats.incr("failed" if final else "retried")
            if final and queue == DLQ_SOURCE:
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
            await self.dlq.add(job.name, {
                "source": DLQ_SOURCE,
                "original_id": job.id,
                "data": job.data,
                "failedReason": str(err),
            })
            self.stats.incr("dead-lettered")
            excess = await self.dlq.getJobCountByTypes("waiting") - DLQ_CAP
            if excess > 0:  # keep the newest DLQ_CAP dead letters; the list tail is the oldest
                for old_id in await self.dlq.client.lrange(self.dlq.keys["wait"], -excess, -1):
                    await self.dlq.remove(old_id)
        except Exception as exc:
            log.warning("could not dead-letter %s job %s: %s", DLQ_SOURCE, job.id, exc)

    # -- producing --

    async def _produce(self) -> None:
        start = time.monotonic()
        next_burst = start + self.rng.uniform(6, 10)
        next_flow = start + self.rng.uniform(3, 6)
        names = list(ADD_WEIGHTS)
        weights = [ADD_WEIGHTS[n] for n in names]
        for name in names:  # one job per queue up front, so none starts out empty
            await self._add_one(name)
        while not await _wait_or_stop(self.stop, self.rng.expovariate(self.rate)):
            try:
                await self._add_one(self.rng.choices(names, weights)[0])
                now = time.monotonic()
                if now >= next_burst:
                    next_burst = now + self.rng.uniform(20, 40)
                    await self._add_burst()
                if now >= next_flow:
                    next_flow = now + self.rng.uniform(30, 60)
                    await self._add_flow()
            except Exception as exc:  # e.g. Redis restarted: keep going
                log.warning("adding demo jobs failed: %s", exc)
                if await _wait_or_stop(self.stop, 2.0):
                    break

    async def _add(self, queue: str, name: str, data: dict, opts: dict | None = None) -> None:
        await self.queues[queue].add(name, data, opts or {})
        self.stats.incr("added")

    async def _add_one(self, queue: str) -> None:
        self.seq[queue] += 1
        await getattr(self, "_add_" + queue)(self.seq[queue])

    async def _add_emails(self, n: int) -> None:
        rng = self.rng
        to = _email(rng)
        roll = rng.random()
        if n == 3 or roll < 0.01:
            to = to.replace("@", "@@")  # invalid address -> UnrecoverableError
            roll = max(roll, 0.5)  # a plain welcome/receipt email, so it is neither delayed nor deduplicated
        if roll < 0.12:
            user = rng.randint(1, 25)  # the same user's digest within 30 s is deduplicated
            await self._add("emails", "digest", {"to": to, "template": "digest", "user_id": user},
                            {"deduplication": {"id": f"digest-user-{user}", "ttl": 30000}})
        elif roll < 0.27:
            await self._add("emails", "reminder", {"to": to, "template": "reminder", "locale": rng.choice(LOCALES)},
                            {"delay": rng.randint(5000, 60000)})
        elif roll < 0.33:
            await self._add("emails", "password-reset",
                            {"to": to, "template": "password-reset", "token": secrets.token_urlsafe(12)},
                            {"priority": 1})
        elif roll < 0.34:
            await self._add("emails", "newsletter", {"to": to, "template": "newsletter-2019"})  # retired: KeyError
        else:
            name = rng.choice(("welcome", "receipt"))
            self.order_no += 1
            await self._add("emails", name, {"to": to, "template": name, "order_id": f"ORD-{self.order_no}",
                                             "locale": rng.choice(LOCALES)})

    async def _add_payments(self, n: int) -> None:
        rng = self.rng
        self.order_no += 1
        data = {
            "order_id": f"ORD-{self.order_no}",
            "amount_cents": rng.randint(199, 250000),
            "currency": rng.choice(CURRENCIES),
            "card": "tok_" + secrets.token_hex(6),
            "customer": {"id": f"cus_{secrets.token_hex(5)}", "email": _email(rng), "api_key": _api_key()},
        }
        roll = rng.random()
        if n == 2 or roll < 0.02:
            data["card"] = DECLINED_CARD  # UnrecoverableError -> failed at once -> DLQ
        elif n == 4 or roll < 0.05:
            data["amount_cents"] = "12,50"  # poison: ValueError on every attempt -> DLQ
        name, opts = "charge", {}
        kind = 1.0 if n in (2, 4) else rng.random()  # the seeded failures happen right away
        if kind < 0.12:
            name, opts = "capture", {"delay": rng.randint(10000, 40000)}
        elif kind < 0.30:
            name, opts = "refund", {"priority": rng.randint(1, 5)}
        await self._add("payments", name, data, opts)

    async def _add_thumbnails(self, n: int, priority: int | None = None) -> None:
        rng = self.rng
        ext = "heic" if (n == 3 or rng.random() < 0.02) else rng.choice(("jpg", "png", "webp"))
        data = {
            "image_url": f"https://cdn.example.com/uploads/{secrets.token_hex(6)}.{ext}",
            "sizes": rng.sample([64, 128, 256, 512, 1024], k=rng.randint(1, 3)),
            "bucket": "thumbs-prod",
        }
        await self._add("thumbnails", "resize", data, {"priority": priority} if priority else None)

    async def _add_webhooks(self, n: int) -> None:
        rng = self.rng
        if n != 2 and self.recent_events and rng.random() < 0.2:
            endpoint, event, event_id = rng.choice(self.recent_events)  # a resend: deduplicated for 60 s
        else:
            endpoint = DOWN_ENDPOINT if (n == 2 or rng.random() < 0.04) else rng.choice(WEBHOOK_ENDPOINTS)
            event, event_id = rng.choice(WEBHOOK_EVENTS), "evt_" + secrets.token_hex(8)
            self.recent_events.append((endpoint, event, event_id))
        data = {
            "endpoint": endpoint,
            "event": event,
            "event_id": event_id,
            "headers": {"Authorization": "Bearer whsec_" + secrets.token_hex(10), "Content-Type": "application/json"},
            "payload": {"type": event, "order_id": f"ORD-{self.order_no}", "livemode": True},
        }
        await self._add("webhooks", "deliver", data, {"deduplication": {"id": event_id, "ttl": 60000}})

    async def _add_reports(self, n: int) -> None:
        queue = self.queues[PAUSED_QUEUE]
        backlog = await queue.getJobCountByTypes("waiting", "prioritized")
        if backlog >= PAUSED_BACKLOG_CAP:
            if not self.paused_full_logged:
                log.info("%s is paused and holds %d jobs; not adding more", PAUSED_QUEUE, backlog)
                self.paused_full_logged = True
            return
        rng = self.rng
        data = {"report": rng.choice(("sales", "refunds", "churn", "inventory")),
                "range": rng.choice(("yesterday", "last-7-days", "last-month")),
                "format": rng.choice(("pdf", "csv")), "requested_by": _email(rng)}
        await self._add("reports", "sales-report", data, {"priority": 5} if rng.random() < 0.3 else None)

    async def _add_burst(self) -> None:
        """A bulk image import: a burst of prioritized thumbnail jobs."""
        count = self.rng.randint(8, 15)
        for _ in range(count):
            self.seq["thumbnails"] += 1
            await self._add_thumbnails(self.seq["thumbnails"], priority=self.rng.randint(1, 10))
        log.debug("added a burst of %d prioritized thumbnail jobs", count)

    async def _add_flow(self) -> None:
        album = f"alb_{secrets.token_hex(4)}"
        children = [
            {"name": "resize", "queueName": "thumbnails",
             "data": {"image_url": f"https://cdn.example.com/albums/{album}/{i}.jpg", "sizes": [256],
                      "bucket": "thumbs-prod"},
             "opts": {**JOB_DEFAULTS, "ignoreDependencyOnFailure": True}}
            for i in range(1, self.rng.randint(2, 4) + 1)
        ]
        await self.flow.add({"name": "publish-gallery", "queueName": "thumbnails",
                             "data": {"album_id": album}, "opts": dict(KEEP_OPTS), "children": children})
        self.stats.incr("added", 1 + len(children))

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
            *(_close_worker(w, t) for w, t in zip(self.workers, self.worker_tasks)), return_exceptions=True)
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
