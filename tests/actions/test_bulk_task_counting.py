"""A bulk task in the monitor whose filter reads jobs, over a state bigger than
QUEUEWATCH_SCAN_SAMPLE: it starts without reading the whole state to count its total, says how far
through the state it is while it runs, and ends with the exact total."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from dashboard.actions import services as operations
from dashboard.actions.models import BulkTask
from dashboard.audit.models import AuditEntry
from queues.keys import QueueRef
from tests.support.accounts import user_with
from tests.support.seeding import seed_failed
from tests.support.waiting import wait_for


@pytest.mark.django_db(transaction=True)
def test_a_task_beyond_the_scan_sample_counts_as_it_goes_and_ends_exact(running_monitor, live_setup, settings, client):
    settings.QUEUEWATCH_SCAN_SAMPLE = 100
    operator = user_with("operator")
    queue = QueueRef("default", "bull", "counting")
    seed_failed(live_setup, queue, 600, name=lambda i: "a" if i % 3 == 0 else "b")  # 200 named "a"
    task = operations.bulk_start(
        user=operator,
        via="page",
        queue=queue,
        action="retry",
        chosen=operations.Selection(state="failed", name="a"),
        reason="drill",
        rate=100.0,
    )

    def counting():
        row = BulkTask.objects.get(pk=task.pk)
        return row if row.state == BulkTask.RUNNING and row.moved else None

    row = wait_for(counting)
    assert row.total is None and row.remaining is None and 0 < row.percent < 100
    client.force_login(operator)
    html = client.get(reverse("task", args=[task.pk])).content.decode()
    total = re.sub(r"<[^>]+>", "", re.search(r"<dt>Total</dt><dd>(.*?)</dd>", html).group(1))
    assert re.fullmatch(r"counting: \d+ of 600 examined", total), total

    done = wait_for(
        lambda: BulkTask.objects.get(pk=task.pk).state == BulkTask.DONE and BulkTask.objects.get(pk=task.pk), timeout=30
    )
    assert (done.total, done.moved, done.skipped, done.percent) == (200, 200, 0, 100)
    assert live_setup.llen(queue.key("wait")) == 200 and live_setup.zcard(queue.key("failed")) == 400
    assert "moved 200, skipped 0, failed 0 of 200." in AuditEntry.objects.get(task=done, via="task").message
