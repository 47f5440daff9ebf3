"""Adding the demo's jobs: a steady random stream weighted per queue, bursts of prioritized
jobs, small parent/child flows, and the job schedulers.

Each queue has its own ``_add_<queue>`` method. A few early jobs (by per-queue sequence number)
are seeded failures, so each failure kind shows up soon after a start rather than by chance.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import random
import secrets
import time

from bullmq import FlowProducer, Queue

from .fake_data import (
    CURRENCIES,
    DECLINED_CARD,
    DOWN_ENDPOINT,
    LOCALES,
    WEBHOOK_ENDPOINTS,
    WEBHOOK_EVENTS,
    api_key,
    email_address,
)
from .runtime import Stats, wait_or_stop
from .scenario import ADD_WEIGHTS, JOB_DEFAULTS, KEEP_OPTS, PAUSED_BACKLOG_CAP, PAUSED_QUEUE

log = logging.getLogger("queuewatch.demo")


class Producer:
    """Adds jobs at ``rate`` per second on average until ``stop`` is set."""

    def __init__(self, *, queues: dict[str, Queue], flow: FlowProducer, stats: Stats, stop: asyncio.Event, rate: float):
        self.queues = queues
        self.flow = flow
        self.stats = stats
        self.stop = stop
        self.rate = rate
        self.rng = random.Random()
        self.seq: collections.Counter[str] = collections.Counter()
        self.order_no = 100000 + self.rng.randint(0, 800000)
        self.recent_events: collections.deque[tuple[str, str, str]] = collections.deque(maxlen=40)
        self.paused_full_logged = False

    async def upsert_schedulers(self) -> None:
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

    async def run(self) -> None:
        start = time.monotonic()
        next_burst = start + self.rng.uniform(6, 10)
        next_flow = start + self.rng.uniform(3, 6)
        names = list(ADD_WEIGHTS)
        weights = [ADD_WEIGHTS[n] for n in names]
        for name in names:  # one job per queue up front, so none starts out empty
            await self._add_one(name)
        while not await wait_or_stop(self.stop, self.rng.expovariate(self.rate)):
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
                if await wait_or_stop(self.stop, 2.0):
                    break

    async def _add(self, queue: str, name: str, data: dict, opts: dict | None = None) -> None:
        await self.queues[queue].add(name, data, opts or {})
        self.stats.incr("added")

    async def _add_one(self, queue: str) -> None:
        self.seq[queue] += 1
        await getattr(self, "_add_" + queue)(self.seq[queue])

    async def _add_emails(self, n: int) -> None:
        rng = self.rng
        to = email_address(rng)
        roll = rng.random()
        if n == 3 or roll < 0.01:
            to = to.replace("@", "@@")  # invalid address -> UnrecoverableError
            roll = max(roll, 0.5)  # a plain welcome/receipt email, so it is neither delayed nor deduplicated
        if roll < 0.12:
            user = rng.randint(1, 25)  # the same user's digest within 30 s is deduplicated
            await self._add(
                "emails",
                "digest",
                {"to": to, "template": "digest", "user_id": user},
                {"deduplication": {"id": f"digest-user-{user}", "ttl": 30000}},
            )
        elif roll < 0.27:
            await self._add(
                "emails",
                "reminder",
                {"to": to, "template": "reminder", "locale": rng.choice(LOCALES)},
                {"delay": rng.randint(5000, 60000)},
            )
        elif roll < 0.33:
            await self._add(
                "emails",
                "password-reset",
                {"to": to, "template": "password-reset", "token": secrets.token_urlsafe(12)},
                {"priority": 1},
            )
        elif roll < 0.34:
            await self._add("emails", "newsletter", {"to": to, "template": "newsletter-2019"})  # retired: KeyError
        else:
            name = rng.choice(("welcome", "receipt"))
            self.order_no += 1
            await self._add(
                "emails",
                name,
                {"to": to, "template": name, "order_id": f"ORD-{self.order_no}", "locale": rng.choice(LOCALES)},
            )

    async def _add_payments(self, n: int) -> None:
        rng = self.rng
        self.order_no += 1
        data = {
            "order_id": f"ORD-{self.order_no}",
            "amount_cents": rng.randint(199, 250000),
            "currency": rng.choice(CURRENCIES),
            "card": "tok_" + secrets.token_hex(6),
            "customer": {"id": f"cus_{secrets.token_hex(5)}", "email": email_address(rng), "api_key": api_key()},
        }
        roll = rng.random()
        if n == 2 or roll < 0.02:
            data["card"] = DECLINED_CARD  # UnrecoverableError -> failed at once (not dead-lettered)
        elif n == 4 or roll < 0.05:
            data["amount_cents"] = "12,50"  # poison: ValueError on every attempt -> failed
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
        data = {
            "report": rng.choice(("sales", "refunds", "churn", "inventory")),
            "range": rng.choice(("yesterday", "last-7-days", "last-month")),
            "format": rng.choice(("pdf", "csv")),
            "requested_by": email_address(rng),
        }
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
            {
                "name": "resize",
                "queueName": "thumbnails",
                "data": {
                    "image_url": f"https://cdn.example.com/albums/{album}/{i}.jpg",
                    "sizes": [256],
                    "bucket": "thumbs-prod",
                },
                "opts": {**JOB_DEFAULTS, "ignoreDependencyOnFailure": True},
            }
            for i in range(1, self.rng.randint(2, 4) + 1)
        ]
        await self.flow.add(
            {
                "name": "publish-gallery",
                "queueName": "thumbnails",
                "data": {"album_id": album},
                "opts": dict(KEEP_OPTS),
                "children": children,
            }
        )
        self.stats.incr("added", 1 + len(children))
