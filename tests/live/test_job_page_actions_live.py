"""The job page after an action: a failed job retried from its page goes waiting/active and
fails again under a real (Python BullMQ) worker; the page's actions, timeline and failure
reason follow over the websocket, so it offers Retry again without a reload."""
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


async def always_fail(job, token):
    await asyncio.sleep(1.5)  # active for a few monitor ticks: the page shows it running
    raise RuntimeError(f"card service down (attempt at {job.attemptsMade})")


def failing_worker(url: str, started: threading.Event, stop: threading.Event) -> None:
    async def main() -> None:
        worker = Worker("orders", always_fail, {"connection": url, "prefix": "bull", "autorun": False})
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
    started, stop = threading.Event(), threading.Event()
    worker = threading.Thread(target=failing_worker, args=(redis_url, started, stop))
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
        running = await receive_until(comm, lambda h: bool(actions_of(h)) and "job-retry" not in h)
        assert "job-discard" in running
        # ...fails again under the worker, and the page's actions offer Retry again, live.
        # The actions and the job's live part are two fragments sent in either order: keep what
        # arrives after the job ran, and look for each among them.
        since_running: list[str] = []

        def seen(predicate):
            return lambda h: since_running.append(h) or predicate(h)

        again = await receive_until(comm, seen(lambda h: bool(actions_of(h)) and "job-retry" in h), timeout=20)
        assert "job-promote" not in again
        failed_live = [h for h in since_running if "job-live" in h and "state-failed" in h and "Failure reason" in h]
        live = (
            failed_live[-1]
            if failed_live
            else await receive_until(comm, lambda h: "job-live" in h and "state-failed" in h and "Failure reason" in h)
        )
        assert "card service down" in live and "finished (failed)" in live
        await comm.disconnect()
    finally:
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
