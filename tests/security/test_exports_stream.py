"""Exports must stream for real under ASGI. Django turns a sync iterator into a list
before the first byte when served over ASGI, so a large export was built whole in memory.

The proof needs no timing: the monitored Redis sits behind a gate (``GateProxy``) that holds
every command naming a job of the export's second page. The first page's lines must reach
the client while that gate is still shut; under the old behaviour they never would.

The cap on concurrent downloads holds across web processes (two web servers share Queuewatch's
own Redis), and a client that goes away gives its slot back at once — while its export still
waits at the gate."""
# Literal `bull:` keys kept: a redis-server of the module's own, behind a web server subprocess.

from __future__ import annotations

import http.client
import json
import time

import pytest
from django.urls import reverse

from queues.redis.export import FIRST_PAGE
from tests.security.gate import GateProxy
from tests.support.browser import manage
from tests.support.servers import AppServer, RedisServer, app_env

GATED = 300  # jobs after the first page; the exporter's later pages name them
QUEUE = ("default", "bull", "exp")


def seed(r) -> None:
    """A first page of ``open-*`` jobs, then ``gate-*`` jobs (later scores)."""
    pipe = r.pipeline(transaction=False)
    pipe.hset("bull:exp:meta", mapping={"opts.maxLenEvents": 10000})
    for i in range(FIRST_PAGE + GATED):
        job_id = f"open-{i}" if i < FIRST_PAGE else f"gate-{i}"
        finished = 1_700_000_000_000 + i
        pipe.hset(
            f"bull:exp:{job_id}",
            mapping={
                "name": "export-me",
                "data": json.dumps({"i": i}),
                "timestamp": finished - 10,
                "finishedOn": finished,
                "failedReason": "boom",
                "atm": 1,
            },
        )
        pipe.zadd("bull:exp:failed", {job_id: finished})
    pipe.execute()


def web_env(*, redis_url: str, dashboard_url: str, database: str) -> dict:
    # Longer than any wait below: an export held at the gate must not end by a Redis
    # timeout, or a slot released only at the end would pass for one released on hang-up.
    return app_env(redis_url=redis_url, dashboard_url=dashboard_url, database=database, QUEUEWATCH_REDIS_TIMEOUT="120")


@pytest.fixture(scope="module")
def gated_web(tmp_path_factory):
    """Two web processes behind one gate, sharing the database and Queuewatch's Redis."""
    redis_server = RedisServer()
    seed(redis_server.client())
    gate = GateProxy(upstream_port=redis_server.port, marker=b"gate-")
    env = web_env(
        redis_url=gate.url,
        dashboard_url=redis_server.url(1),
        database=str(tmp_path_factory.mktemp("stream") / "db.sqlite3"),
    )
    manage(env, "migrate", "-v0")
    manage(env, "demo_user", "--username", "exporter")
    token = manage(env, "api_token", "exporter")
    webs = [AppServer(env, timeout=30), AppServer(env, timeout=30)]
    yield webs[0].port, token, gate, webs[1].port
    for web in webs:
        web.stop()
    gate.close()
    redis_server.stop()


def start_export(port: int, token: str) -> http.client.HTTPResponse:
    # The deadline only bounds a failure: with a buffered export, no line ever comes while
    # the gate is shut.
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(
        "GET",
        reverse("api_export", args=QUEUE) + "?state=failed&format=jsonl",
        headers={"Authorization": f"Bearer {token}"},
    )
    response = conn.getresponse()
    response.connection = conn  # so a test can hang up
    return response


def shut(gate) -> None:
    gate.opened.clear()
    gate.held.clear()


def first_line_id(response) -> str:
    assert response.status == 200
    return json.loads(response.readline())["id"]


def wait_until_accepted(port: int, token: str) -> http.client.HTTPResponse:
    """Start exports until one is accepted (a condition, not a delay: slots are released by
    the web process just after a stream ends)."""
    deadline = time.monotonic() + 30
    while (again := start_export(port, token)).status == 429:
        again.read()
        assert time.monotonic() < deadline, "export slots were never released"
        time.sleep(0.1)
    return again


def test_first_page_reaches_the_client_before_the_second_is_read(gated_web):
    port, token, gate, _ = gated_web
    response = start_export(port, token)
    assert response.status == 200
    first = [json.loads(response.readline()) for _ in range(FIRST_PAGE)]
    assert [line["id"] for line in first] == [f"open-{i}" for i in range(FIRST_PAGE)]
    assert not gate.opened.is_set()  # every line above came while the second page was held

    gate.held.wait(30)
    assert gate.held.is_set()  # the exporter did go on to the second page, and waits there
    gate.open()
    rest = [json.loads(line) for line in response.read().splitlines()]
    assert [line["id"] for line in rest] == [f"gate-{i}" for i in range(FIRST_PAGE, FIRST_PAGE + GATED)]


def test_a_user_runs_at_most_two_exports_at_once_across_web_processes(gated_web):
    port, token, gate, other_port = gated_web
    shut(gate)
    # one export on each web process: both hold a slot, each waits at the gate
    running = [start_export(port, token), start_export(other_port, token)]
    assert [first_line_id(r) for r in running] == ["open-0", "open-0"]

    for where in (port, other_port):  # a third is refused by either process
        refused = start_export(where, token)
        assert refused.status == 429
        body = json.loads(refused.read())
        assert body["error"] == "too_many_requests" and "downloads running" in body["message"]

    gate.open()
    for response in running:
        response.read()
    again = wait_until_accepted(port, token)
    assert len(again.read().splitlines()) == FIRST_PAGE + GATED


def test_a_client_that_goes_away_gives_its_slot_back(gated_web):
    port, token, gate, other_port = gated_web
    shut(gate)
    running = [start_export(port, token), start_export(other_port, token)]
    assert [first_line_id(r) for r in running] == ["open-0", "open-0"]
    assert start_export(port, token).status == 429

    for response in running:  # the clients hang up while both exports wait at the gate
        response.close()
        response.connection.close()
    again = wait_until_accepted(port, token)
    assert not gate.opened.is_set()  # released on disconnect, not when the export ended
    assert first_line_id(again) == "open-0"
    gate.open()
    again.read()


@pytest.mark.django_db(transaction=True)
def test_audit_csv_is_an_async_stream_under_asgi_one_chunk_per_batch(async_client, user):
    """The audit CSV, like the job export: under ASGI an async iterator (Django streams it)
    yielding one chunk per database batch; the whole log is never held at once."""
    import asyncio

    from asgiref.sync import sync_to_async

    from dashboard.audit import log as audit
    from dashboard.audit.models import AuditEntry

    AuditEntry.objects.bulk_create(
        AuditEntry(
            username="u", via="page", action="job.retry", connection="default", prefix="bull", queue="q", outcome="ok"
        )
        for _ in range(audit.CSV_BATCH + 1)
    )

    async def fetch():
        await sync_to_async(async_client.force_login)(user)
        response = await async_client.get(reverse("audit_csv"))
        assert response.is_async
        return [chunk async for chunk in response.streaming_content]

    chunks = asyncio.run(fetch())
    assert len(chunks) == 3  # the header, a full batch, and the last row
    assert sum(c.count(b"\n") for c in chunks) == audit.CSV_BATCH + 2
