"""Health checks (queues/health/) against real redis-servers started in the wrong
configuration and in the right one, real Node BullMQ and Python bullmq workers, a real monitor's
state document, and the health page."""
# Literal `bull:` keys kept: the worker tests read CLIENT LIST; the monitor tests discover a whole database.

from __future__ import annotations

import asyncio
import contextlib
import select
import subprocess
import time

import pytest
import redis
from django.urls import reverse
from redis.backoff import NoBackoff
from redis.retry import Retry

from dashboard.core import dash_redis, state_store
from queues import health
from queues.health import CHECKS, FAIL, PASS, UNKNOWN, ServerFacts, Thresholds
from queues.keys import QueueRef
from queues.redis.health_checks import run_checks
from tests.support.health import make_queue, queue_state, wait_followed
from tests.support.live import monitor_thread, run_monitor_until
from tests.support.servers import NODE_DIR, RedisServer, ensure_node_modules, refused_port, run_node
from tests.support.waiting import async_wait_for, wait_for

DAY_MS = 24 * 3600 * 1000


def now_ms() -> int:
    return int(time.time() * 1000)


def result(results, kind, queue=None):
    found = [r for r in results if r.kind == kind and (queue is None or r.queue == queue)]
    assert len(found) == 1, (kind, queue, [r.as_dict() for r in results])
    return found[0]


@pytest.fixture
def servers():
    """Start redis-servers in chosen configurations; all are stopped after the test."""
    started = []

    def start(*config):
        server = RedisServer(*config)
        started.append(server)
        return server

    yield start
    for s in started:
        s.stop()


def managed_client(server: RedisServer) -> redis.Redis:
    """A client as on a managed Redis service that refuses CONFIG and CLIENT LIST."""
    server.client().execute_command(
        "ACL", "SETUSER", "managed", "on", ">managed-pw", "~*", "&*", "+@all", "-config", "-client|list"
    )
    return redis.Redis(port=server.port, username="managed", password="managed-pw", client_name="queuewatch")


# --- connection checks ---------------------------------------------------------------------


def test_every_check_has_a_stable_kind_an_explanation_and_a_fix():
    # The Redis kind's own checks (queues/health/redis_catalogue.py), reachability first; the ids
    # are stable (/metrics and stored rules name them).
    assert health.connection_kinds("redis") == (
        "redis.reachable",
        "redis.eviction_policy",
        "redis.persistence",
        "redis.version",
        "redis.memory",
    )
    assert set(health.QUEUE_KINDS) == {
        "queue.finished_retention",
        "queue.legacy_repeat",
        "queue.repeated_stalls",
        "queue.duplicated_adds",
        "queue.events_trimmed",
        "queue.no_workers",
        "queue.paused",
        "queue.rate_limited",
    }
    for check in CHECKS.values():
        assert check.severity in health.SEVERITIES and len(check.explanation) > 60 and len(check.fix) > 30


def test_eviction_policy_wrong_and_right(servers):
    wrong = servers("maxmemory-policy allkeys-lru")
    r = result(run_checks(wrong.client(), [], None, now_ms()), "redis.eviction_policy")
    assert (r.status, r.severity) == (FAIL, "critical")
    assert "allkeys-lru" in r.summary and "noeviction" in r.fix and r.details["source"] == "CONFIG"
    # On a managed service without CONFIG, INFO still tells.
    r = result(run_checks(managed_client(wrong), [], None, now_ms()), "redis.eviction_policy")
    assert (r.status, r.details["policy"], r.details["source"]) == (FAIL, "allkeys-lru", "INFO")

    right = servers("maxmemory-policy noeviction")
    assert result(run_checks(right.client(), [], None, now_ms()), "redis.eviction_policy").status == PASS


def test_persistence_wrong_and_right(servers):
    none = servers()  # tests/servers.py starts with --save "" --appendonly no
    r = result(run_checks(none.client(), [], None, now_ms()), "redis.persistence")
    assert (r.status, r.severity) == (FAIL, "warning") and "restart" in r.summary
    # Without CONFIG the RDB save points cannot be known: unknown, not a crash and not a pass.
    r = result(run_checks(managed_client(none), [], None, now_ms()), "redis.persistence")
    assert r.status == UNKNOWN and "CONFIG" in r.summary

    aof = servers("appendonly yes")
    assert result(run_checks(aof.client(), [], None, now_ms()), "redis.persistence").status == PASS
    assert (
        result(run_checks(managed_client(aof), [], None, now_ms()), "redis.persistence").status == PASS
    )  # INFO aof_enabled
    rdb = servers("save 900 1")
    r = result(run_checks(rdb.client(), [], None, now_ms()), "redis.persistence")
    assert r.status == PASS and "900 1" in r.summary


def test_redis_version(servers):
    right = servers()
    r = result(run_checks(right.client(), [], None, now_ms()), "redis.version")
    assert r.status == PASS and r.details["redis_version"] == right.client().info()["redis_version"]
    # Only one redis-server version is installed here, so older servers are checked through
    # the INFO fields they report.
    old = health.check_version("default", ServerFacts(info={"redis_version": "6.0.16"}, config={}))
    assert (old.status, old.severity) == (FAIL, "warning") and "6.2.0" in old.summary
    ancient = health.check_version("default", ServerFacts(info={"redis_version": "4.0.14"}, config={}))
    assert (ancient.status, ancient.severity) == (FAIL, "critical")
    assert health.check_version("default", ServerFacts(info={}, config={})).status == UNKNOWN


def test_memory_near_maxmemory(servers):
    server = servers("maxmemory 4mb")
    client = server.client()
    assert result(run_checks(client, [], None, now_ms()), "redis.memory").status == PASS

    def fill_to(ratio):
        i = 0
        while client.info("memory")["used_memory"] < ratio * 4 * 1024 * 1024:
            try:
                client.set(f"filler:{i}", "x" * 2048)
            except redis.exceptions.OutOfMemoryError:
                break
            i += 1

    fill_to(0.85)
    r = result(run_checks(client, [], None, now_ms()), "redis.memory")
    assert (r.status, r.severity) == (FAIL, "warning") and r.details["maxmemory"] == 4 * 1024 * 1024
    fill_to(0.97)
    r = result(run_checks(client, [], None, now_ms()), "redis.memory")
    assert (r.status, r.severity) == (FAIL, "critical")
    # No maxmemory at all is not "near" it.
    assert result(run_checks(servers().client(), [], None, now_ms()), "redis.memory").status == PASS


def test_unreachable_connection_is_one_failing_result_not_a_crash():
    client = redis.Redis(port=refused_port(), socket_connect_timeout=0.5, retry=Retry(NoBackoff(), 0))
    results = run_checks(client, [QueueRef("default", "bull", "q")], None, now_ms())
    assert [(r.kind, r.status, r.severity) for r in results] == [("redis.reachable", FAIL, "critical")]


# --- queue checks from Redis ---------------------------------------------------------------


@pytest.mark.node
def test_finished_jobs_kept_forever_vs_pruned(redis_prefix):
    url, redis_client, prefix = redis_prefix.url, redis_prefix.client, redis_prefix.prefix
    # Wrong: real Node BullMQ jobs without removeOnComplete are all kept.
    run_node("produce.mjs", "complete", url, "keeper", "12", "", prefix)
    keeper = QueueRef("default", prefix, "keeper")
    th = Thresholds(finished_count=10)
    r = result(run_checks(redis_client, [keeper], None, now_ms(), thresholds=th), "queue.finished_retention")
    assert r.status == PASS  # large, but the oldest finished job is seconds old
    eight_days_later = now_ms() + 8 * DAY_MS
    r = result(run_checks(redis_client, [keeper], None, eight_days_later, thresholds=th), "queue.finished_retention")
    assert (r.status, r.queue) == (FAIL, "keeper") and "12 completed jobs" in r.summary
    assert r.details["completed"]["oldest_age_ms"] >= 8 * DAY_MS and "removeOnComplete" in r.fix

    # Right: Python bullmq with removeOnComplete keeps only the last 3.
    async def pruned():
        from bullmq import Queue, Worker

        q = Queue("pruned", {"connection": url, "prefix": prefix})
        for i in range(12):
            await q.add("job", {"i": i}, {"removeOnComplete": 3})
        done = asyncio.Event()
        count = 0

        async def process(job, token):
            nonlocal count
            count += 1
            if count == 12:
                done.set()

        worker = Worker("pruned", process, {"connection": url, "prefix": prefix})
        await asyncio.wait_for(done.wait(), 20)
        # The last job is finished (and the set pruned) after its processor returns.
        await async_wait_for(
            lambda: (
                redis_client.llen(f"{prefix}:pruned:active") == 0
                and redis_client.zcard(f"{prefix}:pruned:completed") == 3
            )
        )
        await worker.close()
        await q.close()

    asyncio.run(pruned())
    r = result(
        run_checks(redis_client, [QueueRef("default", prefix, "pruned")], None, eight_days_later, thresholds=th),
        "queue.finished_retention",
    )
    assert r.status == PASS and r.details["completed"]["count"] == 3


def test_legacy_repeat_metadata_from_old_shape_keys(redis_prefix):
    r, redis_url, prefix = redis_prefix.client, redis_prefix.url, redis_prefix.prefix
    q = make_queue(r, "legacy", prefix)
    # Exactly what old BullMQ versions left behind (reference §6.2): a pre-hash key-shaped
    # member with no hash, and a v5 md5 member whose hash has no `ic`.
    r.zadd(
        f"{prefix}:legacy:repeat",
        {"old-cron::::0 0 3 * * *": 1700000000000, "d9c48061d9d20cd7b1bf692d7ceb46ff": 1700000005000},
    )
    r.hset(
        f"{prefix}:legacy:repeat:d9c48061d9d20cd7b1bf692d7ceb46ff", mapping={"name": "legacy-every", "every": "5000"}
    )
    res = result(run_checks(r, [q], None, now_ms()), "queue.legacy_repeat")
    assert (res.status, res.severity) == (FAIL, "critical")
    assert {e["layout"] for e in res.details["entries"]} == {"key-shape", "v5-hash"}
    assert "upsertJobScheduler" in res.fix and "removeRepeatableByKey" in res.fix and "upgrade" in res.fix

    v5only = make_queue(r, "v5only", prefix)
    r.zadd(f"{prefix}:v5only:repeat", {"abc123": 1700000000000})
    r.hset(f"{prefix}:v5only:repeat:abc123", mapping={"name": "x", "pattern": "*/5 * * * *"})
    res = result(run_checks(r, [v5only], None, now_ms()), "queue.legacy_repeat")
    assert (res.status, res.severity) == (FAIL, "warning")

    # Right: a job scheduler created by a BullMQ 6 client (Python bullmq's upsertJobScheduler).
    async def migrate():
        from bullmq import Queue

        queue = Queue("migrated", {"connection": redis_url, "prefix": prefix})
        await queue.upsertJobScheduler("nightly", {"pattern": "0 0 3 * * *"}, "cleanup", {"kind": "nightly"})
        await queue.close()

    asyncio.run(migrate())
    res = result(run_checks(r, [QueueRef("default", prefix, "migrated")], None, now_ms()), "queue.legacy_repeat")
    assert res.status == PASS and res.summary == "1 job scheduler, none legacy."


def test_paused_queue(redis_prefix):
    url, redis_client, prefix = redis_prefix.url, redis_prefix.client, redis_prefix.prefix

    async def scenario(pause: bool):
        from bullmq import Queue

        queue = Queue("pausy", {"connection": url, "prefix": prefix})
        await queue.add("job", {})
        await (queue.pause() if pause else queue.resume())
        await queue.close()

    q = QueueRef("default", prefix, "pausy")
    asyncio.run(scenario(True))
    r = result(run_checks(redis_client, [q], None, now_ms()), "queue.paused")
    assert (r.status, r.severity) == (FAIL, "warning") and "resume" in r.fix
    asyncio.run(scenario(False))
    assert result(run_checks(redis_client, [q], None, now_ms()), "queue.paused").status == PASS


def test_global_rate_limit_hit(redis_prefix):
    url, redis_client, prefix = redis_prefix.url, redis_prefix.client, redis_prefix.prefix
    q = QueueRef("default", prefix, "limited")

    async def scenario():
        from bullmq import Queue, Worker

        queue = Queue("limited", {"connection": url, "prefix": prefix})
        await queue.setGlobalRateLimit(1, 60000)
        for i in range(3):
            await queue.add("job", {"i": i})
        done = asyncio.Event()

        async def process(job, token):
            done.set()

        worker = Worker("limited", process, {"connection": url, "prefix": prefix})
        await asyncio.wait_for(done.wait(), 10)
        # Taking the job counted against the global limit (what the check reads).
        await async_wait_for(lambda: redis_client.pttl(f"{prefix}:limited:limiter") > 0)
        await worker.close()
        await queue.close()

    make_queue(redis_client, "limited", prefix)
    assert result(run_checks(redis_client, [q], None, now_ms()), "queue.rate_limited").status == PASS
    asyncio.run(scenario())
    r = result(run_checks(redis_client, [q], None, now_ms()), "queue.rate_limited")
    assert (r.status, r.severity) == (FAIL, "warning"), r.as_dict()
    assert r.details["max"] == 1 and r.details["limiter_count"] >= 1 and 0 < r.details["limiter_pttl_ms"] <= 60000

    async def manual():
        from bullmq import Queue

        queue = Queue("manual", {"connection": url, "prefix": prefix})
        await queue.rateLimit(30000)
        await queue.close()

    asyncio.run(manual())
    r = result(
        run_checks(redis_client, [make_queue(redis_client, "manual", prefix)], None, now_ms()), "queue.rate_limited"
    )
    assert r.status == FAIL and "by hand" in r.summary


# --- workers ---------------------------------------------------------------------------------


def read_line(proc, timeout):
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "no output from the node worker in time"
    return proc.stdout.readline().strip()


@pytest.mark.node
def test_no_workers_connected_vs_node_and_python_workers(redis_url, redis_client, redis_databases):
    ensure_node_modules()
    url = redis_url
    run_node("produce.mjs", "add", url, "nodeq", "3")
    q = QueueRef("default", "bull", "nodeq")
    r = result(run_checks(redis_client, [q], None, now_ms()), "queue.no_workers")
    assert (r.status, r.severity) == (FAIL, "critical") and "3 jobs waiting" in r.summary

    # A real Node worker without a name: its connection is "bull:<base64(queue)>".
    worker = subprocess.Popen(
        ["node", "produce.mjs", "recover", url, "nodeq", "20"],
        cwd=NODE_DIR,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        r = wait_for(
            lambda: (
                (x := result(run_checks(redis_client, [q], None, now_ms()), "queue.no_workers")).details.get("workers")
                and x
            ),
            timeout=15,
        )
        assert r.status == PASS and r.details["names"] == ["bull:bm9kZXE="]
        # The same queue name in another database has no worker: CLIENT LIST is per server.
        with redis_databases.lease() as other_db, contextlib.closing(other_db.client()) as other:
            run_node("produce.mjs", "add", other_db.url, "nodeq", "1")
            r = result(run_checks(other, [q], None, now_ms()), "queue.no_workers")
        assert r.status == FAIL and r.details["workers"] == 0
    finally:
        worker.kill()
        worker.wait()

    # A named Node worker: "bull:<base64(queue)>:w:<name>".
    run_node("produce.mjs", "add", url, "named", "1")
    named = QueueRef("default", "bull", "named")
    stuck = subprocess.Popen(
        ["node", "stall_worker.mjs", url, "named"], cwd=NODE_DIR, stdout=subprocess.PIPE, text=True
    )
    try:
        assert read_line(stuck, 20).startswith("ACTIVE ")
        r = result(run_checks(redis_client, [named], None, now_ms()), "queue.no_workers")
        assert r.status == PASS and r.details["names"] == ["bull:bmFtZWQ=:w:stall-worker"]
    finally:
        stuck.kill()
        stuck.wait()

    # Python bullmq workers name their connection "bull:<queue>" and "bull:<queue>:w:<name>".
    async def python_workers():
        from bullmq import Queue, Worker

        queue = Queue("pyq", {"connection": url})
        await queue.add("job", {}, {"delay": 600000})
        release = asyncio.Event()

        async def process(job, token):
            await release.wait()

        workers = [
            Worker("pyq", process, {"connection": url}),
            Worker("pyq", process, {"connection": url, "name": "billing"}),
        ]
        pyq = QueueRef("default", "bull", "pyq")
        deadline = time.monotonic() + 15
        while True:
            r = result(run_checks(redis_client, [pyq], None, now_ms()), "queue.no_workers")
            if r.details.get("workers") == 2 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
        for w in workers:
            await w.close()
        await queue.close()
        return r

    r = asyncio.run(python_workers())
    assert r.status == PASS and sorted(r.details["names"]) == ["bull:pyq", "bull:pyq:w:billing"]


def test_no_workers_falls_back_to_activity_without_client_list(servers):
    server = servers()
    client = managed_client(server)
    q = make_queue(server.client(), "backlog")
    old = now_ms() - 10 * 60 * 1000
    server.client().lpush("bull:backlog:wait", "1")
    server.client().hset("bull:backlog:1", mapping={"name": "j", "timestamp": old})
    r = result(run_checks(client, [q], None, now_ms()), "queue.no_workers")
    assert r.status == UNKNOWN and "CLIENT LIST is not allowed" in r.summary

    def state(finished_per_min):
        return {
            "taken_at": now_ms(),
            "queues": [
                {
                    "connection": "default",
                    "prefix": "bull",
                    "name": "backlog",
                    "taken_at": now_ms(),
                    "rates_per_min": {"completed": {"5": finished_per_min}, "failed": {"5": 0}},
                }
            ],
        }

    r = result(run_checks(client, [q], state(0), now_ms()), "queue.no_workers")
    assert (r.status, r.details["source"]) == (FAIL, "activity") and "none finished" in r.summary
    assert "the oldest for 10 min" in r.summary and not r.details["oldest_waiting_is_bound"]
    assert result(run_checks(client, [q], state(3.0), now_ms()), "queue.no_workers").status == PASS
    # A stalled job recovered to the tail of wait: when it came back is stored nowhere, so the
    # ten minutes of the job behind it are a bound.
    server.client().hset("bull:backlog:2", mapping={"name": "j", "timestamp": old, "processedOn": old + 1})
    server.client().rpush("bull:backlog:wait", "2")
    r = result(run_checks(client, [q], state(0), now_ms()), "queue.no_workers")
    assert "the oldest for at least 10 min" in r.summary and r.details["oldest_waiting_is_bound"]


# --- checks from the monitor's state document --------------------------------------------------


@pytest.mark.node
@pytest.mark.django_db(transaction=True)
def test_repeated_stalls_from_a_real_node_worker_blocking_its_event_loop(followed_queues, running_monitor, redis_url):
    ensure_node_modules()
    url = redis_url
    client = followed_queues
    wait_followed(running_monitor, "stalls", "calm")
    run_node("produce.mjs", "complete", url, "calm", "3")
    calm, stalls = QueueRef("default", "bull", "calm"), QueueRef("default", "bull", "stalls")
    wait_for(lambda: (queue_state("calm")[0] or {}).get("counts", {}).get("completed") == 3)
    r = result(run_checks(client, [calm], queue_state("calm")[1], now_ms()), "queue.repeated_stalls")
    assert r.status == PASS

    # Worker A takes the job and blocks its event loop; worker B's stall check gives the job
    # to B, which blocks too: the job ran twice. A healthy worker then finds it stalled a
    # second time and fails it ("stalled more than allowable limit").
    a = subprocess.Popen(["node", "stall_worker.mjs", url, "stalls"], cwd=NODE_DIR, stdout=subprocess.PIPE, text=True)
    b = None
    try:
        run_node("produce.mjs", "add", url, "stalls", "1")
        first = read_line(a, 20)
        b = subprocess.Popen(
            ["node", "stall_worker.mjs", url, "stalls"], cwd=NODE_DIR, stdout=subprocess.PIPE, text=True
        )
        second = read_line(b, 20)
        assert first == second and first.startswith("ACTIVE ")  # the same job ran twice
        a.kill()
        run_node("produce.mjs", "recover", url, "stalls", "6")
    finally:
        for p in (a, b):
            if p:
                p.kill()
                p.wait()

    entry = wait_for(
        lambda: (
            (e := queue_state("stalls")[0]) and e["events_total"]["stalled"] >= 2 and e["stall_failed_15m"] >= 1 and e
        ),
        timeout=20,
    )
    assert entry["counts"]["failed"] == 1
    r = result(run_checks(client, [stalls], queue_state("stalls")[1], now_ms()), "queue.repeated_stalls")
    assert (r.status, r.severity) == (FAIL, "warning")
    assert r.details["stalls_15m"] >= 2 and r.details["stall_failed_15m"] == 1 and r.details["stalled_total"] >= 2
    assert "sandboxed" in r.fix and "lockDuration" in r.fix and "twice" in r.explanation


@pytest.mark.node
@pytest.mark.django_db(transaction=True)
def test_duplicated_adds_from_real_node_bullmq(followed_queues, running_monitor, redis_url):
    url = redis_url
    client = followed_queues
    wait_followed(running_monitor, "dupq", "uniq")
    out = run_node("duplicates.mjs", url, "dupq", "3")
    assert out["returned"] == ["invoice-42"] * 3 and out["processed"] == 1  # the re-adds never ran
    run_node("produce.mjs", "complete", url, "uniq", "3")

    entry = wait_for(
        lambda: (e := queue_state("dupq")[0]) and e["duplicated_by_cause"]["custom_id"] == 3 and e, timeout=15
    )
    assert entry["events_total"]["duplicated"] == 3  # deduplicated adds are not counted as duplicates
    assert entry["events_total"]["deduplicated"] == 1
    state = queue_state("dupq")[1]
    dup, uniq = QueueRef("default", "bull", "dupq"), QueueRef("default", "bull", "uniq")
    wait_for(lambda: (queue_state("uniq")[0] or {}).get("counts", {}).get("completed") == 3)
    results = run_checks(client, [dup, uniq], queue_state("uniq")[1], now_ms())
    r = result(results, "queue.duplicated_adds", "dupq")
    assert (r.status, r.details["duplicated_total"]) == (FAIL, 3) and "deduplication" in r.fix
    assert result(results, "queue.duplicated_adds", "uniq").status == PASS
    assert state["queues"]


@pytest.mark.node
@pytest.mark.django_db(transaction=True)
def test_duplicated_from_schedulers_and_flows_is_not_reported_as_dropped_adds(
    followed_queues, running_monitor, redis_url
):
    """Real Node BullMQ emits `duplicated` for a custom id re-added, for a scheduler whose next
    iteration exists already and for a flow re-adding a child: only the first is dropped work.
    `deduplicated` and `retries-exhausted` are counted too (the state document, /metrics)."""
    wait_followed(running_monitor, "dupkinds")
    run_node("duplicate_kinds.mjs", redis_url, "dupkinds")

    def told_apart():
        entry = queue_state("dupkinds")[0] or {}
        totals, causes = entry.get("events_total", {}), entry.get("duplicated_by_cause", {})
        return entry if totals.get("retries_exhausted") and sum(causes.values()) == totals["duplicated"] == 4 else None

    entry = wait_for(told_apart, timeout=15)
    assert entry["duplicated_by_cause"] == {"custom_id": 2, "scheduler": 1, "flow": 1}
    totals = entry["events_total"]
    assert (totals["deduplicated"], totals["retries_exhausted"], totals["failed"]) == (1, 1, 1)
    q = QueueRef("default", "bull", "dupkinds")
    r = result(run_checks(followed_queues, [q], queue_state("dupkinds")[1], now_ms()), "queue.duplicated_adds")
    assert r.status == FAIL and r.summary.startswith("2 adds were dropped")
    assert "1 scheduler iterations that already existed and 1 flow children" in r.summary
    assert (r.details["duplicated_total"], r.details["custom_id"], r.details["scheduler"], r.details["flow"]) == (
        4,
        2,
        1,
        1,
    )


@pytest.mark.node
@pytest.mark.django_db(transaction=True)
def test_events_stream_trimmed_faster_than_read_from_a_real_monitor_run(live_setup, redis_url):
    url = redis_url
    run_node("produce.mjs", "complete", url, "trimmy", "5", "20")
    q = QueueRef("default", "bull", "trimmy")

    run_monitor_until(lambda m: m.stats["ticks"] >= 2 and m.applied_cursors.get(q))
    r = result(run_checks(live_setup, [q], state_store.read_state(live_setup), now_ms()), "queue.events_trimmed")
    assert r.status == PASS
    # While no monitor runs, 300 completions go through a stream capped at ~20 entries.
    run_node("produce.mjs", "complete", url, "trimmy", "300", "20")
    run_monitor_until(lambda m: (e := queue_state("trimmy")[0]) is not None and e["stream_gaps"] >= 1)
    r = result(run_checks(live_setup, [q], state_store.read_state(live_setup), now_ms()), "queue.events_trimmed")
    assert (r.status, r.severity) == (FAIL, "warning") and r.details["stream_gaps"] >= 1 and "maxLen" in r.fix


def test_state_based_checks_are_unknown_without_a_monitor_or_with_a_stale_state(redis_prefix):
    redis_client = redis_prefix.client
    q = make_queue(redis_client, "q", redis_prefix.prefix)
    for state in (None, {"taken_at": now_ms() - 10 * 60 * 1000, "queues": []}):
        results = run_checks(redis_client, [q], state, now_ms())
        for kind in health.STATE_KINDS:
            r = result(results, kind)
            assert r.status == UNKNOWN and "monitor" in r.summary


# --- the page --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_health_page_worst_first_with_fixes_and_says_the_monitor_state_is_missing(logged_in, prefixed_queues):
    r, prefix = prefixed_queues.client, prefixed_queues.prefix
    make_queue(r, "orders", prefix)
    r.lpush(f"{prefix}:orders:wait", "1")
    r.hset(f"{prefix}:orders:1", mapping={"name": "j", "timestamp": now_ms()})
    r.zadd(f"{prefix}:orders:repeat", {"<b>x</b>`::::0 0 3 * * *": 1700000000000})  # hostile legacy id
    html = logged_in.get(reverse("health")).content.decode()
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert 'id="monitor-state-missing"' in html and "No monitor state" in html
    # Critical findings first (no worker, legacy key shape), then warnings (no persistence).
    positions = [html.index(f'data-kind="{k}"') for k in ("queue.no_workers", "redis.persistence")]
    assert positions == sorted(positions)
    assert html.index('data-kind="queue.legacy_repeat"') < html.index('data-kind="redis.persistence"')
    assert "upsertJobScheduler" in html and "appendonly yes" in html  # the fixes are shown
    assert 'href="/health/"' in html  # the nav link


def test_the_overview_shows_the_stored_reports_failing_count_and_worst_severity(logged_in, private_redis):
    """The overview reads a summary stored beside the report: at 10,000 queues the report itself
    is megabytes, and parsing it made every overview request slow."""
    from dashboard.health.checks import HEALTH_KEY, HEALTH_SUMMARY_KEY, read_stored

    r, prefix = private_redis, "bull"
    make_queue(r, "orders", prefix)
    r.lpush(f"{prefix}:orders:wait", "1")
    r.hset(f"{prefix}:orders:1", mapping={"name": "j", "timestamp": now_ms()})
    logged_in.get(reverse("health"))  # runs the checks and stores the report
    dash = dash_redis.dashboard_redis()
    failing = [x for c in read_stored(dash)["connections"] for x in c["results"] if x["status"] == FAIL]
    assert failing and any(x["severity"] == "critical" for x in failing)
    assert len(dash.get(HEALTH_SUMMARY_KEY)) < len(dash.get(HEALTH_KEY)) / 4
    badge = f"{len(failing)} health checks failing (worst: critical)"
    assert badge in logged_in.get(reverse("overview")).content.decode()
    dash.delete(HEALTH_KEY)  # the overview needs only the summary
    assert badge in logged_in.get(reverse("overview")).content.decode()


def test_the_stored_report_leaves_the_catalogues_words_to_the_catalogue(logged_in, private_redis):
    """What a stored result keeps: its fields, not the words its check's catalogue entry holds
    (title, explanation, fix: the same for every queue, most of the report at 10,000 queues);
    the health page, which runs the checks itself, still shows every word."""
    from dashboard.health.checks import read_stored

    make_queue(private_redis, "orders", "bull")
    page = logged_in.get(reverse("health")).content.decode()  # runs the checks and stores the report
    results = [r for c in read_stored(dash_redis.dashboard_redis())["connections"] for r in c["results"]]
    assert results and {r["status"] for r in results} >= {PASS, FAIL}
    for r in results:
        assert {"kind", "status", "severity", "connection", "prefix", "queue", "summary", "details"} <= r.keys()
        assert "title" not in r and "explanation" not in r
        assert r.get("fix", "") != CHECKS[r["kind"]].fix
    assert any(str(CHECKS[r["kind"]].title) in page for r in results if r["status"] == FAIL)


@pytest.mark.django_db(transaction=True)
def test_health_page_uses_a_running_monitors_state_and_stores_the_result(followed_queues, running_monitor, logged_in):
    live_client = dash_redis.dashboard_redis()
    wait_for(lambda: queue_state("calm")[0] is not None, timeout=20)
    html = logged_in.get(reverse("health")).content.decode()
    assert 'id="monitor-state-missing"' not in html
    from dashboard.health.checks import read_stored

    stored = read_stored(live_client)
    kinds = {r["kind"]: r["status"] for c in stored["connections"] for r in c["results"] if r["queue"] == "calm"}
    assert kinds["queue.repeated_stalls"] == PASS and stored["monitor_state"]["present"]


@pytest.mark.django_db
def test_health_page_requires_login(client, prefixed_queues):
    response = client.get(reverse("health"))
    assert response.status_code == 302 and "login" in response["Location"]


@pytest.mark.django_db(transaction=True)
def test_monitor_runs_the_checks_and_the_overview_summarises_them(live_setup, logged_in):
    """The monitor stores a report on its schedule; the overview links to the failing checks."""
    from dashboard.health import checks as dashboard_health

    live_setup.hset("bull:orders:meta", "opts.maxLenEvents", 10000)
    with monitor_thread(tick=0.3, name="health-monitor"):
        wait_for(lambda: dashboard_health.read_stored(dash_redis.dashboard_redis()) is not None, timeout=15)
    report = dashboard_health.read_stored(dash_redis.dashboard_redis())
    assert report is not None and report["monitor_state"]["present"]
    html = logged_in.get("/").content.decode()
    # The test server keeps nothing on disk, so at least the persistence check fails.
    assert "health check" in html and 'href="/health/"' in html
