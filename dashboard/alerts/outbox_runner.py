"""Delivering the notification outbox from the monitor, beside its loop.

Only the leader sends, and rows are claimed with compare-and-swap updates anyway, so even two
senders would not deliver a row twice. It runs in a thread of its own because one webhook may
take up to its timeout (30 s at most) to answer: live updates must not wait for it.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from django.db import close_old_connections

from dashboard.alerts.sender import prune_outbox, send_due

log = logging.getLogger("queuewatch.outbox")

SEND_INTERVAL = 1.0  # s between looks at the outbox when it is empty
SEND_BUDGET = 5.0  # s a call may keep starting deliveries; what is left goes on the next
PRUNE_INTERVAL = 24 * 3600.0


class OutboxRunner:
    def __init__(self, *, leading: Callable[[], bool], interval: float = SEND_INTERVAL):
        self.leading = leading
        self.interval = interval
        self.stop_event = threading.Event()
        self.next_prune = time.monotonic() + 60.0  # not in the middle of a takeover
        self.thread = threading.Thread(target=self._loop, name="outbox-runner", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self, timeout: float = 35.0) -> None:
        self.stop_event.set()
        self.thread.join(timeout)

    def _loop(self) -> None:
        while not self.stop_event.is_set():
            delivered = 0
            try:
                if self.leading():
                    delivered = send_due(budget_s=SEND_BUDGET)
                    if time.monotonic() >= self.next_prune:
                        prune_outbox()
                        self.next_prune = time.monotonic() + PRUNE_INTERVAL
            except Exception:  # a bug or a database hiccup must not end the sender
                log.exception("outbox runner: sending failed; retrying")
            finally:
                close_old_connections()
            # A full batch may mean more are due: look again at once.
            self.stop_event.wait(0 if delivered >= 100 else self.interval)
