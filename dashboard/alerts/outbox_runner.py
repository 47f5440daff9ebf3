"""Delivering the notification outbox from the monitor, beside its loop.

Only the leader sends, and rows are claimed with compare-and-swap updates anyway, so even two
senders would not deliver a row twice. It runs in a thread of its own because one webhook may
take up to its timeout (30 s at most) to answer: live updates must not wait for it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from django.db import close_old_connections

from dashboard.alerts.sender import prune_outbox, send_due
from queues.cron import Job, Periodic

SEND_INTERVAL = 1.0  # s between looks at the outbox when it is empty
SEND_BUDGET = 5.0  # s a call may keep starting deliveries; what is left goes on the next
PRUNE_INTERVAL = 24 * 3600.0


class OutboxRunner:
    """Sends the outbox every second and prunes it daily, on the monitor's one scheduler
    (``queues.cron.Periodic``), in a thread of its own."""

    def __init__(self, *, leading: Callable[[], bool], interval: float = SEND_INTERVAL):
        self.leading = leading
        self.stop_event = threading.Event()
        self.periodic = Periodic(
            [
                Job("send-outbox", lambda: send_due(budget_s=SEND_BUDGET), every=interval),
                Job("prune-outbox", prune_outbox, every=PRUNE_INTERVAL, first_after=60.0),  # not mid-takeover
            ]
        )
        self.thread = threading.Thread(target=self._loop, name="outbox-runner", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self, timeout: float = 35.0) -> None:
        self.stop_event.set()
        self.thread.join(timeout)

    def _loop(self) -> None:
        while not self.stop_event.wait(self.periodic.seconds_until_next()):
            if not self.leading():
                continue
            try:
                self.periodic.run_due()  # logs and reschedules a failing job
            finally:
                close_old_connections()
