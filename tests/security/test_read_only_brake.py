"""Read-only mode is an emergency brake. With ``QUEUEWATCH_READ_ONLY`` on, a running
bulk task stops before its next batch (cancelled, with a message saying why; what moved stays
moved), and operators may still cancel tasks: cancelling writes nothing to Redis."""
# Literal `bull:` keys kept: a monitor runs the task, and 'writes nothing' is checked over the whole keyspace.

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse

from dashboard.accounts.models import ApiToken
from dashboard.actions import services as operations
from dashboard.actions.models import BulkTask
from dashboard.audit.models import AuditEntry
from queues.keys import QueueRef
from tests.support.seeding import seed_failed
from tests.support.waiting import wait_for


@pytest.fixture
def operator():
    user = User.objects.create_user("op", password="pw")
    user.groups.add(Group.objects.get_or_create(name="operator")[0])
    return user


def start_retry(operator, queue: QueueRef, *, rate: float | None) -> BulkTask:
    return operations.bulk_start(
        user=operator,
        via="page",
        queue=queue,
        action="retry",
        chosen=operations.Selection(state="failed"),
        reason="drill",
        rate=rate,
    )


@pytest.mark.django_db(transaction=True)
def test_switching_read_only_on_stops_a_running_task(running_monitor, live_setup, settings, operator, client):
    queue = QueueRef("default", "bull", "brake")
    seed_failed(live_setup, queue, 200)
    task = start_retry(operator, queue, rate=20.0)  # paced: many batches, a brake point between each
    wait_for(lambda: BulkTask.objects.get(pk=task.pk).moved >= 3)

    settings.QUEUEWATCH_READ_ONLY = True
    wait_for(lambda: BulkTask.objects.get(pk=task.pk).state == BulkTask.CANCELLED)

    row = BulkTask.objects.get(pk=task.pk)
    assert "read-only mode" in row.error
    assert 3 <= row.moved < 200
    moved_then = live_setup.llen("bull:brake:wait")
    assert moved_then == row.moved and live_setup.zcard("bull:brake:failed") == 200 - row.moved
    entry = AuditEntry.objects.get(task=row, via="task")
    assert entry.outcome == AuditEntry.PARTIAL and "read-only mode" in entry.message
    # The page says why in the reader's language (the row's error and the audit stay English).
    client.force_login(operator)
    arabic = client.get(reverse("task", args=[row.pk]), HTTP_ACCEPT_LANGUAGE="ar").content.decode()
    assert "أُوقفت: Queuewatch في وضع القراءة فقط" in arabic and "What moved stays moved" not in arabic
    english = client.get(reverse("task", args=[row.pk]), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Stopped: Queuewatch is in read-only mode" in english

    # A task confirmed before the switch but not started yet never starts moving jobs.
    settings.QUEUEWATCH_READ_ONLY = False
    other = QueueRef("default", "bull", "brake-2")
    seed_failed(live_setup, other, 5)
    settings.QUEUEWATCH_READ_ONLY = True
    pending = BulkTask.objects.create(
        created_by=operator,
        action="retry",
        connection="default",
        prefix="bull",
        queue="brake-2",
        selection={"state": "failed"},
        before_ms=operations.now_ms(),
        reason="confirmed before the switch",
    )
    wait_for(lambda: BulkTask.objects.get(pk=pending.pk).state == BulkTask.CANCELLED)
    assert BulkTask.objects.get(pk=pending.pk).moved == 0 and live_setup.zcard("bull:brake-2:failed") == 5


@pytest.mark.django_db
def test_operators_may_cancel_tasks_in_read_only_mode(client, settings, operator, scratch_queues):
    for name in ("one", "two"):
        seed_failed(scratch_queues, QueueRef("default", "bull", name), 3)
    page_task = start_retry(operator, QueueRef("default", "bull", "one"), rate=None)
    api_task = start_retry(operator, QueueRef("default", "bull", "two"), rate=None)
    settings.QUEUEWATCH_READ_ONLY = True
    before = redis_contents(scratch_queues)

    client.force_login(operator)
    page = client.get(reverse("task", args=[page_task.pk]))
    assert b"can-cancel" in page.content  # the cancel button is shown, though acting is not
    response = client.post(reverse("task_cancel", args=[page_task.pk]))
    assert response.status_code == 200
    assert BulkTask.objects.get(pk=page_task.pk).state == BulkTask.CANCELLED

    _, token = ApiToken.issue(operator)
    response = client.generic(
        "POST",
        reverse("api_task_cancel", args=[api_task.pk]),
        data="{}",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 200, response.content
    assert json.loads(response.content)["state"] == BulkTask.CANCELLED

    # Only cancels were allowed: starting work is still refused, and the monitored Redis is
    # exactly as it was.
    refused = client.post(
        reverse("bulk_start", args=["default", "bull", "one"]), {"action": "retry", "state": "failed", "reason": "x"}
    )
    assert refused.status_code == 403
    assert redis_contents(scratch_queues) == before


def redis_contents(r) -> dict:
    return {key: r.dump(key) for key in r.scan_iter()}
