"""In real Chromium, through the shipped web server (uvicorn) and the monitor process: a dead-letter
queue made the demo's way (payments that failed for good in a gateway outage, dead-lettered as
envelopes ``{"source", "original_id", "data", "failedReason"}``) is redriven from its queue page.
The preview recognises the envelope, the admin confirms it there, the preview comes back showing
what the source queue will receive (the original data, unwrapped), and after the confirmed redrive the
copies complete in the source queue under the demo's own payments processor (a real Python
BullMQ worker)."""
# Literal `bull:` keys kept: the session's app (uvicorn) and monitor serve the Node-built database, prefix 'bull'.

from __future__ import annotations

import asyncio
import json
import random
import threading

import pytest
from bullmq import Queue, Worker

from dashboard.demo.processors import GATEWAY, PROCESSORS
from dashboard.demo.runtime import close_worker
from dashboard.demo.scenario import dead_letter_of
from tests.support.browser import log_in, run_async
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.node]

SOURCE = "e2e-pay"
DLQ = "e2e-pay-dlq"  # a dead-letter queue by the default pattern *-dlq, of SOURCE
N = 4


def payment(i: int) -> dict:
    return {
        "order_id": f"ORD-{i}",
        "amount_cents": 1000 + i,
        "currency": "EUR",
        "card": f"tok_{i:06d}",
        "customer": {"id": f"cus_{i}", "email": f"c{i}@example.com", "api_key": "sk_live_x"},
    }


async def add_payments(url: str) -> None:
    payments = Queue(SOURCE, {"connection": url, "prefix": "bull"})
    try:
        for i in range(N):
            await payments.add("charge", payment(i), {"attempts": 1})
    finally:
        await payments.close()


async def dead_letter(url: str, failed: list[tuple[str, dict, str]]) -> None:
    """What the demo workload does with a payment that failed for good in an outage."""
    dlq = Queue(DLQ, {"connection": url, "prefix": "bull"})
    try:
        for job_id, data, reason in failed:
            body, opts = dead_letter_of(job_id, data, reason)
            await dlq.add("charge", body, opts)
    finally:
        await dlq.close()


def run_payments_worker(url: str, stop: threading.Event) -> None:
    async def main() -> None:
        worker = Worker(SOURCE, PROCESSORS["payments"], {"connection": url, "prefix": "bull", "autorun": False})
        runner = asyncio.ensure_future(worker.run())
        while not stop.is_set():
            await asyncio.sleep(0.1)
        await close_worker(worker, runner)

    asyncio.run(main())


def test_redrive_the_demo_dead_letters_and_they_complete(page, live_app, node_fixture_db, monkeypatch):
    url, client = node_fixture_db.url, node_fixture_db.client()
    monkeypatch.setattr(random, "random", lambda: 0.5)  # no random gateway timeout: the redrive is under test
    monkeypatch.setattr(GATEWAY, "down_until", 0.0)
    GATEWAY.take_down(600)  # the outage
    stop = threading.Event()
    worker = threading.Thread(target=run_payments_worker, args=(url, stop))
    worker.start()
    try:
        run_async(add_payments, url)
        wait_for(lambda: client.zcard(f"bull:{SOURCE}:failed") == N, timeout=60)
        failed = []
        for raw in client.zrange(f"bull:{SOURCE}:failed", 0, -1):
            job_id = raw.decode()
            data, reason = client.hmget(f"bull:{SOURCE}:{job_id}", "data", "failedReason")
            failed.append((job_id, json.loads(data), reason.decode()))
        assert all("payment gateway unavailable" in reason for _id, _data, reason in failed)
        run_async(dead_letter, url, failed)
        GATEWAY.down_until = 0.0  # the outage is over

        log_in(page, live_app)
        page.goto(f"{live_app.url}/q/default/bull/{DLQ}/")
        page.wait_for_selector("#live-status[data-state=live]")
        page.click("button.bulk-redrive-waiting")
        preview = page.wait_for_selector("#bulk-panel .bulk-preview")
        assert preview.get_attribute("data-count") == str(N)
        # Nobody has said what these dead letters look like: the preview says they look like
        # envelopes, and that a copy as they are would fail in the source queue.
        detected = page.locator("#bulk-panel .envelope-detected")
        assert "look like envelopes" in detected.inner_text()
        assert "failedReason" in page.locator("#bulk-panel pre.receives").first.inner_text()
        page.click("#bulk-panel button.confirm-envelope")

        # The preview comes back: what SOURCE will receive for a sample job is the original data.
        page.wait_for_selector("#bulk-panel .envelope-confirmed")
        page.wait_for_selector('#bulk-panel .redrive-plan[data-payload-field="data"]')
        assert page.locator("#bulk-panel .bulk-preview").get_attribute("data-count") == str(N)
        assert page.locator("#bulk-panel .envelope-detected").count() == 0
        receives = json.loads(page.locator("#bulk-panel pre.receives").first.inner_text())
        assert set(receives) == set(payment(0)) and receives["customer"]["id"].startswith("cus_")
        assert "originally job" in page.locator("#bulk-panel .redrive-sample").first.inner_text()

        page.fill("#bulk-panel input[name=rate]", "0")
        page.fill("#bulk-panel input[name=reason]", "gateway back after the outage")
        page.click("#bulk-panel form.confirm button[type=submit]")
        page.wait_for_selector(".task-progress[data-state=done]", timeout=60_000)
        assert page.locator(".task-progress .moved").inner_text() == str(N)
        assert client.llen(f"bull:{DLQ}:wait") == 0

        # The copies complete in the source queue; the originals stay failed, nothing new fails.
        wait_for(lambda: client.zcard(f"bull:{SOURCE}:completed") == N, timeout=60)
        assert client.zcard(f"bull:{SOURCE}:failed") == N
        for raw in client.zrange(f"bull:{SOURCE}:completed", 0, -1):
            data = json.loads(client.hget(f"bull:{SOURCE}:{raw.decode()}", "data"))
            assert set(data) == set(payment(0))
    finally:
        stop.set()
        worker.join(timeout=60)
