"""Workers per queue against real Node BullMQ 6.7 workers that start and stop while the monitor
runs: the monitor's one CLIENT LIST per period finds them by the connection
names BullMQ gives them, the queue page lists them (name, address, age, idle), the overview
counts them, ``/metrics`` exports the count (``queuewatch_queue_workers``; no sample while unknown),
and the "jobs waiting, no workers" rule fires, resolves and fires again."""

from __future__ import annotations

import re
import uuid

import pytest
from django.urls import reverse
from prometheus_client.parser import text_string_to_metric_families

from dashboard.alerts.models import Alert, AlertRule
from dashboard.core import dash_redis
from queues.connections import ConnectionSpec
from queues.keys import QueueRef
from tests.support.health import queue_state
from tests.support.live import monitor_thread
from tests.support.node_workers import NodeWorkers
from tests.support.redis_db import point_at
from tests.support.servers import node_available
from tests.support.waiting import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.node,
    pytest.mark.skipif(not node_available(), reason="needs Node.js and npm"),
]


def worker_names(monitor, q: QueueRef):
    st = monitor.tracker.states.get(q)
    return None if st is None or st.workers is None else sorted(w.name for w in st.workers)


def scraped_workers(client) -> dict[str, float]:
    """``queuewatch_queue_workers`` from a real scrape of /metrics: queue name -> value."""
    response = client.get(reverse("metrics"))
    assert response.status_code == 200
    return {
        s.labels["queue"]: s.value
        for f in text_string_to_metric_families(response.content.decode())
        for s in f.samples
        if s.name == "queuewatch_queue_workers"
    }


def test_workers_start_and_stop_show_on_the_pages_and_drive_the_no_workers_rule(
    live_setup, redis_url, settings, logged_in
):
    settings.QUEUEWATCH_WORKERS_INTERVAL_S = 1
    settings.QUEUEWATCH_ALERT_INTERVAL_S = 0.5
    mail, other = QueueRef("default", "bull", "mail"), QueueRef("default", "bull", "other")
    AlertRule.objects.create(name="nobody home", kind="no_workers", threshold=0, queue_glob="mail", repeat_minutes=0)
    with NodeWorkers(redis_url) as node:
        node.send("add", queue="mail", jobs=[{"name": "send"}] * 4)
        node.send("add", queue="other", jobs=[{"name": "x"}])
        node.send("start", id="o", queue="other", hold=True)  # another queue's worker is not mail's
        with monitor_thread(tick=0.3, name="workers-test", lock_ttl_ms=2000) as monitor:
            wait_for(lambda: worker_names(monitor, mail) == [] and worker_names(monitor, other) == [""], timeout=20)
            wait_for(lambda: Alert.objects.filter(rule__name="nobody home", state=Alert.FIRING).exists(), timeout=10)
            page = logged_in.get(reverse("queue", args=["default", "bull", "mail"])).content.decode()
            assert "No worker is connected to this queue." in page
            wait_for(lambda: scraped_workers(logged_in) == {"mail": 0, "other": 1}, timeout=10)

            # Held jobs keep the rest waiting: the rule must resolve because of the workers.
            node.send("start", id="a", queue="mail", name="box-7", hold=True)
            node.send("start", id="b", queue="mail", hold=True)
            wait_for(lambda: worker_names(monitor, mail) == ["", "box-7"], timeout=10)
            # The same connections BullMQ's own Queue.getWorkers() reports.
            truth = node.send("getWorkers", queue="mail")["workers"]
            assert sorted(w.addr for w in monitor.tracker.states[mail].workers) == sorted(w["addr"] for w in truth)
            wait_for(lambda: Alert.objects.get(rule__name="nobody home").state == Alert.RESOLVED, timeout=10)
            page = logged_in.get(reverse("queue", args=["default", "bull", "mail"])).content.decode()
            workers = page[
                page.index('id="queue-workers"') : page.index("</section>", page.index('id="queue-workers"'))
            ]
            assert "box-7" in workers and "(unnamed)" in workers
            assert len(re.findall(r"<code dir=\"ltr\">127\.0\.0\.1:\d+</code>", workers)) == 2
            overview = logged_in.get(reverse("overview")).content.decode()
            assert re.search(r'<td class="num workers">2</td>', overview)
            wait_for(lambda: scraped_workers(logged_in) == {"mail": 2, "other": 1}, timeout=10)

            node.send("stop", id="a")
            node.send("stop", id="b")
            wait_for(lambda: worker_names(monitor, mail) == [], timeout=10)
            wait_for(lambda: scraped_workers(logged_in) == {"mail": 0, "other": 1}, timeout=10)
            wait_for(lambda: Alert.objects.filter(rule__name="nobody home", state=Alert.FIRING).exists(), timeout=10)
            # A new incident on the same target; the first one stays resolved.
            assert sorted(Alert.objects.filter(rule__name="nobody home").values_list("state", flat=True)) == [
                Alert.FIRING,
                Alert.RESOLVED,
            ]


def test_workers_unknown_where_client_list_is_refused_have_no_sample_not_zero(
    live_setup, redis_db, settings, logged_in
):
    """A monitored connection whose user may not run CLIENT LIST (as on some managed services):
    the queue's other figures are exported, its worker gauge is not, so "unknown" never reads
    as "no workers"."""
    settings.QUEUEWATCH_WORKERS_INTERVAL_S = 1
    admin = redis_db.client()
    user, password = f"noclients-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    admin.execute_command("ACL", "SETUSER", user, "on", f">{password}", "~*", "&*", "+@all", "-client|list")
    try:
        point_at(
            settings,
            ConnectionSpec("default", redis_db.url.replace("redis://", f"redis://{user}:{password}@"), ("bull",)),
        )
        with NodeWorkers(redis_db.url) as node:
            node.send("add", queue="mail", jobs=[{"name": "send"}])
            node.send("start", id="a", queue="mail", hold=True)  # a worker exists; nobody may see it
            with monitor_thread(tick=0.3, name="refused-test", lock_ttl_ms=2000):
                wait_for(
                    lambda: "default" in ((dash_redis.read_workers(live_setup) or {}).get("unknown") or {}), timeout=20
                )
                wait_for(lambda: (queue_state("mail")[0] or {}).get("counts", {}).get("active") == 1, timeout=20)
                assert queue_state("mail")[0]["workers"] is None
                response = logged_in.get(reverse("metrics")).content.decode()
                assert (
                    'queuewatch_queue_jobs{connection="default",prefix="bull",queue="mail",state="active"} 1'
                    in response
                )
                assert "# TYPE queuewatch_queue_workers gauge" in response
                assert "queuewatch_queue_workers{" not in response
    finally:
        admin.execute_command("ACL", "DELUSER", user)
