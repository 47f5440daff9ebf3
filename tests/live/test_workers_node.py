"""Workers per queue against real Node BullMQ 6.7 workers that start and stop while the monitor
runs (issue 14, part 4): the monitor's one CLIENT LIST per period finds them by the connection
names BullMQ gives them, the queue page lists them (name, address, age, idle), the overview
counts them, and the "jobs waiting, no workers" rule fires, resolves and fires again."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from dashboard.alerts.models import Alert, AlertRule
from queues.keys import QueueRef
from tests.support.live import monitor_thread
from tests.support.node_workers import NodeWorkers
from tests.support.servers import node_available
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.node,
              pytest.mark.skipif(not node_available(), reason="needs Node.js and npm")]


def worker_names(monitor, q: QueueRef):
    st = monitor.tracker.states.get(q)
    return None if st is None or st.workers is None else sorted(w.name for w in st.workers)


def test_workers_start_and_stop_show_on_the_pages_and_drive_the_no_workers_rule(live_setup, redis_url, settings,
                                                                                logged_in):
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

            # Held jobs keep the rest waiting: the rule must resolve because of the workers.
            node.send("start", id="a", queue="mail", name="box-7", hold=True)
            node.send("start", id="b", queue="mail", hold=True)
            wait_for(lambda: worker_names(monitor, mail) == ["", "box-7"], timeout=10)
            # The same connections BullMQ's own Queue.getWorkers() reports.
            truth = node.send("getWorkers", queue="mail")["workers"]
            assert sorted(w.addr for w in monitor.tracker.states[mail].workers) == sorted(w["addr"] for w in truth)
            wait_for(lambda: Alert.objects.get(rule__name="nobody home").state == Alert.RESOLVED, timeout=10)
            page = logged_in.get(reverse("queue", args=["default", "bull", "mail"])).content.decode()
            workers = page[page.index('id="queue-workers"'):page.index("</section>", page.index('id="queue-workers"'))]
            assert "box-7" in workers and "(unnamed)" in workers
            assert len(re.findall(r"<code dir=\"ltr\">127\.0\.0\.1:\d+</code>", workers)) == 2
            overview = logged_in.get(reverse("overview")).content.decode()
            assert re.search(r'<td class="num workers">2</td>', overview)

            node.send("stop", id="a")
            node.send("stop", id="b")
            wait_for(lambda: worker_names(monitor, mail) == [], timeout=10)
            wait_for(lambda: Alert.objects.filter(rule__name="nobody home", state=Alert.FIRING).exists(), timeout=10)
            # A new incident on the same target; the first one stays resolved.
            assert sorted(Alert.objects.filter(rule__name="nobody home").values_list("state", flat=True)) == [
                Alert.FIRING, Alert.RESOLVED]
