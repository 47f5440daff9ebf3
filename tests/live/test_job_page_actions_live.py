"""The job page after an action: a failed job retried from its page goes waiting/active and
fails again under a real (Python BullMQ) worker; the page's actions, timeline and failure
reason follow over the websocket in one message (one swap), so it offers Retry again without a
reload and never a failed job with a running job's actions."""
# Literal `bull:` keys kept: a monitor discovers every queue of its (whole, leased) database.

from __future__ import annotations

import asyncio
import threading

import pytest
from asgiref.sync import sync_to_async
from bullmq import Queue, Worker
from channels.testing import WebsocketCommunicator
from django.urls import reverse

from dashboard.asgi import application
from dashboard.demo.runtime import close_worker
from tests.support.accounts import user_with
from tests.support.live import session_headers
from tests.support.waiting import receive_until, wait_for

pytestmark = [pytest.mark.django_db(transaction=True)]


def always_fail(release: threading.Event):
    """A processor that fails every job; from the second run on it first stays active until
    ``release`` is set, so the test sees the page show the job running however late the
    monitor's tick runs (a fixed sleep raced a loaded machine's tick)."""
    runs = 0

    async def process(job, token):
        nonlocal runs
        runs += 1
        if runs > 1:
            deadline = asyncio.get_running_loop().time() + 90
            while not release.is_set() and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.05)
        raise RuntimeError(f"card service down (attempt at {job.attemptsMade})")

    return process


def failing_worker(url: str, started: threading.Event, stop: threading.Event, release: threading.Event) -> None:
    async def main() -> None:
        worker = Worker("orders", always_fail(release), {"connection": url, "prefix": "bull", "autorun": False})
        runner = asyncio.ensure_future(worker.run())
        started.set()
        while not stop.is_set():
            await asyncio.sleep(0.1)
        await close_worker(worker, runner)

    asyncio.run(main())


async def add_job(url: str) -> str:
    queue = Queue("orders", {"connection": url, "prefix": "bull"})
    try:
        return (await queue.add("charge", {"order": 7}, {"attempts": 1})).id
    finally:
        await queue.close()


def actions_of(html: str) -> str | None:
    return html if 'id="job-actions"' in html else None


@pytest.mark.asyncio
async def test_a_retried_job_failing_again_offers_retry_without_reload(running_monitor, live_setup, redis_url, client):
    started, stop, release = threading.Event(), threading.Event(), threading.Event()
    worker = threading.Thread(target=failing_worker, args=(redis_url, started, stop, release))
    worker.start()
    try:
        job_id = await add_job(redis_url)
        await sync_to_async(wait_for)(lambda: live_setup.zscore("bull:orders:failed", job_id) is not None)
        operator = await sync_to_async(user_with)("operator")
        headers = await sync_to_async(session_headers)(client, operator)
        comm = WebsocketCommunicator(application, f"/ws/queue/default/bull/orders/jobs/{job_id}", headers=headers)
        assert (await comm.connect(timeout=5))[0]

        # Retry from the page (as its button does); the job leaves failed...
        retried = await sync_to_async(client.post)(
            reverse("job_action", args=("default", "bull", "orders", "retry", job_id)), HTTP_HX_REQUEST="true"
        )
        assert retried.status_code == 200 and b"action-result ok" in retried.content, retried.content
        # Generous waits: on a loaded 2-core machine (the whole suite beside Chromium) the
        # monitor's tick can run many seconds late; what is checked is the order of fragments.
        running = await receive_until(comm, lambda h: bool(actions_of(h)) and "job-retry" not in h, timeout=45)
        assert "job-discard" in running and 'class="job-live"' in running  # the state it offers them for, with them
        release.set()
        # ...fails again under the worker, and the page's actions offer Retry again, live, in the
        # same message as the job's state, timeline and failure reason: one swap, so the page never
        # shows a failed job with a running job's actions.
        again = await receive_until(comm, lambda h: bool(actions_of(h)) and "job-retry" in h, timeout=45)
        assert "job-promote" not in again
        assert 'class="job-live"' in again and "state-failed" in again and "Failure reason" in again
        assert "card service down" in again and "finished (failed)" in again
        await comm.disconnect()
    finally:
        release.set()
        stop.set()
        await sync_to_async(worker.join)(timeout=30)


@pytest.mark.asyncio
async def test_a_viewer_gets_no_actions(running_monitor, live_setup, redis_url, client):
    job_id = await add_job(redis_url)
    viewer = await sync_to_async(user_with)("viewer")
    headers = await sync_to_async(session_headers)(client, viewer)
    comm = WebsocketCommunicator(application, f"/ws/queue/default/bull/orders/jobs/{job_id}", headers=headers)
    assert (await comm.connect(timeout=5))[0]
    seen = await receive_until(comm, lambda h: "job-live" in h)
    assert 'id="job-actions"' not in seen
    later = []
    while len(later) < 20 and not await comm.receive_nothing(timeout=2):
        later.append(await comm.receive_from())
    assert not [h for h in later if actions_of(h)]
    await comm.disconnect()
