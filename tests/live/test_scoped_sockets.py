"""Websockets of a user who sees only some queues (``QueueGrant``): the monitor renders every
fragment once for everyone, and the socket keeps what is theirs — overview rows of their queues
(also inside one batched message, and for a queue created after they connected), the
firing-alerts banner of their own alerts — and a page socket of another team's queue is closed."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.utils import timezone

from dashboard.accounts.models import QueueGrant
from dashboard.alerts.engine import firing_summary
from dashboard.alerts.models import Alert, AlertRule
from dashboard.asgi import application
from dashboard.core import dash_redis
from dashboard.live import channels as live
from dashboard.live import fragments
from queues.keys import QueueRef
from tests.support.live import session_headers
from tests.support.waiting import receive_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

A1, A2, B1 = (QueueRef("default", "bull", n) for n in ("tenant-a-orders", "tenant-a-mail", "tenant-b-orders"))


def row(queue: QueueRef, text: str) -> tuple[str, str]:
    return live.row_id(queue), f'<tr id="{live.row_id(queue)}"><td>{queue.name} {text}</td></tr>'


@sync_to_async
def scoped_user(django_user_model):
    user = django_user_model.objects.create_user("alice", password="pw")
    QueueGrant.objects.create(user=user, role="operator", queue_glob="tenant-a-*")
    return user


@sync_to_async
def publish_queues(queues):
    dash_redis.publish_queue_list(dash_redis.dashboard_redis(), "default", list(queues))


async def connect(path, headers):
    comm = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await comm.connect(timeout=5)
    assert connected
    return comm


async def test_a_scoped_overview_socket_relays_only_rows_of_the_users_queues(live_setup, client, django_user_model):
    user = await scoped_user(django_user_model)
    await publish_queues([A1, B1])
    publisher = await sync_to_async(live.Publisher)(dash_redis.dashboard_redis())
    for queue in (A1, B1):
        await sync_to_async(publisher.publish)(live.OVERVIEW, *row(queue, "v1"))
    await sync_to_async(publisher.drain)()
    headers = await sync_to_async(session_headers)(client, user)
    comm = await connect("/ws/overview/", headers)
    seen = [await receive_until(comm, lambda h: "tenant-a-orders v1" in h)]
    # One batched message with a row of each queue, and one of a queue created since they connected.
    await publish_queues([A1, A2, B1])
    for queue in (A1, B1, A2):
        await sync_to_async(publisher.publish)(live.OVERVIEW, *row(queue, "v2"))
    seen.append(await receive_until(comm, lambda h: "tenant-a-orders v2" in h))
    if "tenant-a-mail v2" not in seen[-1]:
        seen.append(await receive_until(comm, lambda h: "tenant-a-mail v2" in h))
    assert await comm.receive_nothing(timeout=0.5)
    assert not any("tenant-b" in html for html in seen), seen
    assert "tenant-a-mail v2" in seen[-1]
    await comm.disconnect()

    # Someone with a global role gets every row, as before.
    everyone = await sync_to_async(django_user_model.objects.create_user)("bob", password="pw")
    comm = await connect("/ws/overview/", await sync_to_async(session_headers)(client, everyone))
    await receive_until(comm, lambda h: "tenant-b-orders v2" in h)
    await comm.disconnect()


async def test_a_scoped_page_socket_of_another_teams_queue_is_closed(live_setup, client, django_user_model):
    user = await scoped_user(django_user_model)
    publisher = await sync_to_async(live.Publisher)(dash_redis.dashboard_redis())
    for queue in (A1, B1):
        await sync_to_async(publisher.publish)(
            live.queue_group(queue), live.queue_live_id(queue), f"<p>{queue.name}</p>"
        )
    headers = await sync_to_async(session_headers)(client, user)
    comm = await connect("/ws/queue/default/bull/tenant-b-orders/", headers)
    assert await comm.receive_output(timeout=5) == {"type": "websocket.close", "code": 4404}
    comm = await connect("/ws/queue/default/bull/tenant-b-orders/jobs/1", headers)
    assert await comm.receive_output(timeout=5) == {"type": "websocket.close", "code": 4404}
    comm = await connect("/ws/queue/default/bull/tenant-a-orders/", headers)
    assert await receive_until(comm, lambda h: "tenant-a-orders" in h) == "<p>tenant-a-orders</p>"
    await comm.disconnect()


@sync_to_async
def fire_on(queue: QueueRef, rule_name: str, severity: str = "warning") -> None:
    rule = AlertRule.objects.create(name=rule_name, kind="backlog", threshold=1, severity=severity)
    now = timezone.now()
    Alert.objects.create(
        rule=rule,
        fingerprint=f"{rule.pk}",
        connection=queue.connection,
        prefix=queue.prefix,
        queue=queue.name,
        state=Alert.FIRING,
        pending_since=now,
        started_at=now,
    )


async def test_a_scoped_socket_gets_a_firing_banner_of_its_own_alerts(live_setup, client, django_user_model):
    user = await scoped_user(django_user_model)
    await fire_on(A1, "rule on a")
    await fire_on(B1, "rule on b", severity="critical")
    publisher = await sync_to_async(live.Publisher)(dash_redis.dashboard_redis())
    banner = await sync_to_async(lambda: fragments.firing_alerts(firing_summary()))()
    assert "2 firing" in banner[1] and "worst critical" in banner[1]  # the shared banner counts every team's
    await sync_to_async(publisher.publish)(live.ALL, *banner)
    comm = await connect("/ws/all/", await sync_to_async(session_headers)(client, user))
    html = await receive_until(comm, lambda h: 'id="firing-alerts"' in h)
    assert "1 firing" in html and "worst warning" in html and "2 firing" not in html and "critical" not in html
    await comm.disconnect()


@sync_to_async
def move_grant_to_team_b(user) -> None:
    grant = QueueGrant.objects.get(user=user)
    grant.queue_glob = "tenant-b-*"
    grant.save()


@sync_to_async
def make_operator(user) -> None:
    from django.contrib.auth.models import Group

    user.groups.add(Group.objects.get_or_create(name="operator")[0])


async def test_a_changed_grant_makes_its_users_open_sockets_connect_again_and_be_refused(
    live_setup, client, django_user_model
):
    user = await scoped_user(django_user_model)
    publisher = await sync_to_async(live.Publisher)(dash_redis.dashboard_redis())
    await sync_to_async(publisher.publish)(live.queue_group(A1), live.queue_live_id(A1), "<p>tenant-a-orders</p>")
    headers = await sync_to_async(session_headers)(client, user)
    comm = await connect("/ws/queue/default/bull/tenant-a-orders/", headers)
    await receive_until(comm, lambda h: "tenant-a-orders" in h)
    await move_grant_to_team_b(user)
    # Closed with "service restart": the page's websocket extension connects again at once.
    assert await comm.receive_output(timeout=5) == {"type": "websocket.close", "code": 1012}
    comm = await connect("/ws/queue/default/bull/tenant-a-orders/", headers)
    assert await comm.receive_output(timeout=5) == {"type": "websocket.close", "code": 4404}


async def test_a_role_given_reaches_an_open_job_page_socket_which_then_gets_the_operators_group(
    live_setup, client, django_user_model
):
    viewer = await sync_to_async(django_user_model.objects.create_user)("vera", password="pw")
    headers = await sync_to_async(session_headers)(client, viewer)
    comm = await connect("/ws/queue/default/bull/tenant-b-orders/jobs/7", headers)
    assert await comm.receive_nothing(timeout=0.3)
    await make_operator(viewer)
    assert await comm.receive_output(timeout=5) == {"type": "websocket.close", "code": 1012}
    comm = await connect("/ws/queue/default/bull/tenant-b-orders/jobs/7", headers)
    publisher = await sync_to_async(live.Publisher)(dash_redis.dashboard_redis())
    await sync_to_async(publisher.publish)(live.job_operators_group(B1, "7"), "job-7-live", "<p>with actions</p>")
    assert await receive_until(comm, lambda h: "with actions" in h) == "<p>with actions</p>"
    await comm.disconnect()


@sync_to_async
def member_of_team_a(django_user_model):
    from django.contrib.auth.models import Group

    team = Group.objects.create(name="team-a")
    user = django_user_model.objects.create_user("gina", password="pw")
    user.groups.add(team)
    QueueGrant.objects.create(group=team, role="viewer", queue_glob="tenant-a-*")
    return user, team


@sync_to_async
def delete_group_grants(team) -> None:
    for grant in QueueGrant.objects.filter(group=team):
        grant.delete()


async def test_a_group_grant_deleted_reaches_the_open_sockets_of_its_members(live_setup, client, django_user_model):
    user, team = await member_of_team_a(django_user_model)
    comm = await connect("/ws/queue/default/bull/tenant-a-orders/", await sync_to_async(session_headers)(client, user))
    assert await comm.receive_nothing(timeout=0.3)
    await delete_group_grants(team)
    assert await comm.receive_output(timeout=5) == {"type": "websocket.close", "code": 1012}
