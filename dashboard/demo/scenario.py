"""The shape of the demo: its queues, their job options, how much each gets, how many workers
each needs, and the timing of the stalling worker. One place to tune the demo."""

from __future__ import annotations

import math

from .fake_data import GatewayTimeout

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

# Payment gateway outages: payments fail on every attempt while one lasts (longer than the
# retries' backoff), so they are dead-lettered; a redrive after it completes them.
OUTAGE_FIRST_AFTER_S = 2.0
OUTAGE_S = 8.0
OUTAGE_EVERY_S = (240.0, 480.0)

STATUS_EVERY_S = 30.0


def concurrency(queue: str, rate: float) -> int:
    """Worker concurrency for ``queue`` at ``rate`` adds per second, with 50 % headroom."""
    share = ADD_WEIGHTS[queue] / sum(ADD_WEIGHTS.values())
    needed = math.ceil(rate * share * MEAN_DURATION[queue] * 1.5)
    return max(BASE_CONCURRENCY[queue], min(needed, MAX_CONCURRENCY))


def dead_letters(err: BaseException) -> bool:
    """Whether a payments job that failed for good goes to the dead-letter queue: when the
    gateway failed it (an outage: worth a redrive once it is over). A declined card or a bad
    amount stays failed in payments, where error groups show it: a redrive would fail again."""
    return isinstance(err, GatewayTimeout)


def dead_letter_of(job_id: str, data, reason: str) -> tuple[dict, dict]:
    """(data, options) of the dead letter of a payments job that failed for good: an envelope
    around its data, as many applications write one. A redrive copies only ``data`` into
    payments (the dashboard recognises the shape; ``./dev run`` also sets it in
    ``QUEUEWATCH_DLQ_MAP``), and the copy keeps the retry options the original had."""
    return {"source": DLQ_SOURCE, "original_id": job_id, "data": data, "failedReason": reason}, dict(RETRY_OPTS)
