"""The demo workload (``manage.py demo_workload``) against a real Redis: it must leave every
kind of state the dashboard shows, and shut down cleanly at the end of --duration."""

import asyncio
import json
import random

import pytest
from django.core.management import call_command

from dashboard.demo import processors
from dashboard.demo.processors import GATEWAY, process_payment

LIVE_QUEUES = ("emails", "payments", "thumbnails", "webhooks")


def _s(value):
    return value.decode() if isinstance(value, bytes) else value


async def no_work(lo: float, hi: float) -> None:
    """The processors' pretend work, without its sleep."""


class StoredJob:
    """What the payments processor uses of a BullMQ job, for data read back from Redis."""

    def __init__(self, name: str, data: dict):
        self.name, self.data = name, data

    async def log(self, line: str) -> None:
        pass

    async def updateProgress(self, progress) -> None:  # noqa: N802 - BullMQ's name
        pass


def test_demo_workload_produces_every_state(redis_prefix, monkeypatch):
    r, url, prefix = redis_prefix.client, redis_prefix.url, redis_prefix.prefix
    call_command("demo_workload", redis_url=url, prefix=prefix, duration=12, rate=20)

    def key(queue, suffix):
        return f"{prefix}:{queue}:{suffix}"

    queues = {_s(k)[len(prefix) + 1 : -len(":meta")] for k in r.scan_iter(match=f"{prefix}:*:meta")}
    assert {"emails", "payments", "thumbnails", "reports", "webhooks", "payments-dlq"} <= queues

    for queue in LIVE_QUEUES:
        assert r.zcard(key(queue, "completed")) > 0, queue
    assert sum(r.zcard(key(q, "failed")) for q in LIVE_QUEUES) > 0
    # The workload seeds an early declined card (UnrecoverableError) and an invalid address.
    assert r.zcard(key("payments", "failed")) >= 1
    assert r.zcard(key("emails", "failed")) >= 1

    # Failed jobs carry real Python stack traces.
    failed_id = _s(r.zrange(key("payments", "failed"), 0, 0)[0])
    trace = json.loads(_s(r.hget(key("payments", failed_id), "stacktrace")))
    assert trace and "Traceback (most recent call last)" in trace[-1]
    assert "dashboard/demo/processors.py" in trace[-1]  # raised in our processor code

    # reports stays paused while jobs keep arriving.
    assert r.hexists(key("reports", "meta"), "paused")
    assert r.llen(key("reports", "wait")) + r.zcard(key("reports", "prioritized")) > 0

    # Job schedulers: a cron pattern with a time zone, and an `every`.
    assert _s(r.zrange(key("emails", "repeat"), 0, -1)[0]) == "emails-digest-every-minute"
    cron = {_s(k): _s(v) for k, v in r.hgetall(key("emails", "repeat:emails-digest-every-minute")).items()}
    assert cron["pattern"] and cron["tz"] == "Europe/Berlin"
    every = {_s(k): _s(v) for k, v in r.hgetall(key("webhooks", "repeat:webhooks-health-check")).items()}
    assert every["every"] == "15000"
    assert r.zscore(key("reports", "repeat"), "nightly-sales-report") is not None

    # The dead-letter queue holds copies of payments jobs that failed for good in the gateway
    # outage the workload starts early on (not the declined card or the bad amount: those stay
    # failed in payments), as envelopes around the original data...
    dlq_ids = [_s(i) for i in r.lrange(key("payments-dlq", "wait"), 0, -1)]
    assert dlq_ids
    dead_letters = [json.loads(_s(r.hget(key("payments-dlq", i), "data"))) for i in dlq_ids]
    dead = dead_letters[-1]
    assert dead["source"] == "payments" and dead["failedReason"]
    assert r.zscore(key("payments", "failed"), dead["original_id"]) is not None
    assert "api_key" in dead["data"]["customer"]  # something for redaction to hide
    assert all("payment gateway" in d["failedReason"] for d in dead_letters), [d["failedReason"] for d in dead_letters]
    # ...whose original data, what a redrive copies into payments, the payments processor
    # charges once the gateway is back (no random gateway timeout: the data is under test).
    monkeypatch.setattr(GATEWAY, "down_until", 0.0)
    monkeypatch.setattr(random, "random", lambda: 0.5)
    monkeypatch.setattr(processors, "_work", no_work)
    for d in dead_letters:  # every one: a declined card or bad amount among them would fail here
        charged = asyncio.run(process_payment(StoredJob("charge", d["data"]), "token"))
        assert charged["status"] == "succeeded"

    # Clean shutdown: no job left active, no worker connection left open.
    for queue in LIVE_QUEUES + ("reports",):
        assert r.llen(key(queue, "active")) == 0, queue
    client_names = [_s(c.get("name", "")) for c in r.client_list()]
    assert not [n for n in client_names if n.startswith(prefix + ":")]


@pytest.mark.django_db
def test_demo_alert_rules_are_valid_and_created_once():
    from dashboard.alerts.models import AlertRule

    call_command("demo_alerts")
    names = sorted(AlertRule.objects.values_list("name", flat=True))
    assert names == ["Demo: dead letters growing", "Demo: jobs stalling"]
    AlertRule.objects.filter(name="Demo: jobs stalling").update(threshold=3)  # an admin's edit stays
    call_command("demo_alerts")
    assert AlertRule.objects.count() == 2 and AlertRule.objects.get(name="Demo: jobs stalling").threshold == 3
