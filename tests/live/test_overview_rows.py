"""The overview's rows are rendered only where an overview page shows them
(``dashboard.live.overview_rows``): a socket names the page's view, the monitor renders the
rows of viewed queues and no others, a row nobody views any more leaves the reconnect cache, a
view is filtered by the user's grants, and queues that appear are announced to every page."""
# Literal `bull:` keys kept: a monitor discovers every queue of its (whole, leased) database.

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from dashboard.accounts.models import QueueGrant
from dashboard.asgi import application
from dashboard.core import dash_redis
from dashboard.live import channels as live
from dashboard.live import fragments, overview_rows
from queues.keys import QueueRef
from tests.support.live import monitor_thread, overview_view, session_headers
from tests.support.waiting import async_wait_for, receive_until, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

QUEUES = [QueueRef("default", "bull", f"q{i:02d}") for i in range(12)]


def add_waiting(client, queue: QueueRef, n: int = 1) -> None:
    """Jobs in ``wait`` with BullMQ's ``waiting`` events, so the monitor's live counts follow."""
    for _ in range(n):
        job_id = str(client.incr(f"bull:{queue.name}:id"))
        client.hset(f"bull:{queue.name}:{job_id}", mapping={"name": "job", "data": "{}", "timestamp": 1})
        client.lpush(f"bull:{queue.name}:wait", job_id)
        client.xadd(f"bull:{queue.name}:events", {"event": "waiting", "jobId": job_id})


@pytest.fixture
def many_queues(live_setup, settings):
    for q in QUEUES:
        live_setup.hset(f"bull:{q.name}:meta", "opts.maxLenEvents", 10000)
    settings.QUEUEWATCH_RECONCILE_MS = 300
    with monitor_thread(tick=0.3, name="rows-monitor") as monitor:
        wait_for(lambda: all(q in monitor.states and monitor.states[q].signals is not None for q in QUEUES))
        yield live_setup, monitor


@pytest.fixture
def rendered_rows(monkeypatch):
    """The queues whose overview row the monitor renders, in order."""
    seen: list[QueueRef] = []
    real = fragments.overview_row

    def counting(sig):
        seen.append(sig.snapshot.queue)
        return real(sig)

    monkeypatch.setattr(fragments, "overview_row", counting)
    return seen


async def open_overview(client, user, query: str = ""):
    headers = await sync_to_async(session_headers)(client, user)
    comm = WebsocketCommunicator(application, "/ws/overview/", headers=headers)
    assert (await comm.connect(timeout=5))[0]
    view = await sync_to_async(overview_view)(client, query)
    await comm.send_to(text_data=json.dumps({"view": view}))
    return comm


@pytest.mark.asyncio
async def test_only_the_rows_a_page_shows_are_rendered_and_sent(many_queues, rendered_rows, client, user):
    redis, monitor = many_queues
    rendered_rows.clear()
    comm = await open_overview(client, user, "?q=q0")  # q00 … q09: the page shows ten queues
    shown, hidden = QUEUES[:10], QUEUES[10:]
    # A page that starts showing rows gets them rendered at once.
    await async_wait_for(lambda: set(rendered_rows) >= set(shown))
    assert not set(rendered_rows) & set(hidden)
    rendered_rows.clear()
    for q in (shown[3], hidden[0], hidden[1]):
        await sync_to_async(add_waiting)(redis, q, 2)
    await async_wait_for(
        lambda: (
            all(monitor.states[q].signals.snapshot.counts["waiting"] == 2 for q in (shown[3], *hidden))
            and shown[3] in rendered_rows
        )
    )
    await receive_until(comm, lambda h: live.row_id(shown[3]) in h)
    # The hidden queues changed too: never rendered. (A shown row may render again without a
    # change of its own: a minute passing moves its rates.)
    assert shown[3] in rendered_rows and not set(rendered_rows) & set(hidden), rendered_rows
    await comm.disconnect()


@pytest.mark.asyncio
async def test_a_row_nobody_views_leaves_the_reconnect_cache(many_queues, client, user):
    redis, monitor = many_queues
    comm = await open_overview(client, user)
    q = QUEUES[0]
    await async_wait_for(lambda: q in dash_redis.watched_queues(redis))
    await sync_to_async(add_waiting)(redis, q)
    await receive_until(comm, lambda h: live.row_id(q) in h)
    cached = await sync_to_async(dash_redis.cached_fragments)(redis, live.OVERVIEW)
    assert any(live.row_id(q) in html for html in cached)
    await comm.disconnect()  # the tab closes: nothing shows the row any more
    await async_wait_for(lambda: q not in dash_redis.watched_queues(redis))
    await sync_to_async(add_waiting)(redis, q)  # it changes while nobody looks
    await async_wait_for(
        lambda: not any(live.row_id(q) in h for h in dash_redis.cached_fragments(redis, live.OVERVIEW))
    )


@pytest.mark.asyncio
async def test_a_view_is_filtered_by_the_users_grants(live_setup, client, django_user_model):
    user = await sync_to_async(django_user_model.objects.create_user)("tess", password="pw")
    await sync_to_async(QueueGrant.objects.create)(user=user, role="viewer", queue_glob="tenant-a-*")
    mine, theirs = QueueRef("default", "bull", "tenant-a-x"), QueueRef("default", "bull", "tenant-b-x")
    name = await sync_to_async(overview_rows.remember)([mine, theirs])  # as if their page showed both
    assert await sync_to_async(overview_rows.rows_of)(live_setup, name, user) == [mine]
    assert overview_rows.view_named(json.dumps({"view": name})) == name
    for hostile in ("{}", "[]", '{"view": 7}', '{"view": "../x"}', "x" * 5000, json.dumps({"view": "a" * 32 + "b"})):
        assert overview_rows.view_named(hostile) is None


@pytest.mark.asyncio
async def test_queues_that_appear_are_announced_to_every_page(many_queues, client, user):
    redis, monitor = many_queues
    headers = await sync_to_async(session_headers)(client, user)
    job_page = WebsocketCommunicator(application, "/ws/queue/default/bull/q00/jobs/1", headers=headers)
    overview = WebsocketCommunicator(application, "/ws/overview/", headers=headers)
    for comm in (job_page, overview):
        assert (await comm.connect(timeout=5))[0]
    await sync_to_async(redis.hset)("bull:brand-new:meta", "opts.maxLenEvents", 10000)
    for comm in (job_page, overview):
        await receive_until(comm, lambda h: 'id="queues-added"' in h, timeout=30)
        await comm.disconnect()
    # Not kept for reconnects: a page loaded later knows the queue already.
    cached = await sync_to_async(dash_redis.cached_fragments)(redis, live.ALL)
    assert not any("queues-added" in html for html in cached)
