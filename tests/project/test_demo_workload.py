"""The demo workload (``manage.py demo_workload``) against a real Redis: it must leave every
kind of state the dashboard shows, and shut down cleanly at the end of --duration."""

import json

import pytest
from django.core.management import call_command

LIVE_QUEUES = ("emails", "payments", "thumbnails", "webhooks")


def _s(value):
    return value.decode() if isinstance(value, bytes) else value


def test_demo_workload_produces_every_state(redis_prefix):
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

    # The dead-letter queue holds copies of payments jobs that failed for good.
    dlq_ids = [_s(i) for i in r.lrange(key("payments-dlq", "wait"), 0, -1)]
    assert dlq_ids
    dead = json.loads(_s(r.hget(key("payments-dlq", dlq_ids[-1]), "data")))
    assert dead["source"] == "payments" and dead["failedReason"]
    assert r.zscore(key("payments", "failed"), dead["original_id"]) is not None
    assert "api_key" in dead["data"]["customer"]  # something for redaction to hide

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
