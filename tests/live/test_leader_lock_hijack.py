"""Someone who can write to the dashboard Redis holds the leader lock with a token of their own
(``SET queuewatch:monitor:leader mine``): no monitor leads, and nothing errors. Once no monitor
has led for a few minutes, every page says so and a standby monitor logs it."""

from __future__ import annotations

import logging
import time

import pytest
from django.urls import reverse

from dashboard.core import dash_redis
from tests.support.live import monitor_thread, run_monitor_until
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

LOCK_KEY = "queuewatch:monitor:leader"


def test_a_hijacked_leader_lock_is_shown_on_pages_and_logged_by_standbys(live_setup, logged_in, caplog):
    run_monitor_until(lambda m: m.ticks >= 1)  # a monitor led once: it recorded when
    page = logged_in.get(reverse("overview")).content.decode()
    assert 'id="monitor-silent"' not in page
    # The attack: the lock held by someone else; then time passes (the last record, 5 min old).
    live_setup.set(LOCK_KEY, "not-a-monitor")
    dash_redis.put_document(
        live_setup, dash_redis.LAST_LED_KEY, {"at": int(time.time() * 1000) - 5 * 60_000, "monitor": "m"}, ex=3600
    )
    with caplog.at_level(logging.WARNING, logger="queuewatch.monitor"):
        with monitor_thread(tick=0.3, name="standby", lock_ttl_ms=2000) as standby:
            wait_for(lambda: "no monitor has led for 5 min" in caplog.text, timeout=10)
            assert standby.ticks == 0
    page = logged_in.get(reverse("overview")).content.decode()
    assert 'id="monitor-silent"' in page and "No monitor has led for 5 min" in page
