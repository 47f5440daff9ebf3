"""When no monitor has led for minutes (the leader lock held by someone else), a standby monitor
tells the alert channels itself, through the outbox: one FIRING per outage however many
standbys and checks see it, then one RESOLVED once a monitor leads again. Without a channel it
only logs."""

from __future__ import annotations

import json
import logging
import time

import pytest

from dashboard.alerts.models import Channel, Notification
from dashboard.core import dash_redis
from tests.support.live import monitor_thread
from tests.support.receivers import WebhookReceiver
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

LOCK_KEY = "queuewatch:monitor:leader"


def hijack(client) -> int:
    """The lock held by a token no monitor has; a monitor last led five minutes ago."""
    led_at = int(time.time() * 1000) - 5 * 60_000
    client.set(LOCK_KEY, "not-a-monitor")
    dash_redis.put_document(client, dash_redis.LAST_LED_KEY, {"at": led_at, "monitor": "m"}, ex=3600)
    return led_at


def test_standbys_send_one_notification_per_outage_and_one_when_a_monitor_leads_again(live_setup, settings):
    settings.QUEUEWATCH_STANDBY_CHECK_S = 0.2
    receiver = WebhookReceiver().start()
    try:
        Channel.objects.create(name="ops", kind=Channel.WEBHOOK, config={"url": receiver.url})
        Channel.objects.create(name="off", kind=Channel.WEBHOOK, config={"url": receiver.url}, enabled=False)
        led_at = hijack(live_setup)
        with (
            monitor_thread(tick=0.3, name="standby-a", lock_ttl_ms=2000) as a,
            monitor_thread(tick=0.3, name="standby-b", lock_ttl_ms=2000) as b,
        ):
            wait_for(lambda: len(receiver.received) >= 1, timeout=10)
            time.sleep(1.5)  # several more checks by each standby
            assert len(receiver.received) == 1 and a.ticks == b.ticks == 0
            firing = json.loads(receiver.received[0].body)
            assert firing["status"] == "firing" and "No monitor has led for 5 min" in firing["alerts"][0]["summary"]

            live_setup.delete(LOCK_KEY)  # the hijack ends: one of them takes the lead
            wait_for(lambda: len(receiver.received) >= 2, timeout=10)
            time.sleep(1.0)
        assert receiver.keys() == [f"monitor-silent:{led_at}:firing", f"monitor-silent:{led_at}:resolved"]
        assert json.loads(receiver.received[1].body)["status"] == "resolved"
        assert set(Notification.objects.values_list("state", flat=True)) == {Notification.SENT}
    finally:
        receiver.stop()


def test_without_a_channel_the_standby_only_logs(live_setup, settings, caplog):
    settings.QUEUEWATCH_STANDBY_CHECK_S = 0.2
    hijack(live_setup)
    with caplog.at_level(logging.WARNING, logger="queuewatch.monitor"):
        with monitor_thread(tick=0.3, name="standby", lock_ttl_ms=2000):
            wait_for(lambda: "no alert channel is enabled" in caplog.text, timeout=10)
    assert not Notification.objects.exists()
