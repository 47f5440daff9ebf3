"""Alerting in the running monitor, end to end: real Node BullMQ jobs pile up, the monitor's
periodic rule evaluation fires the alert, the firing banner reaches a page over the
websocket (the every-page socket), /metrics shows it the Prometheus way, a standby that
takes over writes no second notification, and the alert resolves when the backlog drains."""

from __future__ import annotations

import datetime as dt

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from dashboard.alerts.models import Alert, Notification, Silence
from dashboard.asgi import application
from dashboard.core import dash_redis
from dashboard.live import channels as live
from tests.support.alerting import make_channel, make_rule
from tests.support.live import run_monitor_until, session_headers
from tests.support.servers import run_node

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.node, pytest.mark.asyncio]


def firing_orders(_monitor=None):
    return Alert.objects.filter(state=Alert.FIRING, queue="orders").exists()


def chip_says(text):
    """A monitor predicate: the chip cached for every page (what a socket gets on connect) says ``text``."""

    def holds(_monitor=None):
        cached = dash_redis.cached_fragments(dash_redis.dashboard_redis(), live.ALL)
        return any('id="firing-alerts"' in html and text in html for html in cached)

    return holds


async def receive_until(comm, predicate, limit=50):
    for _ in range(limit):
        html = await comm.receive_from(timeout=10)
        if predicate(html):
            return html
    raise AssertionError("no matching fragment")


async def test_backlog_alert_fires_in_the_monitor_reaches_pages_and_resolves(
    live_setup, settings, redis_url, client, user
):
    settings.QUEUEWATCH_ALERT_INTERVAL_S = 1
    await sync_to_async(
        lambda: make_rule("orders backlog", queue_glob="orders", threshold=3, channels=[make_channel()])
    )()
    await sync_to_async(run_node)("produce.mjs", "add", redis_url, "orders", "5")  # no worker: they wait

    await sync_to_async(run_monitor_until)(firing_orders, name="monitor-a")
    alert = await sync_to_async(Alert.objects.get)(queue="orders")
    assert alert.value_start == 5 and alert.summary == "5 jobs waiting"

    # Any page (here one with no live content of its own) gets the banner on connect.
    headers = await sync_to_async(session_headers)(client, user)
    comm = WebsocketCommunicator(application, "/ws/all/", headers=headers)
    assert (await comm.connect(timeout=5))[0]
    html = await receive_until(comm, lambda h: 'id="firing-alerts"' in h)
    assert "1 firing" in html and "worst warning" in html and "silenced" not in html
    await comm.disconnect()

    body = (await sync_to_async(client.get)("/metrics")).content.decode()
    shown = [(s.labels, s.value) for f in text_string_to_metric_families(body) for s in f.samples if s.name == "ALERTS"]
    assert (
        {
            "alertname": "orders backlog",
            "alertstate": "firing",
            "severity": "warning",
            "connection": "default",
            "prefix": "bull",
            "queue": "orders",
            "item": "",
            "silenced": "false",
        },
        1,
    ) in shown

    # Silenced, it leaves the firing count of the chip (live too), and is counted apart.
    await sync_to_async(
        lambda: Silence.objects.create(
            queue_glob="orders", ends_at=timezone.now() + dt.timedelta(hours=1), author="a", comment="c"
        )
    )()
    await sync_to_async(run_monitor_until)(chip_says("1 silenced"), name="monitor-s")
    comm = WebsocketCommunicator(application, "/ws/all/", headers=headers)
    assert (await comm.connect(timeout=5))[0]
    html = await receive_until(comm, lambda h: 'id="firing-alerts"' in h)
    assert "1 silenced" in html and "firing</span>" not in html and "worst" not in html
    await comm.disconnect()
    await sync_to_async(lambda: Silence.objects.all().delete())()
    await sync_to_async(run_monitor_until)(chip_says("1 firing"), name="monitor-u")

    # A standby taking over after the first monitor stopped evaluates the same firing alert:
    # no second notification for the same state change.
    await sync_to_async(run_monitor_until)(lambda m: m.stats["ticks"] >= 8, name="monitor-b")
    kinds = await sync_to_async(lambda: list(Notification.objects.values_list("kind", flat=True)))()
    assert kinds == ["firing"]

    # The backlog drains (a worker completes the jobs); the alert resolves and the banner empties.
    await sync_to_async(run_node)("produce.mjs", "recover", redis_url, "orders", "2")
    await sync_to_async(run_monitor_until)(
        lambda m: Alert.objects.filter(queue="orders", state=Alert.RESOLVED).exists(), name="monitor-c"
    )
    kinds = await sync_to_async(lambda: list(Notification.objects.order_by("id").values_list("kind", flat=True)))()
    assert kinds == ["firing", "resolved"]
    comm = WebsocketCommunicator(application, "/ws/all/", headers=headers)
    assert (await comm.connect(timeout=5))[0]
    html = await receive_until(comm, lambda h: 'id="firing-alerts"' in h)
    assert html == '<div id="firing-alerts"></div>'
    await comm.disconnect()
