"""Fuzz: random and hostile job hashes, stream entries and queue names (binary, non-finite
numbers, deep JSON, huge ids, ``/``, ``:``, ``{``, quotes, bidi characters) go through
discovery, the monitor's snapshot and live lists, pages, the API and the export. Nothing may
answer 500, the monitor may not restart, and another queue keeps updating.

Seeded: a failure names its seed; rerun with ``QUEUEWATCH_FUZZ_SEED=<seed>``."""
# Literal `bull:` keys kept: a monitor discovers every queue of its (whole, leased) database.

from __future__ import annotations

import json
import os
import random

import pytest
from django.urls import reverse

from dashboard.core import dash_redis, state_store
from queues.keys import QueueRef
from tests.support.hostile import DEEP, monitor_log
from tests.support.live import monitor_thread
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

SEED = int(os.environ.get("QUEUEWATCH_FUZZ_SEED", "20240612"))
STATES = ("failed", "delayed", "completed", "waiting", "active", "prioritized")
FIELDS = (
    "name",
    "data",
    "opts",
    "timestamp",
    "processedOn",
    "finishedOn",
    "delay",
    "priority",
    "atm",
    "ats",
    "stc",
    "failedReason",
    "stacktrace",
    "returnvalue",
    "progress",
    "parentKey",
    "parent",
    "rjk",
)
HOSTILE = [
    b"\xff\xfe\x00binary",
    "1e400",
    "-1e400",
    "inf",
    "-inf",
    "NaN",
    "Infinity",
    DEEP,
    '{"a":',
    "[]",
    '{"n":1e400}',
    "null",
    "-1",
    "9" * 400,
    '"quoted"',
    "'single'",
    "\u202eevil\u202c",
    "<script>x</script>",
    "=HYPERLINK(1)",
    "a/b",
    "a:b",
    "{tag}",
    "",
    " ",
    "\u0000",
    "\u2028\u2029",
    '{"password":"hunter2"}',
]
QUEUE_NAMES = ["slash/name", "colon:name", "{brace}", 'quo"te', "bidi\u202egnp.exe", "it's", "a" * 300, "sp ace"]


def hostile_value(rng: random.Random):
    roll = rng.random()
    if roll < 0.6:
        return rng.choice(HOSTILE)
    if roll < 0.8:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
    text = rng.choice([v for v in HOSTILE if isinstance(v, str)])
    return json.dumps({"k": [rng.random() for _ in range(3)], "s": text, "deep": [[[text]]]})


def hostile_id(rng: random.Random) -> str:
    return rng.choice(
        [
            "9" * 2000,
            "id/with/slash",
            "id:colon",
            "{id}",
            'id"q',
            "\u202eid",
            "meta",
            "1",
            f"j{rng.randrange(10**6)}",
            "..",
            "%2F",
        ]
    )


def seed_queue(r, rng: random.Random, name: str) -> list[str]:
    key = f"bull:{name}:"
    r.hset(key + "meta", mapping={"opts.maxLenEvents": rng.choice([10000, "1e400", "x"])})
    ids = []
    for _ in range(12):
        job_id = hostile_id(rng)
        ids.append(job_id)
        r.hset(key + job_id, mapping={f: hostile_value(rng) for f in rng.sample(FIELDS, rng.randrange(1, len(FIELDS)))})
        state = rng.choice(STATES)
        score = rng.choice([float("inf"), float("-inf"), 1_700_000_000_000 + rng.randrange(10**6), 0, 2**60])
        if state in ("waiting", "active"):
            r.rpush(key + ("wait" if state == "waiting" else "active"), job_id)
        else:
            r.zadd(key + state, {job_id: score})
    for _ in range(20):
        r.xadd(
            key + "events",
            {
                rng.choice(["event", "jobId", "prev", "returnvalue", "failedReason", "\xff"]): hostile_value(rng)
                for _ in range(rng.randrange(1, 4))
            },
        )
    r.xadd(key + "events", {"event": "completed", "jobId": hostile_id(rng), "returnvalue": DEEP})
    return ids


def urls(name: str, ids: list[str]):
    queue = ("default", "bull", name)
    yield reverse("overview")
    yield reverse("api_queues")
    yield reverse("health")
    yield reverse("api_queue", args=queue)
    for state in STATES:
        yield reverse("queue", args=queue) + f"?state={state}"
        yield reverse("api_jobs", args=queue) + f"?state={state}"
    for fmt in ("jsonl", "csv"):
        for state in ("failed", "completed", "delayed"):
            yield reverse("queue_export", args=queue) + f"?state={state}&format={fmt}"
    yield reverse("queue_errors", args=queue)
    for job_id in set(ids):
        yield reverse("job", args=[*queue, job_id])
        yield reverse("api_job", args=[*queue, job_id])


def test_hostile_queues_and_jobs_break_nothing_else(logged_in, live_setup):
    rng = random.Random(SEED)
    seeded = {name: seed_queue(live_setup, rng, name) for name in QUEUE_NAMES + [f"rnd-{rng.randrange(10**6)}"]}
    dash = dash_redis.dashboard_redis()
    for name, ids in seeded.items():
        queue = QueueRef("default", "bull", name)
        for state in ("failed", "delayed", "waiting"):
            dash_redis.watch(dash, dash_redis.Watch.job_list(queue, state))
        dash_redis.watch(dash, dash_redis.Watch.job(queue, ids[0]))

    with monitor_log() as messages:
        with monitor_thread(tick=0.5, name="fuzz-monitor"):
            # Every hostile queue is discovered, except a name with ':', which BullMQ itself
            # refuses (its keys read as another prefix's): still seeded, and still requested.
            wait_for(lambda: _names(dash) >= {n for n in seeded if ":" not in n}, timeout=30)
            for name, ids in seeded.items():
                for url in urls(name, ids):
                    response = logged_in.get(url)
                    body = b"".join(response.streaming_content) if response.streaming else response.content
                    assert response.status_code < 500, f"seed {SEED}: {url} answered {response.status_code}"
                    assert body is not None
            # Another queue keeps updating while the hostile ones are watched and rendered.
            live_setup.hset("bull:calm:meta", mapping={"opts.maxLenEvents": 10000})
            live_setup.rpush("bull:calm:wait", *[f"c{i}" for i in range(4)])
            wait_for(lambda: _counts(dash, "calm").get("waiting") == 4, timeout=30)
    assert [m for m in messages if "restarting the leader loop" in m] == [], f"seed {SEED}"


def _names(dash) -> set[str]:
    return {q.get("name") for q in (state_store.read_state(dash) or {}).get("queues", [])}


def _counts(dash, name: str) -> dict:
    state = state_store.read_state(dash) or {}
    return next((q["counts"] for q in state.get("queues", []) if q.get("name") == name), {})


# Every key BullMQ keeps for a queue, with the Redis type it has there.
BULLMQ_KEYS = {
    "meta": "hash",
    "id": "string",
    "events": "stream",
    "wait": "list",
    "paused": "list",
    "active": "list",
    "prioritized": "zset",
    "delayed": "zset",
    "completed": "zset",
    "failed": "zset",
    "waiting-children": "zset",
    "stalled": "set",
    "marker": "zset",
    "limiter": "string",
    "pc": "string",
    "repeat": "zset",
    "repeat:nightly": "hash",
    "de:dedup-1": "string",
    "job-1": "hash",
    "job-1:logs": "list",
    "job-1:dependencies": "set",
    "job-1:processed": "hash",
}
MEGABYTE = "x" * 1_000_000


def write_wrong_type(r, key: str, right: str) -> None:
    """The key with another Redis type than BullMQ gives it (a hash for a string, a string
    for anything else), holding a 1 MB value."""
    if right == "string":
        r.hset(key, mapping={"v": MEGABYTE})
    else:
        r.set(key, MEGABYTE)


def write_hostile_values(r, key: str, right: str) -> None:
    """The right type, holding non-finite numbers, binary bytes, deep JSON and 1 MB values."""
    values = ["inf", "-inf", "nan", "1e400", b"\xff\xfe\x00", DEEP, MEGABYTE]
    if right == "hash":
        fields = ["opts.maxLenEvents", "paused", "concurrency", "max", "duration", "version", "ic", "every", "limit"]
        fields += ["pattern", "tz", "name", "data", "opts", "timestamp", "delay", "priority", "atm", "failedReason"]
        r.hset(key, mapping={f: values[i % len(values)] for i, f in enumerate(fields)})
    elif right == "zset":
        r.zadd(key, {"job-1": float("inf"), "job-2": float("-inf"), MEGABYTE: 1.0, b"\xff\x00": 2.0})
    elif right == "list":
        r.rpush(key, "job-1", MEGABYTE, b"\xff\x00", DEEP)
    elif right == "set":
        r.sadd(key, "job-1", MEGABYTE, b"\xff\x00")
    elif right == "stream":
        for value in values:
            r.xadd(key, {"event": "completed", "jobId": "job-1", "returnvalue": value, "failedReason": value})
    else:
        r.set(key, values[len(key) % len(values)])


def key_urls(name: str):
    queue = ("default", "bull", name)
    yield from urls(name, ["job-1"])
    yield reverse("queue_schedulers", args=queue)
    yield reverse("schedulers")
    yield reverse("metrics")


@pytest.mark.slow
@pytest.mark.parametrize("cls", ["type", "values"])  # one test each: test processes run them side by side
def test_each_hostile_class_in_every_key_bullmq_uses_breaks_no_page_api_or_monitor(logged_in, live_setup, cls):
    """One queue per key of a class: the wrong Redis type, or the right type holding non-finite
    numbers, binary bytes, deep JSON and 1 MB values. Every page, the API, /metrics and the
    monitor stay up, and a calm queue keeps updating."""
    write = {"type": write_wrong_type, "values": write_hostile_values}[cls]
    names = []
    for suffix, right in BULLMQ_KEYS.items():
        name = f"h-{cls}-{suffix.replace(':', '-')}"
        names.append(name)
        prefix = f"bull:{name}:"
        if suffix != "meta":
            live_setup.hset(prefix + "meta", mapping={"opts.maxLenEvents": 10000})
        write(live_setup, prefix + suffix, right)
    dash = dash_redis.dashboard_redis()
    with monitor_log() as messages:
        with monitor_thread(tick=0.5, name="key-fuzz-monitor"):
            # A meta key of the wrong type, with no events stream beside it, hides its queue from
            # discovery (queues/redis/discovery.py); every other queue is listed.
            unlisted = {"type": 1, "values": 0}[cls]
            wait_for(lambda: len(_names(dash) & set(names)) >= len(names) - unlisted, timeout=60)
            for name in names:
                for url in key_urls(name):
                    response = logged_in.get(url)
                    if response.streaming:
                        b"".join(response.streaming_content)
                    assert response.status_code < 500, f"{url} answered {response.status_code}"
            live_setup.hset("bull:calm:meta", mapping={"opts.maxLenEvents": 10000})
            live_setup.rpush("bull:calm:wait", *[f"c{i}" for i in range(3)])
            wait_for(lambda: _counts(dash, "calm").get("waiting") == 3, timeout=30)
    assert [m for m in messages if "restarting the leader loop" in m] == []
