"""The "add an overview column" recipe (docs/recipe-column.md), end to end: a column registered
in ``dashboard.browse.columns`` and nowhere else shows on the overview page, sorts it, and
updates live over the websocket when its value changes, with a real monitor running."""
# Literal `bull:` keys kept: a monitor discovers every queue of its (whole, leased) database.

from __future__ import annotations

import json
import re

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.utils.html import format_html

from dashboard.asgi import application
from dashboard.browse import columns
from dashboard.live import channels as live
from queues.keys import QueueRef
from tests.support.live import monitor_thread, overview_view, session_headers
from tests.support.waiting import receive_until, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

ORDERS = QueueRef("default", "bull", "orders")


@pytest.fixture
def schedulers_column():
    """The dummy column: how many job schedulers a queue has. The queue page's header shows
    that figure, the overview row does not: only this column can make the row change."""
    column = columns.OverviewColumn(
        name="schedulers",
        header="Schedulers",
        numeric=True,
        value=lambda sig: sig.snapshot.schedulers,
        cell=lambda value, sig, qurl: format_html('<td class="num schedulers">{}</td>', value),
        sort=lambda s: (s.schedulers, s.queue.name),
    )
    columns.COLUMNS.append(column)
    yield column
    columns.COLUMNS.remove(column)


def add_scheduler(client, queue: str, scheduler_id: str) -> None:
    # What BullMQ's upsertJobScheduler leaves in the sorted set the snapshot counts (ZCARD).
    client.zadd(f"bull:{queue}:repeat", {scheduler_id: 1_700_000_000_000})


def make_queue(client, queue: str) -> None:
    client.hset(f"bull:{queue}:meta", "opts.maxLenEvents", 10000)


def row_of(html: str, queue: QueueRef) -> str | None:
    match = re.search(rf'<tr id="{live.row_id(queue)}">.*?</tr>', html, re.S)
    return match.group(0) if match else None


def test_the_column_shows_on_the_overview_and_sorts_it(schedulers_column, live_setup, logged_in):
    make_queue(live_setup, "orders")
    make_queue(live_setup, "emails")
    for n in range(2):
        add_scheduler(live_setup, "emails", f"nightly-{n}")

    html = logged_in.get("/", {"sort": "schedulers", "dir": "desc"}).content.decode()

    assert (
        '<th class="num" aria-sort="descending"><a href="?sort=schedulers&amp;dir=asc">Schedulers'
        ' <span aria-hidden="true">↓</span></a></th>'
    ) in html
    emails, orders = row_of(html, QueueRef("default", "bull", "emails")), row_of(html, ORDERS)
    assert '<td class="num schedulers">2</td>' in emails and '<td class="num schedulers">0</td>' in orders
    assert html.index(emails) < html.index(orders)  # sorted by the column, descending


@pytest.fixture
def snapshotting_monitor(live_setup, settings):
    """A leading monitor that reads an exact snapshot on every tick (a scheduler count changes
    without an event, so only a snapshot sees it), with the queue there from the start."""
    make_queue(live_setup, "orders")
    settings.QUEUEWATCH_RECONCILE_MS = 200
    with monitor_thread(tick=0.3, name="columns-monitor") as monitor:
        yield monitor


@pytest.mark.asyncio
async def test_the_column_updates_live_when_its_value_changes(
    schedulers_column, live_setup, snapshotting_monitor, client, user
):
    monitor = snapshotting_monitor
    await sync_to_async(wait_for)(lambda: ORDERS in monitor.states and monitor.states[ORDERS].signals is not None)
    headers = await sync_to_async(session_headers)(client, user)
    comm = WebsocketCommunicator(application, "/ws/overview/", headers=headers)
    assert (await comm.connect(timeout=5))[0]
    # As the page does: the socket names the rows the page shows; the monitor renders them.
    await comm.send_to(text_data=json.dumps({"view": await sync_to_async(overview_view)(client)}))
    await receive_until(comm, lambda h: '<td class="num schedulers">0</td>' in (row_of(h, ORDERS) or ""))

    await sync_to_async(add_scheduler)(live_setup, "orders", "nightly")

    # Nothing else on the row changed: it is re-rendered because the column's value did.
    await receive_until(comm, lambda h: '<td class="num schedulers">1</td>' in (row_of(h, ORDERS) or ""))
    await comm.disconnect()
