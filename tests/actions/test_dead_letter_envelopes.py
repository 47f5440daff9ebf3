"""Redriving the demo's dead-letter queue: its dead letters are envelopes
(``{"source", "original_id", "data", "failedReason"}``); the redrive preview recognises the shape,
an admin confirms it, the preview then shows what payments will receive, and the redriven jobs
complete under the demo's own payments worker (a real Python BullMQ worker), with an audit that
says the copies carry the unwrapped data."""
# Literal `bull:` keys kept: a monitor runs the task and discovers every queue of its database.

from __future__ import annotations

import asyncio
import json
import random
import threading

import pytest
from bullmq import Queue, Worker
from django.urls import reverse

from dashboard.actions.models import BulkTask
from dashboard.audit.models import AuditEntry
from dashboard.demo.processors import PROCESSORS
from dashboard.demo.runtime import close_worker
from dashboard.demo.scenario import DLQ_NAME, DLQ_SOURCE, dead_letter_of
from queues.dead_letters import Envelope, detect_envelope, parse_map_value
from tests.support.accounts import user_with
from tests.support.waiting import wait_for

N = 6


def payment(i: int) -> dict:
    """A payment as the demo's producer makes one, which the processor charges."""
    return {
        "order_id": f"ORD-{i}",
        "amount_cents": 1000 + i,
        "currency": "EUR",
        "card": f"tok_{i:06d}",
        "customer": {"id": f"cus_{i}", "email": f"c{i}@example.com", "api_key": "sk_live_x"},
    }


async def dead_letter_payments(url: str) -> None:
    """The demo's path: a payments job fails for good, the workload adds its dead letter."""
    opts = {"connection": url, "prefix": "bull"}
    payments, dlq = Queue(DLQ_SOURCE, opts), Queue(DLQ_NAME, opts)
    try:
        for i in range(N):
            job = await payments.add("charge", payment(i))
            data, dl_opts = dead_letter_of(job.id, job.data, "GatewayTimeout: timed out after 10000 ms")
            await dlq.add("charge", data, dl_opts)
    finally:
        await payments.close()
        await dlq.close()


def run_payments_worker(url: str, stop: threading.Event) -> None:
    async def main() -> None:
        worker = Worker(DLQ_SOURCE, PROCESSORS[DLQ_SOURCE], {"connection": url, "prefix": "bull", "autorun": False})
        runner = asyncio.ensure_future(worker.run())
        while not stop.is_set():
            await asyncio.sleep(0.1)
        await close_worker(worker, runner)

    asyncio.run(main())


def test_the_envelope_is_recognised_only_in_a_common_shape():
    demo = dead_letter_of("7", payment(7), "boom")[0]
    assert detect_envelope([demo, demo]) == Envelope("data", "original_id", "source")
    assert detect_envelope([demo, payment(1)]) is None  # not every sampled job has it
    assert detect_envelope([{"data": 1}]) is None  # "data" alone is not an envelope
    assert detect_envelope([]) is None
    assert parse_map_value("payments") == ("payments", None)
    assert parse_map_value("payments:data:original_id:source") == (
        "payments",
        Envelope("data", "original_id", "source"),
    )
    assert parse_map_value("payments:-") == ("payments", Envelope())


@pytest.mark.django_db(transaction=True)
def test_demo_dead_letters_redriven_complete(running_monitor, live_setup, redis_url, client, monkeypatch):
    monkeypatch.setattr(random, "random", lambda: 0.5)  # no random gateway timeout: the redrive is under test
    asyncio.run(dead_letter_payments(redis_url))
    dlq_ids = [i.decode() for i in live_setup.lrange(f"bull:{DLQ_NAME}:wait", 0, -1)]
    assert len(dlq_ids) == N
    client.force_login(user_with("admin"))
    args = ("default", "bull", DLQ_NAME)
    choose = {"action": "redrive", "state": "waiting"}

    # The preview recognises the envelope nobody has confirmed, and offers the admin to confirm it.
    html = client.post(reverse("bulk_preview", args=args), choose).content.decode()
    assert "These dead letters look like envelopes" in html and "Use this shape for this queue" in html
    confirmed = client.post(
        reverse("queue_action", args=(*args, "set-dlq-envelope")),
        {"data_field": "data", "id_field": "original_id", "source_field": "source"},
        HTTP_HX_REQUEST="true",
    )
    assert "copies the data field" in confirmed.content.decode()

    # Now it shows what payments will receive for a sample job: the original data, no envelope.
    html = client.post(reverse("bulk_preview", args=args), choose).content.decode()
    assert "These dead letters look like envelopes" not in html and 'data-payload-field="data"' in html
    sample = html.split('<pre class="receives" dir="ltr">')[1].split("</pre>")[0]
    assert "order_id" in sample and "failedReason" not in sample and "original_id" not in sample
    assert "originally job" in html

    client.post(reverse("bulk_start", args=args), {**choose, "rate": "0", "reason": "gateway back"})
    task = wait_for(lambda: BulkTask.objects.filter(state=BulkTask.DONE).first(), timeout=30)
    assert task.moved == N and live_setup.llen(f"bull:{DLQ_NAME}:wait") == 0

    stop = threading.Event()
    worker = threading.Thread(target=run_payments_worker, args=(redis_url, stop))
    worker.start()
    try:
        # The N originals and their N redriven copies: every one completes, none fails.
        wait_for(lambda: live_setup.zcard(f"bull:{DLQ_SOURCE}:completed") == 2 * N, timeout=30)
    finally:
        stop.set()
        worker.join(timeout=30)
    assert live_setup.zcard(f"bull:{DLQ_SOURCE}:failed") == 0
    copy_ids = [i.decode() for i in live_setup.zrange(f"bull:{DLQ_SOURCE}:completed", 0, -1)]
    copies = [i for i in copy_ids if i.startswith("redrive-")]
    assert len(copies) == N
    data = json.loads(live_setup.hget(f"bull:{DLQ_SOURCE}:{copies[0]}", "data"))
    assert set(data) == set(payment(0))

    entry = AuditEntry.objects.get(task=task, via="task")
    assert entry.affected == N
    assert entry.selection["kept_by"] == f"{N} new_id, {N} unwrapped"
    confirmation = AuditEntry.objects.get(action="queue.set-dlq-envelope")
    assert confirmation.selection["change"] == {"before": None, "after": "data:original_id:source"}


@pytest.mark.django_db
def test_confirming_the_shape_on_the_preview_shows_the_preview_again_unwrapped(scratch_queues, redis_url, client):
    asyncio.run(dead_letter_payments(redis_url))
    args = ("default", "bull", DLQ_NAME)
    choose = {"action": "redrive", "state": "waiting", "scope": "matching"}
    shape = {"data_field": "data", "id_field": "original_id", "source_field": "source"}

    # An operator sees the shape but may not confirm it: that is an admin's word.
    client.force_login(user_with("operator"))
    html = client.post(reverse("bulk_preview", args=args), choose).content.decode()
    assert "These dead letters look like envelopes" in html and "confirm-envelope" not in html
    refused = client.post(reverse("dlq_envelope_confirm", args=args), {**choose, **shape}, HTTP_HX_REQUEST="true")
    assert refused.status_code == 403 and not AuditEntry.objects.filter(action="queue.set-dlq-envelope").exists()

    # The admin's confirmation answers with the same preview, now showing what payments will receive.
    client.force_login(user_with("admin"))
    html = client.post(reverse("bulk_preview", args=args), choose).content.decode()
    form = html.split('class="envelope-detected', 1)[1].split("</form>", 1)[0]
    assert 'name="state" value="waiting"' in form and 'name="action" value="redrive"' in form
    confirmed = client.post(reverse("dlq_envelope_confirm", args=args), {**choose, **shape}, HTTP_HX_REQUEST="true")
    html = confirmed.content.decode()
    assert confirmed.status_code == 200 and 'class="bulk-preview" data-count="6"' in html
    assert "envelope-confirmed" in html and "copies the data field" in html
    assert 'data-payload-field="data"' in html and "These dead letters look like envelopes" not in html
    sample = json.loads(html.split('<pre class="receives" dir="ltr">')[1].split("</pre>")[0].replace("&quot;", '"'))
    assert set(sample) == set(payment(0))
    assert AuditEntry.objects.get(action="queue.set-dlq-envelope").selection["change"]["after"] == (
        "data:original_id:source"
    )
