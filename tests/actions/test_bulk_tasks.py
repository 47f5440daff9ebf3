"""Bulk tasks run by the monitor with real Node BullMQ jobs: an error group is redriven (counters
reset) with progress reaching a websocket client; cancel stops it with what moved staying
moved; one task per queue; a monitor killed with SIGKILL mid-task is replaced by one that
finishes it with every job moved exactly once; a Node worker then completes the jobs."""
# Literal `bull:` keys kept: a monitor runs the tasks and discovers every queue of its database.

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Group, User

from dashboard.actions import services as operations
from dashboard.actions.models import BulkTask
from dashboard.asgi import application
from dashboard.audit.models import AuditEntry
from dashboard.core.db import db_retry
from queues.error_groups import fingerprint
from queues.keys import QueueRef
from tests.support.live import session_headers
from tests.support.parallel import heavy_trial
from tests.support.servers import ROOT, run_node
from tests.support.waiting import receive_until, wait_for

pytestmark = [pytest.mark.node]


@pytest.fixture
def operator():  # database access comes from each test's django_db mark
    user = User.objects.create_user("op", password="pw")
    # get_or_create: a transactional test's flush removed the groups the migration made.
    user.groups.add(Group.objects.get_or_create(name="operator")[0])
    return user


def seed(url: str, queue: str, failed: int, *, reason: str, name: str = "work") -> dict:
    return run_node("seed_actions.mjs", url, queue, str(failed), "0", "0", name, reason)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_error_group_redrive_runs_in_the_monitor_with_live_progress(
    running_monitor, live_setup, redis_url, client, operator
):
    url = redis_url
    bad = await sync_to_async(seed)(url, "billing", 40, reason="card declined for customer")
    other = await sync_to_async(seed)(url, "billing", 5, reason="timeout talking to")
    queue = QueueRef("default", "bull", "billing")
    group = fingerprint("card declined for customer 7")
    chosen = operations.Selection(state="failed", fingerprint=group)
    preview = await sync_to_async(operations.bulk_preview)(queue=queue, action="redrive", chosen=chosen)
    assert preview.count == 40

    task = await sync_to_async(operations.bulk_start)(
        user=operator, via="page", queue=queue, action="redrive", chosen=chosen, reason="fixed in v2", rate=40.0
    )
    headers = await sync_to_async(session_headers)(client, operator)
    comm = WebsocketCommunicator(application, f"/ws/tasks/{task.pk}/", headers=headers)
    assert (await comm.connect(timeout=5))[0]
    seen = []
    await receive_until(comm, lambda h: seen.append(h) or 'data-state="done"' in h, timeout=30)
    await comm.disconnect()
    final = seen[-1]
    assert 'data-percent="100"' in final and re.search(
        r'class="moved"><data class="qw-num" value="40">40</data><', final
    )
    # Progress was shown on the way, not only at the end (40 jobs at 40/s: several updates).
    assert any(re.search(r'data-percent="([1-9]\d?)"', h) for h in seen[:-1])

    row = await sync_to_async(BulkTask.objects.get)(pk=task.pk)
    assert (row.state, row.total, row.moved, row.skipped, row.failed) == ("done", 40, 40, 0, 0)
    # Exactly the group went back to work, with its attempt counters reset; the rest stayed.
    assert live_setup.zcard("bull:billing:failed") == 5
    assert live_setup.llen("bull:billing:wait") == 40
    assert all(live_setup.hget(f"bull:billing:{i}", "atm") is None for i in bad["failed"])
    assert all(live_setup.zscore("bull:billing:failed", i) is not None for i in other["failed"])
    done = await sync_to_async(AuditEntry.objects.get)(task=row, via="task")
    assert (done.outcome, done.affected, done.reason, done.username) == ("ok", 40, "fixed in v2", "op")

    # The redriven jobs get their full attempt budget again under a real Node worker.
    result = await sync_to_async(run_node)("produce.mjs", "recover", url, "billing", "2")
    assert result["counts"]["completed"] == 40 and result["counts"]["failed"] == 5


@pytest.mark.django_db(transaction=True)
def test_cancel_stops_a_paced_task_and_what_moved_stays_moved(running_monitor, live_setup, redis_url, operator):
    url = redis_url
    seed(url, "slow", 60, reason="boom")
    queue = QueueRef("default", "bull", "slow")
    task = operations.bulk_start(
        user=operator,
        via="api",
        queue=queue,
        action="retry",
        chosen=operations.Selection(state="failed"),
        reason="try again",
        rate=10.0,
    )
    # One task per queue: a second one is refused while this one runs.
    with pytest.raises(operations.TaskAlreadyRunning):
        operations.bulk_start(
            user=operator,
            via="api",
            queue=queue,
            action="discard",
            chosen=operations.Selection(state="failed"),
            reason="x",
            rate=None,
        )

    # Polled while the monitor's bulk runner writes the row: SQLite may report a lock, as in the app.
    def current():
        return db_retry(lambda: BulkTask.objects.get(pk=task.pk))

    wait_for(lambda: current().moved >= 5, timeout=20)
    operations.task_cancel(user=operator, via="api", task=current())
    wait_for(lambda: current().state == BulkTask.CANCELLED, timeout=20)
    row = BulkTask.objects.get(pk=task.pk)
    assert 5 <= row.moved < 60
    assert live_setup.llen("bull:slow:wait") == row.moved
    assert live_setup.zcard("bull:slow:failed") == 60 - row.moved
    entry = AuditEntry.objects.get(task=row, via="task")
    assert entry.outcome == "partial" and entry.affected == row.moved
    # Now the queue is free for the next task.
    operations.bulk_start(
        user=operator,
        via="api",
        queue=queue,
        action="discard",
        chosen=operations.Selection(state="failed"),
        reason="give up",
        rate=None,
    )


class MonitorProcess:
    def __init__(self, name: str, env: dict):
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "monitor", "--name", name, "--lock-ttl-ms", "1000"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(15)


def task_row(db_path, task_id: int) -> dict:
    with sqlite3.connect(db_path, timeout=10) as conn:
        conn.row_factory = sqlite3.Row
        return dict(conn.execute("select * from dashboard_bulktask where id=?", (task_id,)).fetchone())


@pytest.mark.slow  # > 20 s (--durations)
@heavy_trial
def test_a_killed_monitor_is_replaced_and_the_task_finishes_exactly_once(tmp_path, redis_client, redis_url):
    client, url = redis_client, redis_url
    db_path = tmp_path / "crash.sqlite3"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("QUEUEWATCH_")},
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "QUEUEWATCH_SECRET_KEY": "t" * 40,
        "QUEUEWATCH_REDIS_URL": url,
        "DATABASE_URL": f"sqlite:///{db_path}",
        "QUEUEWATCH_MONITOR_TICK_MS": "500",
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    seeded = run_node("seed_actions.mjs", url, "orders", "0", "0", "300")
    # The dead-letter queue "orders-dlq" is redriven into "orders" at 100 jobs/s.
    start = (
        "from dashboard.actions import services as o; from queues.keys import QueueRef; "
        "t = o.bulk_start(user=None, via='api', queue=QueueRef('default', 'bull', 'orders-dlq'), action='redrive', "
        "chosen=o.Selection(state='waiting'), reason='crash test', rate=100.0); print(t.pk)"
    )
    task_id = int(
        subprocess.run(
            [sys.executable, "manage.py", "shell", "--no-imports", "-c", start],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    first = MonitorProcess("crash-a", env)
    try:
        wait_for(lambda: 40 <= task_row(db_path, task_id)["moved"], timeout=30, interval=0.02)
        first.kill()  # mid-task, between any two steps
        moved_at_kill = task_row(db_path, task_id)["moved"]
        assert moved_at_kill < 300 and task_row(db_path, task_id)["state"] == "running"
        second = MonitorProcess("crash-b", env)
        try:
            wait_for(lambda: task_row(db_path, task_id)["state"] == "done", timeout=60)
        finally:
            second.kill()
    finally:
        first.kill()
    row = task_row(db_path, task_id)
    assert (row["total"], row["moved"], row["failed"]) == (300, 300, 0), row
    # Every dead letter is in the source queue exactly once, under its deterministic id.
    assert client.llen("bull:orders-dlq:wait") == 0
    waiting = [i.decode() for i in client.lrange("bull:orders:wait", 0, -1)]
    assert len(waiting) == len(set(waiting)) == 300
    assert set(waiting) == {f"redrive-orders-dlq-{i}" for i in seeded["dlq"]}
    assert json.loads(client.hget("bull:orders:redrive-orders-dlq-1", "data"))["why"] == "dead letter"
