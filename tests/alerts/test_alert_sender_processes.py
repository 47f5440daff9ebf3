"""Two sender processes (two monitors around a failover) racing over one outbox in a shared
database file: every notification reaches the receiver exactly once. Real processes, real
SQLite locking, real HTTP; nothing is interleaved by hand."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

from tests.support.receivers import WebhookReceiver
from tests.support.servers import ROOT

ROWS = 30

SETUP = f"""
import django, sys
django.setup()
from dashboard.alerts.models import Channel, Notification
channel = Channel.objects.create(name="race", kind="webhook", config={{"url": sys.argv[1], "shape": "queuewatch"}})
for n in range({ROWS}):
    Notification.objects.create(channel=channel, idempotency_key=f"race-{{n}}", kind="firing", subject=f"#{{n}}",
                                payload={{"status": "firing", "alerts": []}})
"""

SENDER = """
import django, sys
django.setup()
from dashboard.alerts.models import Notification
from dashboard.alerts.sender import send_due
sys.stdin.readline()  # both processes start racing on the same signal
delivered = 0
while Notification.objects.filter(state__in=["pending", "sending"]).exists():
    delivered += send_due(limit=4)
print(delivered)
"""


def test_two_sender_processes_never_deliver_a_row_twice(tmp_path):
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("QUEUEWATCH_", "DJANGO_"))},
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "QUEUEWATCH_INSECURE_DEV": "1",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'outbox.sqlite3'}",
        "QUEUEWATCH_WEBHOOK_ALLOW": "127.0.0.1",
    }
    receiver = WebhookReceiver().start()
    try:
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        subprocess.run([sys.executable, "-c", SETUP, receiver.url], cwd=ROOT, env=env, check=True)
        senders = [
            subprocess.Popen(
                [sys.executable, "-c", SENDER],
                cwd=ROOT,
                env=env,
                text=True,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for _ in range(2)
        ]
        for p in senders:
            p.stdin.write("go\n")
            p.stdin.flush()
        results = [p.communicate(timeout=120) for p in senders]
        assert all(p.returncode == 0 for p in senders), [err[-2000:] for _, err in results]

        delivered = [int(out.strip()) for out, _ in results]
        assert sum(delivered) == ROWS
        counts = Counter(receiver.keys())
        assert len(counts) == ROWS and set(counts.values()) == {1}, counts.most_common(3)
    finally:
        receiver.stop()
